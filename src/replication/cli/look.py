"""The sequential look of a registered run (cli/sequential.py), made once and bound to the interim
analysis it was made from: analysis/stage_two.yaml's stage_two.chosen_from names the commit that
wrote stage 1's reports/claims.json and that file's sha256.

- look_made: whether the look was made (the file, or a version of it committed since the run's
  registration record, binds or chooses something): cli.sequential then refuses --write and
  says where it was made;
- check_look: make's check (cli/check.py) before every DVC command: a choice in the file is the
  rule's on the interim analysis it names.

Light on purpose (no torch): make's check imports it.
"""
import hashlib
import json
import tempfile
from pathlib import Path

from replication.judge import sequential
from replication.judge.measure import conditions_of
from replication.judge.record import RecordError, as_dicts, read_claims
from replication.judge.registration import RegistrationError, git, in_git, record_path
from replication.judge.registry import RegistryError, load_registry
from replication.run.config import ParamsError
from replication.run.stage_two import SELECTION, read_selection

CLAIMS, CONDITIONS = "reports/claims.json", "resolved/conditions.json"


def choose(rules, claims, judged):
    """sequential.select on the judged claims: every candidate contrast, capped ones included."""
    return sequential.select(judged, {c["id"]: c for c in claims}, rules["sequential"], conditions_of)


def committed_selection(commit):
    """analysis/stage_two.yaml as committed in `commit` (a StageTwo), or None where it is absent or unreadable."""
    try:
        text = git("show", f"{commit}:{SELECTION}", raw=True)
    except RegistrationError:
        return None
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "stage_two.yaml").write_bytes(text)
        try:
            return read_selection(Path(folder, "stage_two.yaml"))
        except ParamsError:
            return None


def made_at(selection, where):
    """One line: where the look was made, from which interim analysis, and what it chose."""
    interim = selection.chosen_from
    source = (f" on the interim analysis of commit {interim.commit[:7]} ({CLAIMS} sha256 "
              f"{interim.claims_json_sha256[:12]})") if interim else ""
    conditions = {c for part in selection.studies.values() for c in part.conditions}
    return (f"{where}: the look was already made{source}: {len(conditions)} conditions at "
            f"{len(selection.seeds)} further seeds in {len(selection.studies)} stage-2 studies")


def look_made():
    """None before the latest registered run's look; else made_at's line: the file binds a choice or
    chooses studies (even emptied by hand since), or a version of it committed since that run's
    registration record did."""
    selection = read_selection()
    if selection.chosen_from or selection.studies:
        return made_at(selection, str(SELECTION))
    if not in_git():
        return None
    since = git("log", "-1", "--format=%H", "--", str(record_path())).strip()
    for commit in git("log", "--format=%H", f"{since}..HEAD" if since else "HEAD", "--", str(SELECTION)).split():
        then = committed_selection(commit)
        if then and (then.chosen_from or then.studies):
            return made_at(then, f"{SELECTION} (committed in {commit[:7]})")
    return None


def history_before_the_look():
    """Whether git's history holds a version of the file that chose nothing: the state before a look."""
    for commit in git("log", "--reverse", "--format=%H", "--", str(SELECTION)).split():
        then = committed_selection(commit)
        if then and not then.chosen_from and not then.studies:
            return True
    return False


def chose(selection):
    """{(study, condition): seeds} of a StageTwo: what it chose, however its studies are split into parts."""
    found = {}
    for part in selection.studies.values():
        for name in part.conditions:
            found.setdefault((part.study, name), set()).update(part.seeds)
    return found


def check_look():
    """ParamsError (one line) unless analysis/stage_two.yaml chooses nothing (and no version of it
    committed since the registration chose: look_made), or its choice names the interim analysis it
    was made from (a commit of this branch whose reports/claims.json has the recorded sha256, before
    any choice) and is what the rule gives on it. Where git's history does not reach back before the
    look (a copy, committed whole or not at all; a shallow clone) the binding cannot be checked."""
    current = read_selection()
    where = f"{SELECTION}: stage_two.chosen_from"
    if not current.chosen_from:
        if current.studies:
            raise ParamsError(f"{where}: missing; a choice names the interim analysis it was made from: restore the "
                              f"file with `git checkout {SELECTION}`")
        if made := look_made():             # a choice committed since the registration, emptied since
            raise ParamsError(f"{made}; now it chooses nothing: restore that choice (git log -- {SELECTION})")
        return
    if not in_git() or not history_before_the_look():
        return
    interim = current.chosen_from
    try:
        git("merge-base", "--is-ancestor", interim.commit, "HEAD")
        text = git("show", f"{interim.commit}:{CLAIMS}", raw=True)
    except RegistrationError:
        raise ParamsError(f"{where}.commit: {interim.commit[:7]} is not a commit of this branch with {CLAIMS}; "
                          f"restore the file with `git checkout {SELECTION}`") from None
    if hashlib.sha256(text).hexdigest() != interim.claims_json_sha256:
        raise ParamsError(f"{where}.claims_json_sha256: not the sha256 of {CLAIMS} in commit {interim.commit[:7]}; "
                          f"restore the file with `git checkout {SELECTION}`")
    then = committed_selection(interim.commit)
    if then and (then.chosen_from or then.studies):
        raise ParamsError(f"{where}.commit: {interim.commit[:7]} is not an interim analysis (stage 2 was already "
                          f"chosen there); restore the file with `git checkout {SELECTION}`")
    try:
        registry = load_registry()
        judged = as_dicts(read_claims(text=text.decode()))
    except (RegistryError, RecordError) as e:
        raise ParamsError(str(e)) from None
    if "sequential" not in registry.rules:
        raise ParamsError(f"{where}: analysis/rules.yaml registers no sequential rule to check the choice against")
    study_of = {name: info["study"] for name, info in json.loads(Path(CONDITIONS).read_text())["conditions"].items()}
    rule = {(study_of.get(name), name): set(c["seeds"]) for c in choose(registry.rules, registry.claims, judged)
            if not c["capped"] for name in c["conditions"]}
    found, further = chose(current), list(range(*sequential.seeds(registry.rules["sequential"])))
    if rule != found or current.seeds != further:
        what = next((f"{name} of {study}" for study, name in sorted(rule.keys() | found.keys(), key=str)
                     if rule.get((study, name)) != found.get((study, name))), "stage_two.seeds")
        raise ParamsError(f"{SELECTION}: not the rule's choice on the interim analysis of commit "
                          f"{interim.commit[:7]} ({what} differs); restore the file with `git checkout {SELECTION}`")
