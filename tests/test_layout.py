"""One home for every verdict rule: no module outside src/replication/judge/verdicts.py lists
verdicts or fixes a confidence quantile, and the houses (run, judge, report, and cli above them) import
only downwards. Checked on the code itself (ast), so a new module cannot slip past."""
import ast
from pathlib import Path

import pytest

from replication.judge.verdicts import VERDICTS

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / "src" / "replication" / "judge" / "verdicts.py"
SCANNED = ("src/replication", "analysis", "experiments", "tools")
QUANTILES = {0.975, 1.96, 1.959964}              # the 95% level's quantiles, as literals
LEVEL_NAMES = {"level", "alpha", "confidence", "ALPHA", "LEVEL", "CONFIDENCE", "Z95"}


def strings(node):
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def rule_homes(source):
    """(line, what) for every verdict list and every confidence quantile a module defines."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            words = {n.value for n in items if isinstance(n, ast.Constant) and n.value in VERDICTS}
            if len(words) >= 2:
                found.append((node.lineno, f"a list of verdicts ({', '.join(sorted(words))})"))
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal":
            if len(strings(node.slice) & set(VERDICTS)) >= 2:
                found.append((node.lineno, "a Literal of verdicts"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, float) and round(node.value, 6) in QUANTILES:
            found.append((node.lineno, f"the literal {node.value!r}, a confidence quantile"))
        elif isinstance(node, ast.keyword) and node.arg == "level" and isinstance(node.value, ast.Constant):
            found.append((node.lineno, f"level={node.value.value!r}"))
        elif isinstance(node, ast.arguments):
            named = node.posonlyargs + node.args
            defaults = dict(zip([a.arg for a in named][len(named) - len(node.defaults):], node.defaults))
            defaults.update({a.arg: d for a, d in zip(node.kwonlyargs, node.kw_defaults) if d is not None})
            found += [(d.lineno, f"a default {name}={d.value!r}") for name, d in defaults.items()
                      if name in LEVEL_NAMES and isinstance(d, ast.Constant)]
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            found += [(node.lineno, f"{t.id} = {node.value.value!r}") for t in node.targets
                      if isinstance(t, ast.Name) and t.id in LEVEL_NAMES]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "ppf" and \
                node.args and isinstance(node.args[0], ast.Constant):
            found.append((node.lineno, f"a quantile at the fixed level {node.args[0].value!r}"))
    return found


def modules():
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path != HOME:
                yield path


@pytest.mark.parametrize("path", list(modules()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_but_verdicts_py_defines_a_verdict_rule(path):
    found = rule_homes(path.read_text())
    assert not found, f"{path.relative_to(ROOT)}: " + "; ".join(f"line {n}: {what}" for n, what in found) + \
        " (move it to src/replication/judge/verdicts.py and import it from there)"


@pytest.mark.parametrize("source", [
    'ORDER = ("reproduced", "contradicted", "inconclusive")',
    'COLOUR = {"reproduced": "green", "mismatch": "red"}',
    'Verdict = Literal["reproduced", "not tested"]',
    'half = 1.96 * se',
    'lo, hi = t_interval(x, level=0.9)',
    'q = stats.t.ppf(0.99, n - 1)',
    'def t_interval(values, level=0.95):\n    pass',
    'ALPHA = 0.05',
])
def test_the_check_finds_a_rule_defined_elsewhere(source):
    assert rule_homes(source)


def test_the_check_passes_a_single_verdict_and_a_level_from_the_rules():
    assert not rule_homes('if verdict == "reproduced":\n    lo = t_interval(x, verdicts.level(rules))')


HOUSES = {"run": 0, "judge": 1, "report": 2, "cli": 3}     # a house may import from its own or a lower one


def test_the_houses_import_downwards_only():
    """run/ knows nothing of judging or reporting; judge/ nothing of reporting; no house of the command
    line (cli/, which may import from any)."""
    for house, floor in HOUSES.items():
        for path in (ROOT / "src" / "replication" / house).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module:
                    target = node.module.split(".")[0] if node.level == 2 else \
                        node.module.split(".")[1] if node.module.startswith("replication.") else None
                    if target in HOUSES:
                        assert HOUSES[target] <= floor, f"{path.relative_to(ROOT)} imports {house} -> {target}"


def test_the_judged_code_is_all_the_judging_package_imports():
    """The registration freezes judge/ and the shared modules it imports: no other project module
    can change a verdict unnoticed."""
    from replication.judge.registration import SHARED
    shared = {Path(p).stem for p in SHARED}
    for path in (ROOT / "src" / "replication" / "judge").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 2:
                assert (node.module or "").split(".")[0] in shared, f"{path.name} imports ..{node.module}"
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("replication"):
                raise AssertionError(f"{path.name} imports {node.module}: import within the package, relatively")


def project_imports(path):
    """The project modules (dotted, under replication) a module imports anywhere in its code, inside a
    function too: an import hidden in a function still ties the two modules together."""
    package = ".".join(path.relative_to(ROOT / "src").with_suffix("").parts)
    if path.name == "__init__.py":
        package += ".__init__"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[:-node.level] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names = [module, *(f"{module}.{a.name}" for a in node.names)]     # a module, or a name in one
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n for n in names if n.startswith("replication.")}
    return found


def import_cycle(graph):
    """One cycle of module names in {module: imported modules}, or None."""
    done, path = set(), []

    def visit(module):
        if module in path:
            return path[path.index(module):] + [module]
        if module in done:
            return None
        path.append(module)
        for target in sorted(graph.get(module, ())):
            cycle = visit(target)
            if cycle:
                return cycle
        path.pop()
        done.add(module)
        return None
    return next((c for c in map(visit, sorted(graph)) if c), None)


def test_no_module_imports_itself_through_others():
    """Modules, not only the houses, form no import cycle (an import inside a function counts)."""
    modules = {".".join(p.relative_to(ROOT / "src").with_suffix("").parts).removesuffix(".__init__"): p
               for p in (ROOT / "src" / "replication").rglob("*.py")}
    graph = {name: {m for m in project_imports(path) if m in modules and m != name} for name, path in modules.items()}
    cycle = import_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_check_finds_a_cycle_and_passes_a_tree():
    assert import_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert import_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


# ---------------------------------------------------------------- one reader of the results (issue 71)

JUDGE = ROOT / "src" / "replication" / "judge"
READERS = ("results.py", "registration.py")      # the one reader; the registration's repository (git, code hashes)
DISK = {"open", "read_text", "read_bytes", "read_json", "load_yaml", "read_record", "loads", "load", "glob", "iglob",
        "rglob", "walk", "scandir", "listdir", "exists", "is_file", "is_dir", "check_inputs"}
OTHER_FILES = {          # what else the judging reads or writes, none of it a result file
    ("dvc_files.py", "write_dvc_files", "root"),            # writes reports/metrics.json and reports/plots/
    ("dvc_files.py", "_write_csv", "open"), ("dvc_files.py", "_write_folder", "Path(folder).glob"),
    ("judge.py", "judge_registry", "registration.load"),    # the registration record
    ("record.py", "read_claims", "json.loads"), ("record.py", "read_claims", "Path(path).read_text"),   # claims.json
    ("registry.py", "_read", "load_yaml"), ("registry.py", "_read", "Path(path).read_text"),          # claims.yaml
    ("registry.py", "_read_registry", "shared_path.exists")}


def disk_access(name, source):
    """(module, function, what) for every function of a module with a parameter named root and every
    call in one that may read the disk, but a look-up in the snapshot (results.<...>, Results.load)."""
    found = set()
    for function in (n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.Lambda))):
        args = function.args
        if "root" in [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]:
            found.add((name, function.name, "root"))
        for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
            called = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
            on = ast.unparse(call.func).split(".")[0]
            if called in DISK and on not in ("results", "Results"):
                found.add((name, getattr(function, "name", "lambda"), ast.unparse(call.func)))
    return found


def test_the_judging_takes_the_results_and_reads_no_folder():
    """Every judging function takes the snapshot (`results`) and a claim: only results.py (Results.load,
    check_inputs) and registration.py take a folder (`root`) or read the disk; the rest reads other
    files than results only where OTHER_FILES says."""
    found = set().union(*(disk_access(p.name, p.read_text()) for p in JUDGE.glob("*.py") if p.name not in READERS))
    assert found == OTHER_FILES, sorted(found ^ OTHER_FILES)


def test_the_disk_check_finds_a_folder_and_a_read_and_passes_a_look_up():
    source = ("def a(spec, root):\n    return 1\n"
              "def b(spec, results):\n    return json.loads(Path(spec).read_text())\n"
              "def c(spec, results):\n    return results.record(spec['file']), results.glob('x/*.json')\n")
    assert disk_access("m.py", source) == {("m.py", "a", "root"), ("m.py", "b", "json.loads"),
                                           ("m.py", "b", "Path(spec).read_text")}
