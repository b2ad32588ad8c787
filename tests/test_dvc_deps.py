"""Every stage's deps cover every project module its script imports, directly or transitively, so that
`dvc repro` reruns a stage whenever code it runs changes. Checked against the imports themselves
(read with ast), not a hand-kept list. The behaviour under DVC (edit a module, the stage is stale)
is checked in tests/test_pipeline_checks.py on a smoke run."""
import ast
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_ROOTS = [ROOT / "src", ROOT]      # contrastive/ and replication/ under src/; tools/ (the pilots) at the root
EXECUTED_BY = {"experiments/render_report.py": ["analysis/report.py"]}   # a notebook the script runs


def module_file(name):
    """The project file of a dotted module name, or None for a module from elsewhere."""
    for base in PACKAGE_ROOTS:
        path = base.joinpath(*name.split("."))
        for candidate in (path.with_suffix(".py"), path / "__init__.py"):
            if candidate.is_file() and (base / name.split(".")[0]).is_dir():
                return candidate
    return None


def package_of(path):
    base = next(b for b in PACKAGE_ROOTS if b in path.parents)
    return ".".join(path.relative_to(base).parts[:-1])


def imported_names(path):
    """Dotted names a file imports; relative imports made absolute; `from pkg import sub` gives pkg.sub too."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = package_of(path).split(".")
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


def closure(entry):
    """Every project file that running `entry` executes: the entry, its imports and theirs, with the
    packages' __init__ files on the way."""
    seen, todo = set(), [entry]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in imported_names(path):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):          # importing a.b.c runs a/__init__, a/b/__init__, ...
                found = module_file(".".join(parts[:i]))
                if found and found not in seen:
                    todo.append(found)
    return seen


def only_a_docstring(path):
    body = ast.parse(path.read_text()).body
    return path.name == "__init__.py" and all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
                                              for n in body)


def stages():
    """(stage name, its script, its deps) for every stage, foreach stages once per template."""
    for name, stage in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].items():
        stage = stage.get("do", stage)
        script = next(w for w in stage["cmd"].split() if w.endswith(".py"))
        yield name, script, stage["deps"]


def covered(path, deps):
    relative = path.relative_to(ROOT)
    return any(relative == Path(d) or Path(d) in relative.parents for d in deps)


@pytest.mark.parametrize("name,script,deps", list(stages()), ids=[s[0] for s in stages()])
def test_stage_deps_cover_every_module_it_imports(name, script, deps):
    executed = set()
    for entry in [script, *EXECUTED_BY.get(script, [])]:
        executed |= closure(ROOT / entry)
    missing = sorted(str(p.relative_to(ROOT)) for p in executed if not covered(p, deps) and not only_a_docstring(p))
    assert missing == [], f"stage {name} runs these files but does not depend on them: {missing}"


def test_the_check_sees_transitive_imports():
    """The closure of the training entry point reaches the losses through methods."""
    files = {str(p.relative_to(ROOT)) for p in closure(ROOT / "experiments/pretrain.py")}
    assert {"src/replication/run/train.py", "src/contrastive/methods.py", "src/contrastive/losses.py",
            "src/contrastive/models.py", "src/replication/run/datasets.py"} <= files


def test_a_missing_dependency_is_reported():
    deps = ["experiments/pretrain.py", "src/contrastive"]
    executed = closure(ROOT / "experiments/pretrain.py")
    missing = {str(p.relative_to(ROOT)) for p in executed if not covered(p, deps) and not only_a_docstring(p)}
    assert "src/replication/run/train.py" in missing and "src/contrastive/losses.py" not in missing


def test_training_does_not_depend_on_the_probes():
    """Changing how checkpoints are evaluated must not retrain anything (evaluate@ reruns alone)."""
    deps = dict((name, deps) for name, _, deps in stages())["pretrain"]
    probes = [ROOT / "src/contrastive/evaluate.py", ROOT / "src/replication/run/evaluate.py"]
    assert not any(covered(p, deps) for p in probes)
