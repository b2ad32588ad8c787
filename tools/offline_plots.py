"""Write .dvc/plots/offline.html, the page `dvc plots show` and `dvc plots diff` fill, with Vega's
scripts inside it, so that the plots draw without a network (DVC's own page loads them from a CDN).

    npm pack vega@5.20.2 vega-lite@5.2.0 vega-embed@6.18.2     # the versions DVC's page names
    python -m tools.offline_plots vega-5.20.2.tgz vega-lite-5.2.0.tgz vega-embed-6.18.2.tgz

.dvc/config names the page (`plots.html_template`). Each script is the package's own minified
build, unchanged (BSD-3-Clause, copyright the University of Washington Interactive Data Lab); the
page records each tarball's name and sha256.
"""
import hashlib
import sys
import tarfile
from pathlib import Path

from replication.io import atomic_path

PAGE = Path(".dvc/plots/offline.html")
BUILDS = {"vega": "package/build/vega.min.js", "vega-lite": "package/build/vega-lite.min.js",
          "vega-embed": "package/build/vega-embed.min.js"}


def script_of(tarball):
    """(a provenance line, the package's minified build) from an npm tarball."""
    name = Path(tarball).name.rsplit("-", 1)[0]
    with tarfile.open(tarball) as archive:
        code = archive.extractfile(BUILDS[name]).read().decode()
    digest = hashlib.sha256(Path(tarball).read_bytes()).hexdigest()
    return f"{Path(tarball).name} sha256 {digest}, {BUILDS[name]}", code


def page(tarballs):
    """DVC's page (dvc_render's PAGE_HTML) with the scripts inline instead of its {scripts} links."""
    sources, scripts = zip(*(script_of(t) for t in tarballs))
    inline = "\n".join("<script>" + code.replace("</script", "<\\/script") + "</script>" for code in scripts)
    provenance = "\n         ".join(sources)
    return f"""<!DOCTYPE html>
<html>
<head>
    <!-- written by tools/offline_plots.py from the npm packages (BSD-3-Clause):
         {provenance} -->
    {{refresh_tag}}
    <title>DVC Plot</title>
    <style>
        table {{
            border-spacing: 15px;
        }}
    </style>
    {inline}
</head>
<body>
    {{plot_divs}}
</body>
</html>
"""


def main(argv):
    if sorted(Path(t).name.rsplit("-", 1)[0] for t in argv) != sorted(BUILDS):
        print(f"usage: python -m tools.offline_plots {' '.join(f'{n}-VERSION.tgz' for n in BUILDS)}", file=sys.stderr)
        return 2
    with atomic_path(PAGE) as tmp:
        tmp.write_text(page(sorted(argv, key=lambda t: list(BUILDS).index(Path(t).name.rsplit("-", 1)[0]))))
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
