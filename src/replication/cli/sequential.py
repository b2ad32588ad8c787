"""After stage 1 of a registered run: the contrasts the registered sequential rule (rules.sequential
in analysis/claims.yaml; judge/sequential.py) gives further seeds, the conditions that run them and
the boundaries stage 2 is decided at. Reads reports/claims.json and analysis/claims.yaml.

    python -m replication sequential             # print the rule's choice
    python -m replication sequential --write     # and write it to analysis/stage_two.yaml, once

--write is the look: it needs stage 1 judged under the latest registration (reports/summary.json's
registered_on) and committed, so that git shows the interim analysis before stage 2's seeds; the
choice names that analysis (stage_two.chosen_from: its commit and reports/claims.json's sha256).
The look is made once: once the file, or a version of it committed since the registration, has
chosen, --write is refused and the plain form says where it was made (cli/look.py); before every
DVC command make's check refuses a choice that is not the rule's on the interim analysis it names.

A study's further seeds are split into parts where one stage would pass the stage limit on the
slowest CPU seen (its stage-1 runs' times, scaled by the plan's ratio to that CPU:
reports/pilot/run_cost.json). Stage 2 then runs as DVC stages (run/stage_two.py):
`make repro-stage STAGE=pretrain_stage2@<study>_stage2`, then evaluate_stage2@.
"""
import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np

from replication.io import WriteError, atomic_path
from replication.judge import sequential
from replication.judge.record import RecordError, as_dicts, read_claims
from replication.judge.registration import RegistrationError, load as load_registration
from replication.judge.registry import RegistryError, load_registry
from replication.run.config import ParamsError
from replication.run.stage_two import SELECTION, part_names
from .look import CLAIMS, CONDITIONS, choose, look_made
from .register import first_commit_with
from .run_cost import OUT as PILOT, STAGE_LIMIT_MIN, makespan

SUMMARY = "reports/summary.json"


def report(rules, claims, judged):
    """The lines to print: the design, its boundaries and each selected contrast."""
    design = rules["sequential"]
    c1, c2 = sequential.boundaries(design, rules["alpha"])
    n1, n2 = sequential.seeds(design)
    lines = [f"design: {design['spending']} spending of {rules['alpha']:g} one-sided over {n1} and {n2} seeds; "
             f"stage 1 decides at t > {c1:.3f} ({n1 - 1} df), stage 2 at t > {c2:.3f} ({n2 - 1} df)"]
    chosen = choose(rules, claims, judged)
    for c in chosen:
        if c["capped"]:
            lines.append(f"{c['id']}: {c['a']} vs {c['b']} (about {c['seeds_needed']} seeds): past the cap of "
                         f"{design['conditions_at_most']} conditions, no further seeds")
            continue
        lines.append(f"{c['id']}: {c['a']} vs {c['b']} (about {c['seeds_needed']} seeds would settle it): seeds "
                     f"{c['seeds'][0]}-{c['seeds'][-1]} of {', '.join(c['conditions'])}")
    chosen = [c for c in chosen if not c["capped"]]
    conditions = sorted({name for c in chosen for name in c["conditions"]})
    lines.append(f"{len(chosen)} contrasts selected; {len(conditions)} conditions x {design['further_seeds']} seeds")
    return lines


