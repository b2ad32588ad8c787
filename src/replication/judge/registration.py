"""The registration records (analysis/registration.json, then analysis/registration_<n>.json for
registered run n): the rules frozen before each full run that they judge. The latest record governs.

Rule: a record holds the registration date, the sha256 of params.yaml and of every module the
judging runs (judged_code: params.yaml, the analyze entry point, src/replication/judge/ and the
shared io.py and schema.py it imports), and
each claim as registered (its canonical form, amendments left out); from run 2 on also its run
number and the previous record (its path and date, the commit holding that run's judged results and
the sha256 of its reports/claims.json). Before judging, the analysis
checks the files against the latest record: params or judging code that differ, or a judging module
added or removed, stop it with one line (restore them, or register again before the run).
A code amendment (analysis/registration_amendments.json, written by `python -m tools.register
--code-moved`) records judging code that moved without changing a verdict: it is written only when
the moved code judges the committed results to a byte-identical reports/claims.json, and from then
on the files are checked against its hashes instead of the record's; only the amendments of the
latest record (their `registration` is its date) count. A claim that
differs from its registered form, or is new, must carry an amendment marked post_registration with
`registration:` the latest record's run; it is then judged twice, by the current rule and by the
frozen one, and both verdicts are shown. A claim changed without such an amendment stops the analysis.

In a git work tree a record counts only as committed (check_anchored): every record and the
amendments must match their committed versions, the latest record's amendments are only ever
appended (git's history of the file), a record git holds must exist, and the latest
record's commit must precede every committed result it judges (results/pretrain, results/evaluate).
A record written or edited after the results it judges is refused.
"""
import datetime
import hashlib
import json
import re
import subprocess
from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationError

from ..io import atomic_path, is_stage_two, sha256, write_json
from ..schema import Strict, one_line
from .measure import in_path_form, producing_stage
from .registry import Date, Verdict, declared_gates, rules_path

RECORD = Path("analysis/registration.json")          # the first record; run n's: path_of(n)
REGISTRY = Path("analysis/claims.yaml")
CODE_AMENDMENTS = Path("analysis/registration_amendments.json")
JUDGE = Path("src/replication/judge")
RESULTS = ("results/pretrain", "results/evaluate")    # the records a registered run writes and its rules judge


SHARED = ("src/replication/io.py", "src/replication/schema.py")     # the modules outside judge/ it imports


def judged_code(root="."):
    """The files whose sha256 a registration freezes: params.yaml, the analyze stage's entry point,
    every module of the judging package and the shared modules it imports."""
    modules = sorted(str(p.relative_to(root)) for p in Path(root, JUDGE).glob("*.py"))
    return ("params.yaml", "experiments/analyze.py", *modules, *SHARED)


class RegistrationError(Exception):
    """Files that differ from the registration without a logged amendment; str(e) is one line."""


def _frozen(claim):
    """A claim as registered: its canonical form without its amendments."""
    return {k: v for k, v in claim.items() if k != "amended"}


def _as_declared(claim):
    """A registered claim with what its registered code read into it spelled out: a paired claim's
    reference and outcome arms (registry.declared_gates). Declaring them as they were read is no
    change of the claim."""
    if claim.get("kind") != "paired":
        return claim
    reference, outcome = declared_gates(claim)
    return {**claim, "reference": reference, "outcome": outcome}


def _digest(obj):
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def make_record(rules, claims, root=".", date=None):
    """The registration record of the registry and files as they are now."""
    return {"date": date or datetime.date.today().isoformat(),
            "sha256": {path: sha256(Path(root, path)) for path in (str(REGISTRY), *judged_code(root))},
            "rules": rules, "rules_sha256": _digest(rules),
            "claims": {c["id"]: _frozen(c) for c in claims}}


def _run(path):
    """The run number of a record path (registration.json: 1), or None for another file."""
    found = re.fullmatch(r"registration(?:_(\d+))?\.json", Path(path).name)
    return found and int(found[1] or 1)


def path_of(run):
    """The path of registered run `run`'s record."""
    return RECORD if run == 1 else RECORD.with_name(f"registration_{run}.json")


def _paths(root="."):
    """The record paths that exist (relative to root), oldest first."""
    runs = sorted(n for n in map(_run, Path(root, RECORD.parent).glob("registration*.json")) if n)
    return [path_of(n) for n in runs]


def record_path(root="."):
    """The latest record's path (relative to root); RECORD while there is none."""
    return (_paths(root) or [RECORD])[-1]


def records(root="."):
    """Every record, oldest first: [(path relative to root, record)]."""
    return [(path, _read(Path(root, path), Record)) for path in _paths(root)]


