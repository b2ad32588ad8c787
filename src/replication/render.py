"""Rendering the report notebook to one self-contained HTML page (no script, no stylesheet or font
from anywhere else), and the provenance facts it prints. The page's pieces live beside this module:
render_claims (what is said about each claim), render_html (HTML), render_figures (SVG figures),
render_markdown (reports/claims.md)."""
import os
import subprocess
import sys
from pathlib import Path

STYLE = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 1080px; margin: 0 0 2em 225px;
       padding: 0 1.2em; color: #222; line-height: 1.4; font-size: 15px; }
nav.toc { position: fixed; top: 0; left: 0; width: 205px; height: 100vh; overflow-y: auto; padding: 0.8em 0.6em;
          box-sizing: border-box; background: #f6f6f6; border-right: 1px solid #ddd; font-size: 0.85em; }
nav.toc ul { padding-left: 1em; margin: 0.3em 0; } nav.toc li { margin: 0.15em 0; }
@media (max-width: 1000px) { body { margin-left: auto; } nav.toc { position: static; width: auto; height: auto; } }
@media print { body { margin-left: 0; } nav.toc { display: none; } }
h1 { font-size: 1.6em; margin: 0.5em 0 0.2em; } h2 { margin: 1.3em 0 0.4em; font-size: 1.3em; }
h3 { font-size: 1.05em; margin: 0.9em 0 0.3em; }
ol.findings li { margin: 0.25em 0; } p.rule { font-size: 0.8em; color: #555; margin: 0.2em 0; }
p.trust, p.counts { margin: 0.5em 0; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.86em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.45em; vertical-align: top; text-align: left; }
th { background: #f2f2f2; }
.v { white-space: nowrap; font-weight: 600; padding: 0 0.25em; border-radius: 3px; }
.v.ok { color: #00684a; background: #e3f4ee; } .v.bad { color: #a33b00; background: #fbe7dc; }
.v.null { color: #005287; background: #e0eef8; } .v.open { color: #7a5200; background: #fdf1d9; }
.v.grey { color: #555; background: #eeeeee; }
td.same { background: #f0f0f0; } table.crosstab td { text-align: center; }
table.crosstab tr:first-child th .v { white-space: normal; display: inline-block; max-width: 7.5em; }
dl.legend { display: grid; grid-template-columns: max-content 1fr; gap: 0.1em 0.8em; font-size: 0.86em; margin: 0.3em 0; }
dl.legend dt { font-weight: 600; } dl.legend dd { margin: 0; }
details.claim { border-top: 1px solid #e3e3e3; padding: 0.15em 0; font-size: 0.92em; }
details.claim > summary { cursor: pointer; } details.claim table.detail th { width: 8em; }
details.amend { margin: 0.2em 0 0.4em 1em; } details.amend ul { margin: 0.2em 0; }
details.deviations > summary { cursor: pointer; margin: 0.4em 0; }
p.claims-head { font-weight: 600; margin-top: 1em; }
figure { margin: 0.8em 0; } figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.85em; color: #444; }
pre { background: #f7f7f7; padding: 0.5em; overflow-x: auto; font-size: 0.85em; }
.jp-InputArea, .jp-InputPrompt, .jp-OutputPrompt { display: none; }
"""


def printout(r):
    """A tiny-SimCLR run's result in the article's printed format (three decimals)."""
    return (f"seed {r['seed']}: NT-Xent after 300 steps {r['loss']:.3f}\n"
            f"  random encoder: linear probe {r['random']['linear']:.3f}, 5-NN {r['random']['knn']:.3f}\n"
            f"  simclr encoder: linear probe {r['simclr']['linear']:.3f}, 5-NN {r['simclr']['knn']:.3f}")


def render_notebook(source, output):
    """Execute a jupytext percent-format notebook from the repository root and write it as one
    self-contained HTML page (code hidden, images inline, no external scripts or styles)."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    from .io import atomic_path
    cache = Path.cwd() / ".cache"   # the kernel's runtime files, IPython's profile, matplotlib's fonts
    for variable, folder in (("JUPYTER_RUNTIME_DIR", "jupyter/runtime"), ("JUPYTER_DATA_DIR", "jupyter/data"),
                             ("IPYTHONDIR", "ipython"), ("MPLCONFIGDIR", "matplotlib")):
        os.environ.setdefault(variable, str(cache / folder))
    notebook = jupytext.read(source)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for i, cell in enumerate(notebook.cells):      # nbformat draws random cell ids; the page keeps them
        cell.id = f"cell-{i}"
    NotebookClient(notebook, kernel_name="python3", timeout=600,
                   resources={"metadata": {"path": str(Path.cwd())}}).execute()
    body, _ = HTMLExporter(template_name="basic", exclude_input=True, exclude_input_prompt=True,
                           exclude_output_prompt=True).from_notebook_node(nbformat.from_dict(notebook))
    page = (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>Contrastive learning replication report</title><style>{STYLE}</style></head>"
            f"<body>{body}</body></html>\n")
    with atomic_path(output) as tmp:
        tmp.write_text(page)


def git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def git_last_commit(path):
    """(commit, date) of the last commit that changed `path`: the commit that added its current
    content; ("not committed", None) when no commit holds its current content, ("unknown", None)
    without git or outside a repository."""
    git = lambda *args, check=True: subprocess.run(["git", *args], capture_output=True, text=True,
                                                   check=check).stdout
    try:
        changed = git("status", "--porcelain", "--", str(path)).strip()
        last = git("log", "-1", "--format=%H %cs", "--", str(path), check=False).split()   # fails before a first commit
    except (OSError, subprocess.CalledProcessError):
        return "unknown", None
    return (last[0], last[1]) if len(last) == 2 and not changed else ("not committed", None)


def git_dirty():
    """Whether the code or configuration differs from the commit (the page would not match it); the
    pipeline's own outputs, rewritten while it runs, do not count."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "src", "experiments",
                              "analysis", "tools", "params.yaml", "dvc.yaml"], capture_output=True,
                             text=True, check=True).stdout
        return bool(out.strip())
    except (OSError, subprocess.CalledProcessError):
        return False


def versions():
    """Versions of Python and of every library a figure on the page depends on."""
    from importlib.metadata import version
    libraries = ("torch", "torchvision", "numpy", "scipy", "pandas", "matplotlib", "seaborn", "scikit-learn",
                 "pydantic", "dvc", "jupytext", "nbconvert")
    return {"python": sys.version.split()[0], **{name: version(name) for name in libraries}}
