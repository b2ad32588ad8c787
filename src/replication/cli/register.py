"""Freeze the rules before a full run, or record judging code that moved without moving a verdict.

    python -m replication register
        write analysis/registration.json (the date, the sha256 of params.yaml, the registry and the
        judging code, and every claim as registered) and make the analyze and report stages depend
        on it; commit both before the first stage of the run. When a record exists, write the next,
        analysis/registration_<n>.json (run n, and `previous`: the last record, its date, HEAD's
        commit, which holds that run's judged results, and the sha256 of the committed
        reports/claims.json); refused when the last record is dated today or reports/claims.json
        has uncommitted changes. Earlier records are never modified.
    python -m replication register --rules-changed "what changed" --why "why"
        after the latest registration, a change of judging code that moves verdicts: append an
        amendment that freezes each claim's verdict under the code it replaces (read from the committed
        reports/claims.json, which must be the one that code judged) and the results it was judged
        on (those of earlier rule changes that recorded none are read from git), so that the analysis
        shows every verdict a rule moved post hoc beside the frozen one, and credits a move between
        two changes judged on different results to the data.
    python -m replication register --code-moved "what moved" --why "why"
        judge the committed results with the code as it is now; only when that gives a reports/
        claims.json byte-identical to the committed one, append a code amendment (the new hashes)
        to analysis/registration_amendments.json. Otherwise the edit changes a verdict: it is a
        rule change, not a move. Refused when no judged file differs from the registration (or its
        latest code amendment): an amendment for nothing.
Both amend the latest record (their `registration` is its date), and both need a WHAT and a WHY that
say something; the two together, or --why alone, are refused in one line.
"""
import hashlib
import json
import sys

from replication.io import WriteError, require_inside, write_json
from replication.judge.judge import judge_registry
from replication.judge.measure import InputError
from replication.judge.record import CLAIMS, claims_text
from replication.judge.registration import (CODE_AMENDMENTS, JUDGE, RESULTS_TREE, RegistrationError,
                                            add_to_analysis_deps, all_code_amendments, amend_code, amend_rules,
                                            git, in_git, load, load_code_amendments, record_path, register, results_of,
                                            results_snapshot, results_snapshot_at, rule_changes,
                                            unregistered_changes)
from replication.judge.registry import RegistryError, load_registry
from replication.run.config import read_resolved


def code_moved(what, why):
    record = load()
    if record is None:
        raise RegistrationError(f"{record_path()}: no registration to amend; run "
                                "`python -m replication register` first")
    if not unregistered_changes():
        raise RegistrationError(f"{JUDGE}: every judged file is as registered on {record['date']} (or its latest code "
                                "amendment); nothing moved, so there is nothing to amend")
    judged, _ = judge_registry(read_resolved("conditions"))
    committed = CLAIMS.read_text()
    if claims_text(judged) != committed:
        raise RegistrationError(f"{CLAIMS}: the code as it is now judges the committed results differently; "
                                "a change that moves a verdict is a rule change, not a move (register again)")
    amendment = amend_code(record, what, why, hashlib.sha256(committed.encode()).hexdigest(),
                           results=results_snapshot())
    write_json(CODE_AMENDMENTS, [*all_code_amendments(), amendment])
    return amendment


def rules_changed(what, why):
    record = load()
    if record is None:
        raise RegistrationError(f"{record_path()}: no registration to amend; run "
                                "`python -m replication register` first")
    amendments = load_code_amendments()
    committed = CLAIMS.read_text()
    digest = hashlib.sha256(committed.encode()).hexdigest()
    if amendments and amendments[-1]["claims_json_sha256"] != digest and not amendments[-1].get("frozen_verdicts"):
        raise RegistrationError(f"{CLAIMS}: not the claims.json the registered code judged (its sha256 differs from "
                                f"the last amendment's); restore it with `git checkout {CLAIMS}`")
    judged = json.loads(committed)
    before = {c["id"]: c["verdict"] for c in judged}      # under the code being replaced
    # the first rule change: every frozen_verdict claims.json holds is a registered claim text's
    registered_texts = None if rule_changes(amendments) else \
        {c["id"]: c["frozen_verdict"] for c in judged if c.get("frozen_verdict")}
    amendment = amend_rules(record, what, why, before, digest, registered_claim_verdicts=registered_texts,
                            results=judged_on(digest), earlier_results=earlier_results(amendments))
    write_json(CODE_AMENDMENTS, [*all_code_amendments(), amendment])
    return amendment


def first_commit_with(claims_sha256):
    """The first commit whose reports/claims.json has this sha256: the one that wrote it; None if none."""
    for commit in git("log", "--reverse", "--format=%H", "--", str(CLAIMS)).split():
        try:
            text = git("show", f"{commit}:{CLAIMS}", raw=True)
        except RegistrationError:
            continue                    # deleted at that commit
        if hashlib.sha256(text).hexdigest() == claims_sha256:
            return commit
    return None