def register(rules, claims, root=".", previous=None):
    """Write the next record: the first at RECORD; after it, record n + 1 with `previous` (the
    caller's {commit, claims_json_sha256} of the run the latest record governed). Returns (path,
    record); RegistrationError when the latest record is dated today."""
    paths = _paths(root)
    record = make_record(rules, claims, root)
    if paths:
        latest = load(root)
        if latest["date"] == record["date"]:
            raise RegistrationError(f"{paths[-1]}: registered today ({record['date']}); a new record needs a "
                                    "later date")
        record = {**record, "run": _run(paths[-1]) + 1,
                  "previous": {"record": str(paths[-1]), "date": latest["date"], **(previous or {})}}
    path = path_of(record.get("run", 1))
    write_json(Path(root, path), record)
    return path, record


class Record(Strict):
    """The shape of a registration record; a record that lacks a key or holds the wrong type stops
    the analysis with one line naming the key."""
    date: Date
    sha256: dict[str, Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]]
    rules: dict
    rules_sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    claims: dict[str, dict]
    run: int = 1                         # registered run n (the first record has no key)
    previous: dict | None = None         # run n - 1's record, date, commit and claims.json sha256


class Results(Strict):
    """The results a snapshot of verdicts was judged on (results_snapshot)."""
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    runs: Annotated[int, Field(ge=0)]              # training records
    stage_two_runs: Annotated[int, Field(ge=0)]    # of them, the sequential rule's stage-2 seeds


class CodeAmendment(Strict):
    date: Date
    registration: Date
    what: str
    why: str
    verdicts_identical: bool
    claims_json_sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    sha256: dict[str, Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]]
    frozen_verdicts: dict[str, Verdict] | None = None     # a rule change: each claim's verdict under the frozen code
    # a rule change: each claim amended after the registration, the verdict its registered text had
    # under the frozen code (claims.json's frozen_verdict), which today's code can no longer give
    registered_claim_verdicts: dict[str, Verdict] | None = None
    results: Results | None = None       # the results its claims.json (a move) or frozen verdicts (a rule change) come from
    # the results of earlier rule changes of the same registration that predate `results`, by the
    # sha256 of the claims.json they froze (established from git's history by tools/register.py)
    earlier_results: dict[str, Results] | None = None


def _read(path, model, many=False):
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        raise RegistrationError(f"{path}: unreadable; restore it with `git checkout {path}`") from None
    try:
        if many:
            if not isinstance(raw, list):
                raise RegistrationError(f"{path}: expected a list of amendments")
            if not all(isinstance(a, dict) for a in raw):
                raise RegistrationError(f"{path}: each amendment must be a JSON object")
            return [model(**a).model_dump() for a in raw]
        if not isinstance(raw, dict):
            raise RegistrationError(f"{path}: expected a JSON object (date, sha256, rules, rules_sha256, claims)")
        return model(**raw).model_dump()
    except ValidationError as e:
        raise RegistrationError(one_line(e, str(path)) + f"; restore it with `git checkout {path}`") from None


def load(root="."):
    """The latest registration record, or None while the rules are not registered (no record yet)."""
    path = Path(root, record_path(root))
    return _read(path, Record) if path.exists() else None


def add_to_analysis_deps(dvc_yaml="dvc.yaml", record=None):
    """Make the analyze and report stages depend on `record` (default: the latest record beside
    dvc.yaml; from registration on, a changed or deleted record reruns or stops them). Returns
    whether dvc.yaml changed."""
    path = Path(dvc_yaml)
    record = record or record_path(path.parent)
    text = path.read_text()
    changed = False
    for stage in ("analyze", "report"):
        start = text.index(f"\n  {stage}:\n")
        following = re.search(r"\n  [\w@-]+:\n", text[start + 1:])
        end = start + 1 + following.start() if following else len(text)
        deps = text.index("    deps:\n", start)
        if deps > end or f"      - {record}\n" in text[start:end]:
            continue
        anchor = deps + len("    deps:\n")
        text = text[:anchor] + f"      - {record}\n" + text[anchor:]
        changed = True
    if changed:
        with atomic_path(path) as tmp:
            tmp.write_text(text)
    return changed


def all_code_amendments(root="."):
    """Every code amendment in CODE_AMENDMENTS, of any record (a list, oldest first)."""
    path = Path(root, CODE_AMENDMENTS)
    return _read(path, CodeAmendment, many=True) if path.exists() else []


