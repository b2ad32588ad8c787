"""The registration record (analysis/registration.json): the rules frozen before the full run
that they judge.

Rule: the record holds the registration date, the sha256 of params.yaml and of every module the
judging runs (REGISTERED_CODE), and each claim as registered (its canonical form, amendments left
out). Before judging, the analysis checks the files against it: params or judging code that
differ stop it with one line (restore them, or register again before the run). A claim that
differs from its registered form, or is new, must carry an amendment marked post_registration and
dated after the registration; it is then judged twice, by the current rule and by the frozen one,
and both verdicts are shown. A claim changed without such an amendment stops the analysis.
"""
import datetime
import re
import hashlib
import json
from pathlib import Path

from .io import sha256, write_json

RECORD = Path("analysis/registration.json")
REGISTRY = Path("analysis/claims.yaml")
REGISTERED_CODE = ("params.yaml", "experiments/analyze.py", "src/replication/claims.py",
                   "src/replication/decisions.py", "src/replication/gates.py", "src/replication/judging.py",
                   "src/replication/measure.py", "src/replication/registration.py", "src/replication/registry.py",
                   "src/replication/robustness.py", "src/replication/stats.py", "src/replication/io.py")


class RegistrationError(Exception):
    """Files that differ from the registration without a logged amendment; str(e) is one line."""


def _frozen(claim):
    """A claim as registered: its canonical form without its amendments."""
    return {k: v for k, v in claim.items() if k != "amended"}


def _digest(obj):
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def make_record(rules, claims, root=".", date=None):
    """The registration record of the registry and files as they are now."""
    return {"date": date or datetime.date.today().isoformat(),
            "sha256": {path: sha256(Path(root, path)) for path in (str(REGISTRY), *REGISTERED_CODE)},
            "rules": rules, "rules_sha256": _digest(rules),
            "claims": {c["id"]: _frozen(c) for c in claims}}


def register(rules, claims, root="."):
    record = make_record(rules, claims, root)
    write_json(Path(root, RECORD), record)
    return record


def load(root="."):
    """The registration record, or None while the rules are not registered (no record yet)."""
    path = Path(root, RECORD)
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        raise RegistrationError(f"{RECORD}: unreadable; restore it with `git checkout {RECORD}`") from None


def add_to_analysis_deps(dvc_yaml="dvc.yaml"):
    """Make the analyze and report stages depend on the record (from registration on, a changed or
    deleted record reruns or stops them). Returns whether dvc.yaml changed."""
    path = Path(dvc_yaml)
    text = path.read_text()
    changed = False
    for stage in ("analyze", "report"):
        start = text.index(f"\n  {stage}:\n")
        following = re.search(r"\n  [\w@-]+:\n", text[start + 1:])
        end = start + 1 + following.start() if following else len(text)
        deps = text.index("    deps:\n", start)
        if deps > end or f"      - {RECORD}\n" in text[start:end]:
            continue
        anchor = deps + len("    deps:\n")
        text = text[:anchor] + f"      - {RECORD}\n" + text[anchor:]
        changed = True
    if changed:
        path.write_text(text)
    return changed


def check(record, rules, claims, root="."):
    """{claim id: frozen claim} for every claim amended after registration (to be judged by its
    frozen rule as well); RegistrationError when a file or claim differs without a logged amendment."""
    for path in REGISTERED_CODE:
        if sha256(Path(root, path)) != record["sha256"][path]:
            raise RegistrationError(f"{path}: differs from the registration of {record['date']} "
                                    "(analysis/registration.json); restore it, or register again before the run")
    if _digest(rules) != record["rules_sha256"]:
        raise RegistrationError(f"{REGISTRY}: rules differ from the registration of {record['date']}; "
                                "restore them, or register again before the run")
    frozen = {}
    for claim in claims:
        registered = record["claims"].get(claim["id"])
        if registered == _frozen(claim):
            continue
        logged = [a for a in claim.get("amended") or [] if a.get("post_registration") and a["date"] >= record["date"]]
        if not logged:
            raise RegistrationError(f"{REGISTRY}: claim {claim['id']}: differs from its registered form of "
                                    f"{record['date']}; add an `amended:` entry with post_registration: true, "
                                    "or restore it")
        if registered is not None:
            frozen[claim["id"]] = registered
    return frozen