def selection(chosen, study_of, design, minutes_of, slower, workers=2):
    """analysis/stage_two.yaml's content for the contrasts that get seeds: the further seeds, and per
    stage-1 study its chosen conditions (in the order chosen) at those seeds, in as few parts as keep
    each stage within the stage limit on the slowest CPU (parts_needed)."""
    n1, n2 = sequential.seeds(design)
    further = list(range(n1, n2))
    by_study = {}
    for c in chosen:
        for name in c["conditions"] if not c["capped"] else []:
            listed = by_study.setdefault(study_of[name], [])
            listed.append(name) if name not in listed else None
    studies = {}
    for study, names in by_study.items():
        parts = parts_needed([minutes_of(name) for name in names], len(further), slower, workers)
        size = -(-len(further) // parts)
        for i, name in enumerate(part_names(study, parts)):
            studies[name] = {"study": study, "conditions": names, "seeds": further[i * size:(i + 1) * size]}
    return {"seeds": further, "studies": studies}


def parts_needed(minutes, seeds, slower, workers):
    """The fewest parts that `seeds` further seeds of some conditions split into so that neither the
    pretrain nor the evaluate stage of a part passes STAGE_LIMIT_MIN on the slowest CPU: each run as
    long as its condition's stage-1 runs took (`minutes`: [(training, evaluation)] per condition),
    times `slower`, handed out to `workers` processes (run_cost.makespan)."""
    for parts in range(1, seeds + 1):
        per = -(-seeds // parts)
        longest = max(makespan([m[kind] for m in minutes for _ in range(per)], workers) for kind in (0, 1))
        if longest * slower <= STAGE_LIMIT_MIN:
            return parts
    return seeds


def stage_one_minutes(study, condition):
    """(training, evaluation) minutes of one of a condition's stage-1 runs: the mean over its records."""
    return tuple(float(np.mean([json.loads(p.read_text())["wall_s"] / 60 for p in
                                sorted(Path("results", kind, study, condition).glob("seed_*.json"))] or [0]))
                 for kind in ("pretrain", "evaluate"))


def as_yaml(chosen, content):
    """The file's text: what it is, the contrasts that chose it (comments), then `stage_two`."""
    head = SELECTION.read_text(encoding="utf-8").split("stage_two:")[0].split("# Chosen after stage 1")[0]
    why = [f"#   {c['id']}: {c['a']} vs {c['b']}, about {c['seeds_needed']} seeds would settle it"
           for c in chosen if not c["capped"]]
    flow = lambda values: f"[{', '.join(map(str, values))}]"
    studies = "".join(f"\n    {name}: {{study: {part['study']}, conditions: {flow(part['conditions'])}, "
                      f"seeds: {flow(part['seeds'])}}}" for name, part in content["studies"].items())
    interim = content.get("chosen_from")          # quoted: a hash of digits alone would read as a number
    bound = (f"  chosen_from: {{commit: '{interim['commit']}', claims_json_sha256: "
             f"'{interim['claims_json_sha256']}'}}\n") if interim else ""
    return (head + "# Chosen after stage 1 for these contrasts:\n" + "\n".join(why) + "\nstage_two:\n" + bound +
            f"  seeds: {flow(content['seeds'])}\n  studies:" + (studies or " {}") + "\n")


def ready_to_look(registry_date):
    """None when stage 1 is judged under the latest registration and committed; else why not."""
    judged_on = json.loads(Path(SUMMARY).read_text()).get("registered_on") if Path(SUMMARY).exists() else None
    if judged_on != registry_date:
        return (f"{SUMMARY}: stage 1 is not yet judged under the registration of {registry_date}; finish its "
                "stages and run `dvc repro analyze`")
    dirty = subprocess.run(["git", "status", "--porcelain", "--", CLAIMS, SUMMARY],
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        return f"{CLAIMS}: stage 1's analysis is not committed; commit it first, so that git shows the look came first"
    if made := look_made():
        return f"{made}; stage 2 runs what it names, and the look is not made again"
    return None


def add_arguments(parser):
    parser.add_argument("--write", action="store_true", help="write the choice to analysis/stage_two.yaml: the "
                        "look, made once (without: print the rule's choice)")


def main(argv):
    """`python -m replication sequential ARGV...` (the tests call it)."""
    from .main import parse
    return run(parse(["sequential", *argv]))


def run(args):
    try:
        made = look_made()
    except (ParamsError, RegistrationError) as e:
        raise SystemExit(f"error: {e}")
    if made and args.write:
        raise SystemExit(f"error: {made}; the look is made once: stage 2 runs what it names")
    if made:
        print(f"{made}; the look is made once, so the rule chooses nothing new")
        return
    try:
        registry = load_registry()
        judged = as_dicts(read_claims())
    except (RegistryError, RecordError) as e:
        raise SystemExit(f"error: {e}")
    if "sequential" not in registry.rules:
        raise SystemExit("error: analysis/rules.yaml: rules.sequential: no sequential rule is registered; add "
                         "stage_one_seeds, further_seeds, seeds_needed_at_most and spending before the first look")
    print("\n".join(report(registry.rules, registry.claims, judged)))
    if not args.write:
        return
    try:
        why_not = ready_to_look(load_registration()["date"])
    except ParamsError as e:
        raise SystemExit(f"error: {e}")
    if why_not:
        raise SystemExit(f"error: {why_not}")
    digest = hashlib.sha256(Path(CLAIMS).read_bytes()).hexdigest()
    commit = first_commit_with(digest)
    if commit is None:
        raise SystemExit(f"error: {CLAIMS}: in no commit of this branch; commit stage 1's analysis first, so that "
                         "git shows the look came after it")
    study_of = {name: info["study"] for name, info in json.loads(Path(CONDITIONS).read_text())["conditions"].items()}
    chosen = choose(registry.rules, registry.claims, judged)
    slower = json.loads(Path(PILOT, "run_cost.json").read_text())["slowest"]["ratio"]
    content = selection(chosen, study_of, registry.rules["sequential"],
                        lambda name: stage_one_minutes(study_of[name], name), slower)
    content = {"chosen_from": {"commit": commit, "claims_json_sha256": digest}, **content}
    try:
        with atomic_path(SELECTION) as tmp:
            tmp.write_text(as_yaml(chosen, content), encoding="utf-8")
    except WriteError as e:
        raise SystemExit(f"error: {e}") from None
    print(f"wrote {SELECTION}: {len({c for part in content['studies'].values() for c in part['conditions']})} "
          f"conditions in {len(content['studies'])} stage-2 studies; run `dvc repro resolve`, then each one's "
          "pretrain_stage2@ and evaluate_stage2@ stage")