def load_code_amendments(root="."):
    """The code amendments of the latest record (its date in their `registration`), oldest first;
    empty when there are none or no record."""
    record = load(root)
    return [a for a in all_code_amendments(root) if record and a["registration"] == record["date"]]


def frozen_files(record, amendments):
    """{path: sha256} the judged code must match: the latest code amendment's, else the record's
    (the registry itself is checked claim by claim, not by its hash)."""
    files = amendments[-1]["sha256"] if amendments else record["sha256"]
    return {path: digest for path, digest in files.items() if path != str(REGISTRY)}


def amend_code(record, what, why, claims_sha256, root=".", date=None, results=None):
    """A code amendment: the judged code as it is now, which judged the committed results (`results`:
    results_snapshot) to the same reports/claims.json (claims_sha256) as the code it replaces."""
    return {"date": date or datetime.date.today().isoformat(), "registration": record["date"], "what": what,
            "why": why, "verdicts_identical": True, "claims_json_sha256": claims_sha256,
            "sha256": {path: sha256(Path(root, path)) for path in judged_code(root)},
            **({"results": results} if results else {})}


def check_code_amendment(claims_json, root="."):
    """RegistrationError unless the latest code amendment's claim holds: an amendment that says the
    judged code moved with every verdict identical must name the results it was judged on, and on
    those results the code now gives its reports/claims.json (`claims_json`, the text about to be
    written) byte for byte. A record is not trusted: a hand-written one beside edited judging code
    is refused here. On other results (a new run) the data may move verdicts, and nothing is checked."""
    amendments = load_code_amendments(root)
    latest = amendments[-1] if amendments else None
    if not latest or not latest["verdicts_identical"]:
        return
    which = f"{CODE_AMENDMENTS}: the latest code amendment ({latest['date']}, \"{latest['what'][:50]}...\")"
    if not latest.get("results"):
        raise RegistrationError(f"{which} names no results it was judged on, so its claim of identical verdicts "
                                "cannot be checked; amendments are written by `python -m tools.register`")
    if latest["results"] == results_snapshot(root) and \
            hashlib.sha256(claims_json.encode()).hexdigest() != latest["claims_json_sha256"]:
        raise RegistrationError(f"{which} says no verdict moved, but on the same results the judged code writes "
                                "another reports/claims.json; restore the judged code, or record the change with "
                                "`python -m tools.register --rules-changed`")


def amend_rules(record, what, why, frozen_verdicts, claims_sha256, root=".", date=None,
                registered_claim_verdicts=None, results=None, earlier_results=None):
    """A rule change after the registration: the judged code as it is now, and each claim's verdict
    under the frozen code (from the committed reports/claims.json it wrote, claims_sha256), so that
    every verdict the change moves is shown post hoc beside the frozen one; with the verdicts of the
    registered texts of claims amended since (`registered_claim_verdicts`), so that they stay shown;
    and the results those verdicts were judged on (`results`: results_snapshot; `earlier_results`:
    those of earlier rule changes that did not record theirs), so that a move between two changes
    judged on different results is credited to the data (provenance)."""
    return {**amend_code(record, what, why, claims_sha256, root, date), "verdicts_identical": False,
            "frozen_verdicts": frozen_verdicts,
            **({"registered_claim_verdicts": registered_claim_verdicts} if registered_claim_verdicts else {}),
            **({"results": results} if results else {}), **({"earlier_results": earlier_results} if earlier_results else {})}


RESULTS_TREE = "results"      # every file the judge may read of a run: records, examples, determinism