def judged_on(claims_sha256):
    """The results the committed reports/claims.json was judged on, which must be the results in the
    tree: results/ committed and unchanged since the commit that wrote that claims.json (outside a git
    work tree, a copy, nothing can be checked: the results in the tree)."""
    if not in_git():
        return results_snapshot()
    if git("status", "--porcelain", "--", RESULTS_TREE).strip():
        raise RegistrationError(f"{RESULTS_TREE}/: uncommitted changes; commit the results reports/claims.json was "
                                "judged on before amending the rules")
    commit = first_commit_with(claims_sha256)
    now = results_snapshot()
    if commit and results_snapshot_at(commit) != now:
        raise RegistrationError(f"{CLAIMS}: judged on other results than results/ holds now (commit {commit[:7]}); "
                                "rerun the analyze stage with the code being replaced, and commit it first")
    return now


def earlier_results(amendments):
    """{claims.json sha256: results} of each earlier rule change of the registration that recorded no
    results of its own, read from git: the results committed with the claims.json it froze (none
    outside git)."""
    if not in_git():
        return None
    found = {}
    for change in rule_changes(amendments):
        if results_of(change, amendments) is None and change["claims_json_sha256"] not in found:
            commit = first_commit_with(change["claims_json_sha256"])
            if commit is None:
                raise RegistrationError(f"{CODE_AMENDMENTS}: the claims.json frozen on {change['date']} (sha256 "
                                        f"{change['claims_json_sha256'][:12]}) is in no commit; its results are unknown")
            found[change["claims_json_sha256"]] = results_snapshot_at(commit)
    return found or None


def previous_run():
    """What a new record says of the run before it: HEAD's commit (holding that run's judged
    results) and the sha256 of the reports/claims.json committed there; None before the first
    record. RegistrationError when reports/claims.json has uncommitted changes."""
    if load() is None:
        return None
    if git("status", "--porcelain", "--", str(CLAIMS)).strip():
        raise RegistrationError(f"{CLAIMS}: uncommitted changes; commit the previous run's verdicts (or restore "
                                f"them with `git checkout {CLAIMS}`) before registering the next run")
    return {"commit": git("rev-parse", "HEAD").strip(),
            "claims_json_sha256": hashlib.sha256(git("show", f"HEAD:./{CLAIMS}", raw=True)).hexdigest()}


def add_arguments(parser):
    parser.add_argument("--code-moved", metavar="WHAT", help="judging code that moved without moving a verdict: "
                        "append a code amendment (the new hashes) when the committed results judge identically")
    parser.add_argument("--rules-changed", metavar="WHAT", help="a change of judging code that moves verdicts: "
                        "append an amendment that freezes each claim's verdict under the code it replaces")
    parser.add_argument("--why", help="why the code moved or the rules changed (with one of the two)")


def checked(args):
    """The parsed flags; an empty text or flags that exclude each other exit 2 with one line."""
    parser = args.parser
    amending = [flag for flag in ("code_moved", "rules_changed") if getattr(args, flag) is not None]
    if len(amending) == 2:
        parser.error("--code-moved and --rules-changed exclude each other: a change either moves no verdict "
                     "or is a rule change; give one")
    if not amending and args.why is not None:
        parser.error("--why goes with --code-moved or --rules-changed")
    for flag in [*amending, "why"] if amending else []:
        if not (getattr(args, flag) or "").strip():
            parser.error(f"--{flag.replace('_', '-')} needs a text that says what and why, not an empty one")
    return args


def main(argv):
    """`python -m replication register ARGV...` (the tests call it)."""
    from .main import parse
    return run(parse(["register", *argv]))


def run(args):
    args = checked(args)
    require_inside()
    try:
        if args.rules_changed:
            amendment = rules_changed(args.rules_changed, args.why)
            print(f"wrote {CODE_AMENDMENTS}: rules amended on {amendment['date']} after the registration; the "
                  f"frozen verdicts of {len(amendment['frozen_verdicts'])} claims kept beside the new ones")
            return 0
        if args.code_moved:
            amendment = code_moved(args.code_moved, args.why)
            print(f"wrote {CODE_AMENDMENTS}: {len(amendment['sha256'])} judged files amended on {amendment['date']}, "
                  "verdicts identical; commit it with the code")
            return 0
        registered = load_registry("analysis/claims.yaml", read_resolved("conditions")["conditions"])
        path, record = register(registered.rules, registered.claims, previous=previous_run())
        deps = " and added it to the analyze and report stages' deps in dvc.yaml" if add_to_analysis_deps() else ""
    except (RegistryError, RegistrationError, InputError, WriteError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {path}{deps}: {len(record['claims'])} claims registered for run {record.get('run', 1)} on "
          f"{record['date']}; commit it before the run")
    return 0

