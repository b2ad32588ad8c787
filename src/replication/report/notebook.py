"""Rendering the report notebook to one self-contained HTML page (no script, no stylesheet or font
from anywhere else; notebook.css is inlined), and the provenance facts it prints. The page's pieces
live beside this module: claims_view (what is said about each claim), page (HTML), figures (SVG
figures), markdown (reports/claims.md), deviations (the setup table), headroom (the design targets)."""
import os
import subprocess
import sys
from pathlib import Path

STYLE = Path(__file__).with_name("notebook.css")      # the page's one stylesheet, inlined


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

    from ..io import atomic_path
    cache = Path.cwd() / ".cache"   # the kernel's runtime files, IPython's profile, matplotlib's fonts
    for variable, folder in (("JUPYTER_RUNTIME_DIR", "jupyter/runtime"), ("JUPYTER_DATA_DIR", "jupyter/data"),
                             ("IPYTHONDIR", "ipython"), ("MPLCONFIGDIR", "matplotlib")):
        os.environ.setdefault(variable, str(cache / folder))
        Path(os.environ[variable]).mkdir(parents=True, exist_ok=True)   # else IPython writes its profile to /tmp
    notebook = jupytext.read(source)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for i, cell in enumerate(notebook.cells):      # nbformat draws random cell ids; the page keeps them
        cell.id = f"cell-{i}"
    NotebookClient(notebook, kernel_name="python3", timeout=600,
                   resources={"metadata": {"path": str(Path.cwd())}}).execute()
    body, _ = HTMLExporter(template_name="basic", exclude_input=True, exclude_input_prompt=True,
                           exclude_output_prompt=True).from_notebook_node(nbformat.from_dict(notebook))
    page = (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>Contrastive learning replication report</title><style>\n{STYLE.read_text()}</style></head>"
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