def _blob(data):
    """git's object id of a file's bytes, so that a working tree and a commit compare without git."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _snapshot(blobs):
    """{sha256, runs, stage_two_runs} of results given as {path: git object id}."""
    training = [p for p in blobs if re.fullmatch(r"results/pretrain/[^/]+/[^/]+/seed_\d+\.json", p)]
    listing = "".join(f"{path} {blob}\n" for path, blob in sorted(blobs.items()))
    return {"sha256": hashlib.sha256(listing.encode()).hexdigest(), "runs": len(training),
            "stage_two_runs": sum(is_stage_two(p.split("/")[2]) for p in training)}


def results_snapshot(root="."):
    """The results in the tree, as a snapshot of verdicts records them (Results): a digest of every
    file under results/ by path and content, and the training runs among them."""
    top = Path(root, RESULTS_TREE)
    return _snapshot({p.relative_to(root).as_posix(): _blob(p.read_bytes())
                      for p in top.rglob("*") if p.is_file()})


def results_snapshot_at(commit, root="."):
    """The same snapshot of the results committed at `commit` (read from git's tree, not checked out)."""
    listed = git("ls-tree", "-r", commit, "--", RESULTS_TREE, root=root).splitlines()
    return _snapshot({line.split("\t", 1)[1]: line.split()[2] for line in listed})


def results_of(change, amendments):
    """The results a rule change's frozen verdicts were judged on (its own record, else one a later
    amendment established for it), or None where nothing says."""
    if change.get("results"):
        return change["results"]
    found = [a["earlier_results"][change["claims_json_sha256"]] for a in amendments
             if change["claims_json_sha256"] in (a.get("earlier_results") or {})]
    return found[0] if found else None


def rule_changes(amendments):
    """The rule changes after the registration, oldest first: each amendment holds, as
    frozen_verdicts, every claim's verdict under the code it replaced (the first one's: the
    registered code's)."""
    return [a for a in amendments if a.get("frozen_verdicts")]


def check_registered_code(root="."):
    """Under a registration, RegistrationError when a record is not anchored in git (check_anchored)
    or the judged code differs from it (check_code); the analyze stage's entry point calls it before
    judging."""
    check_anchored(root)
    record = load(root)
    if record:
        check_code(record, load_code_amendments(root), root)


def git(*args, root=".", raw=False):
    """git's output in root (text; raw: bytes); RegistrationError with git's first line of error when it fails."""
    result = subprocess.run(["git", *args], cwd=root, capture_output=True)
    if result.returncode:
        message = result.stderr.decode(errors="replace").strip().splitlines() or ["failed"]
        raise RegistrationError(f"git {' '.join(args)}: {message[0]}")
    return result.stdout if raw else result.stdout.decode(errors="replace")


def in_git(root="."):
    """Whether root is the top of a git work tree with a commit (a clone of the study)."""
    try:
        top = git("rev-parse", "--show-toplevel", root=root).strip()
        git("rev-parse", "--verify", "-q", "HEAD", root=root)
    except (RegistrationError, OSError):
        return False
    return Path(top).resolve() == Path(root).resolve()


def check_anchored(root="."):
    """RegistrationError (one line) unless the registration records stand in git as registered: a
    record or the amendments file git holds but the tree lacks is named as missing; one that is
    uncommitted or differs from its committed version is refused, as is an amendment of the latest
    record edited since it was first committed (_check_appended_only); a committed result (RESULTS) not
    committed after the latest record's commit predates the rules that would judge it. Outside a
    git work tree nothing can be checked (a copy, not a clone), and nothing is refused; in a shallow
    clone only the records' own state is (their history is not there)."""
    if not in_git(root):
        return
    anchored = [*map(str, _paths(root)), str(CODE_AMENDMENTS)]
    tracked = git("ls-files", "--", str(RECORD.parent), root=root).splitlines()
    for path in sorted({p for p in tracked if _run(p) or p == str(CODE_AMENDMENTS)} | set(anchored)):
        exists = Path(root, path).exists()
        if path in tracked and not exists:
            raise RegistrationError(f"{path}: committed but missing; restore it with `git checkout {path}`")
        if exists and path not in tracked:
            raise RegistrationError(f"{path}: not committed; a registration or amendment counts only once "
                                    f"committed: commit it (`git add {path} && git commit`) before the run it judges")
        if exists and git("diff", "--name-only", "HEAD", "--", path, root=root).strip():
            raise RegistrationError(f"{path}: differs from its committed version; a record is never edited: restore "
                                    f"it with `git checkout {path}`, or register again")
    if not _paths(root) or git("rev-parse", "--is-shallow-repository", root=root).strip() == "true":
        return              # nothing registered, or a shallow clone, whose history cannot show the order
    _check_appended_only(load(root)["date"], root)
    latest = str(_paths(root)[-1])
    commit = git("log", "-1", "--format=%H", "--", latest, root=root).strip()
    after = set(git("log", "--ancestry-path", "--format=", "--name-only", f"{commit}..HEAD", "--", *RESULTS,
                    root=root).split())
    rewritten = set(git("diff", "--name-only", "HEAD", "--", *RESULTS, root=root).split())     # written since
    for path in git("ls-files", "--", *RESULTS, root=root).split():
        if path not in after and path not in rewritten:
            raise RegistrationError(f"{path}: committed before {latest} (commit {commit[:7]}), so the rules were "
                                    "registered after the result they judge; a registered run retrains every stage "
                                    f"after its record is committed: `make repro-stage STAGE={producing_stage(path)}`")


def check_code(record, amendments=(), root="."):
    """RegistrationError when a judged file differs from the registration (or its latest code
    amendment), or a judging module was added or removed since."""
    frozen_code = frozen_files(record, amendments)
    since = f"the registration of {record['date']}" + (f" (code amended {amendments[-1]['date']})" if amendments else "")
    for path in sorted(set(judged_code(root)) | set(frozen_code)):
        if path not in frozen_code:
            raise RegistrationError(f"{path}: judging code added after {since}; remove it, or register again "
                                    "before the run")
        if not Path(root, path).exists():
            raise RegistrationError(f"{path}: judged at {since} but missing; restore it with `git checkout {path}`")
        if sha256(Path(root, path)) != frozen_code[path]:
            raise RegistrationError(f"{path}: differs from {since}; restore it, or register again before the run")


def unregistered_changes(root="."):
    """The judged files that differ from the latest registration (or its latest code amendment):
    edited, added or removed; empty while nothing is registered. tools/relock.py never records them."""
    record = load(root)
    if not record:
        return set()
    frozen_code = frozen_files(record, load_code_amendments(root))
    return {path for path in set(judged_code(root)) | set(frozen_code)
            if path not in frozen_code or not Path(root, path).exists() or sha256(Path(root, path)) != frozen_code[path]}


def amends(amendment, run):
    """Whether an amendment (a dict) is post-registration of registered run `run`: marked
    post_registration, with `registration` (default 1) that run."""
    return bool(amendment.get("post_registration")) and amendment.get("registration", 1) == run


def _check_appended_only(registered, root="."):
    """RegistrationError unless every committed version of CODE_AMENDMENTS holds the amendments of
    the registration of `registered` (a date) as a prefix of today's: they are appended, never
    edited, reordered or removed (a key holding null counts as absent)."""
    def of_record(amendments):
        return [{k: v for k, v in a.items() if v is not None} for a in amendments
                if isinstance(a, dict) and a.get("registration") == registered]
    today = of_record(all_code_amendments(root))
    for commit in git("log", "--format=%H", "--", str(CODE_AMENDMENTS), root=root).split():
        try:
            then = of_record(json.loads(git("show", f"{commit}:{CODE_AMENDMENTS}", root=root)))
        except (RegistrationError, ValueError, TypeError):
            continue                        # not there, or not a list of amendments, at that commit
        changed = next((i for i, (old, new) in enumerate(zip(then, today)) if old != new), None)
        if changed is not None or len(today) < len(then):
            which = f"amendment {changed + 1}" if changed is not None else f"amendment {len(today) + 1}"
            raise RegistrationError(f"{CODE_AMENDMENTS}: {which} of the registration of {registered} differs from "
                                    f"its version committed in {commit[:7]}; amendments are appended, never edited "
                                    f"or removed: restore it with `git show {commit[:7]}:{CODE_AMENDMENTS}`, and "
                                    "append a new one with `python -m tools.register`")


def check_claims(record, rules, claims, withdrawn=None):
    """{claim id: frozen claim} for every claim amended after registration; RegistrationError when
    the rules or a claim differ without a logged amendment of this record's run, or a registered
    claim is missing without such an amendment that withdraws it (`withdrawn`: {id: amendment}).
    Claims are compared in path form (measure.in_path_form): an arm that names its condition reads
    the same runs as the pattern registered for it, and is the same claim."""
    if _digest(rules) != record["rules_sha256"]:
        held_in = rules_path(REGISTRY) if rules_path(REGISTRY).exists() else REGISTRY    # a registry of one file
        raise RegistrationError(f"{held_in}: rules differ from the registration of {record['date']}; "
                                "restore them, or register again before the run")
    run = record.get("run", 1)
    present = {c["id"] for c in claims}
    for cid in record["claims"]:
        logged = (withdrawn or {}).get(cid)
        if cid not in present and not (logged and amends(logged, run)):
            raise RegistrationError(f"{REGISTRY}: claim {cid}: registered on {record['date']} but missing; restore "
                                    "it, or withdraw it with an `amendments:` entry (post_registration: true, "
                                    f"registration: {run}, withdraws: [{cid}])")
    frozen = {}
    for claim in claims:
        registered = record["claims"].get(claim["id"])
        if registered is not None and in_path_form(_as_declared(registered)) == in_path_form(_frozen(claim)):
            continue
        if not any(amends(a, run) for a in claim.get("amended") or []):
            change = "added after the registration" if registered is None else "differs from its registered form"
            raise RegistrationError(f"{REGISTRY}: claim {claim['id']}: {change} of {record['date']}; add an "
                                    f"`amended:` entry with post_registration: true, registration: {run}, or "
                                    "restore it")
        if registered is not None:
            frozen[claim["id"]] = registered
    return frozen
