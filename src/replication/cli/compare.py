"""What moved between two judged runs: verdict changes, effect shifts and, with --causes, what
changed in between to move each verdict.

    python -m replication compare                     # git HEAD against the working tree
    python -m replication compare OLD [NEW]           # revisions (NEW: the working tree when omitted), or
                                                      # claims files / REV:path (e.g. HEAD~3:reports/claims.json)
    python -m replication compare OLD [NEW] --causes  # each moved verdict with its cause; new arms' costs

Effect shifts: a rerun on another CPU or thread count is a second realisation of the same study:
effects move a little, and a verdict near a threshold may flip. A shift larger than the old
interval's half-width is marked with '!'.

Causes (revisions only): a verdict can move because the claim's definition or rule changed, because
the arms it reads were trained differently, because it read more seeds, or, with none of these,
because the data and the evaluation under the same rule changed. Each move is given every cause that
applies, read from the two revisions' analysis/claims.yaml, resolved/pretrain/*.json and judged
claims, in this order:

- arm changed: the claim is new, or the arms it reads changed (a, b, runs, ladder, ...), or an arm it
  reads is new (by name, in any study);
- probe: an arm reads another figure of the same runs (its key: the all-label probe for the
  20-label one, say);
- gate: the arms gated on having trained (reference, outcome) changed;
- tuning, horizon, budget, protocol: an arm it reads was trained with other settings: tuning for the
  optimiser's and loss's knobs a pilot tunes (learning rate and its rule, lambda, margin,
  temperature), horizon for MoCo's momentum and queue (the steps a key encoder or queue spans) where
  the method has them, budget for the steps, rungs and checkpoints, protocol for any other
  (precision, ...); the dataset and knobs added at their defaults aside;
- rule: a key of its decision rule changed (direction, margin, basis, tolerance, ...), or a
  registry-wide rule change after the registration (claims.json's `rules_amended`), shown post hoc;
- seeds: a contrast read more (or fewer) seeds: the sequential rule's second stage;
- data and evaluation: none of these; a claim that reads no trained arm moved with its example's
  rerun or with judging code.

Below the table, every arm new since OLD with its cost: steps to its last rung x batch x seeds
(images drawn), and the training time its records measured (with their CPU). Judging code that
changed for every claim (how gates, bases or families are computed) is not told apart here; the
amendments in analysis/rules.yaml name it.
"""
import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import yaml

from replication.committed import FileError, read_training
from replication.io import load_yaml, require_inside
from replication.judge.measure import in_path_form
from replication.judge.record import RecordError, as_dicts, read_claims
from replication.judge.verdicts import NOT_JUDGED, NOT_TESTED

CLAIMS = "reports/claims.json"


def read(rev, path):
    """A file's text at a git revision, or in the working tree when rev is None."""
    if rev is None:
        try:
            return Path(path).read_text()
        except (OSError, ValueError) as e:
            raise SystemExit(f"error: {path}: cannot be read ({type(e).__name__}); restore it with "
                             f"`git checkout {path}`") from None
    shown = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True)
    if shown.returncode:
        raise SystemExit(f"error: {rev}:{path}: not in git ({shown.stderr.strip()})")
    return shown.stdout


def read_yaml(rev, path):
    """A YAML file at a revision (see read), loaded by the project's loader; one line when it is not YAML."""
    try:
        return load_yaml(read(rev, path))
    except yaml.YAMLError as e:
        where = f"{rev}:{path}" if rev else path
        raise SystemExit(f"error: {where}: not valid YAML ({getattr(e, 'problem', None) or e}); fix it, or "
                         f"compare with a revision that holds a valid one") from None


def load(source):
    """Judged claims from a file, a git `REV:path`, a revision (its reports/claims.json) or, for
    None, the working tree's."""
    if source is None or Path(source).exists():
        return as_dicts(read_claims(source or CLAIMS))
    rev, _, path = source.partition(":")
    return as_dicts(read_claims(f"{rev}:{path or CLAIMS}", text=read(rev, path or CLAIMS)))


def effects(claim):
    """{label: (mean, half-width)} of a claim's contrasts, or of its arms when it has none."""
    out = {}
    for c in claim.get("contrasts") or ([claim["contrast"]] if claim.get("contrast") else []):
        if c.get("diff_mean") is not None:
            lo, hi = c["diff_ci95"]
            out[f"{c['a']} - {c['b']}"] = (c["diff_mean"], (hi - lo) / 2)
    if not out:
        for name, arm in (claim.get("arms") or {}).items():
            if "ci95" in arm and arm.get("n", 0) > 1:
                lo, hi = arm["ci95"]
                out[name] = (arm["mean"], (hi - lo) / 2)
    return out


def compare(old, new):
    """Lines describing verdict changes and effect shifts between two lists of judged claims."""
    old_by_id, new_by_id = {c["id"]: c for c in old}, {c["id"]: c for c in new}
    shared = [i for i in new_by_id if i in old_by_id]
    changed = [i for i in shared if old_by_id[i]["verdict"] != new_by_id[i]["verdict"]]
    lines = [f"verdicts: {len(changed)} of {len(shared)} shared claims changed"]
    lines += [f"  {i}: {old_by_id[i]['verdict']} -> {new_by_id[i]['verdict']}" for i in changed]
    only = sorted(set(old_by_id) ^ set(new_by_id))
    if only:
        lines.append(f"claims in one file only: {', '.join(only)}")
    shifts = []
    for i in shared:
        before, after = effects(old_by_id[i]), effects(new_by_id[i])
        for label in before.keys() & after.keys():
            (m0, half), (m1, _) = before[label], after[label]
            if m1 != m0:
                units = abs(m1 - m0) / half if half else float("inf")
                shifts.append((units, f"  {'!' if units > 1 else ' '} {i} [{label}]: {m0:.4g} -> {m1:.4g} "
                                      f"(shift {m1 - m0:+.3g}, {units:.2f} of the old half-width)"))
    lines.append(f"effects: {len(shifts)} moved; {sum(u > 1 for u, _ in shifts)} by more than the old "
                 "interval's half-width (marked !)")
    lines += [text for _, text in sorted(shifts, key=lambda s: -s[0])]
    return lines


DESIGN_KEYS = {"arms", "a", "b", "runs", "ladder", "x", "y", "at", "realisations", "realisation", "measured",
               "collapse"}
GATE_KEYS = {"reference", "outcome"}
WORDING_KEYS = {"statement", "source", "metric", "section", "amended", "reason", "scale_note",
                "published_effect", "effect_unit"}
RECORD = re.compile(r"results/(?:evaluate|pretrain)/([^/]+)/([^/]+)/seed_")


def conditions(rev):
    """{study: {condition: settings}} resolved at a revision."""
    if rev is None:
        paths = [str(p) for p in sorted(Path("resolved/pretrain").glob("*.json"))]
    else:
        listed = subprocess.run(["git", "ls-tree", "--name-only", f"{rev}:resolved/pretrain"],
                                capture_output=True, text=True).stdout.split()
        paths = [f"resolved/pretrain/{name}" for name in listed]
    studies = {Path(p).stem: json.loads(read(rev, p)) for p in paths}
    # precision is an execution setting; before it was one, runs on the CPU trained in fp32
    return {name: {cond: {**cfg, "precision": study["execution"].get("precision", "fp32")}
                   for cond, cfg in study["conditions"].items()} for name, study in studies.items()}


def arms_read(claim, studies):
    """(study, condition) pairs whose records a claim's definition names."""
    pairs = set()
    for study, cond in RECORD.findall(json.dumps(claim)):
        for s in (studies if study == "*" else [study]):
            for c in (studies.get(s, {}) if cond == "*" else [cond]):
                if c in studies.get(s, {}):
                    pairs.add((s, c))
    return pairs


# the settings behind each retraining cause (any other is protocol)
RETRAINING = {"tuning": {"lr", "lr_rule", "lam", "margin", "tau", "siglip_t", "siglip_b"},
              "horizon": {"momentum", "queue"},
              "budget": {"steps", "ladder", "checkpoints"}}
MOMENTUM_METHODS = {"moco", "memory_bank"}          # the methods whose momentum and queue are used


def setting_changes(old, new, defaults):
    """Settings of one condition that differ, leaving out the dataset, knobs the old one lacked that
    are at their default now, and momentum and queue where the method has none."""
    keys = (old.keys() | new.keys()) - {"dataset"}
    if new.get("method") not in MOMENTUM_METHODS:
        keys -= {"momentum", "queue"}
    return sorted(k for k in keys if old.get(k, defaults.get(k)) != new.get(k))


def unplaced(value):
    """A claim key's value with the study in each record path left out: an arm that moved to another
    stage is the same arm."""
    return RECORD.sub(lambda m: m.group(0).replace(f"/{m.group(1)}/", "/*/", 1), json.dumps(value))


def find(studies, cond, study):
    """A condition's settings in `studies`: in `study`, else in whichever study holds it now."""
    return studies.get(study, {}).get(cond) or next((s[cond] for s in studies.values() if cond in s), None)


def retraining_cause(setting):
    """tuning, horizon or budget (RETRAINING) for a setting that changed, else protocol."""
    return next((why for why, keys in RETRAINING.items() if setting in keys), "protocol")


def listed(items, at_most=6):
    """Items joined by '; ', the ones past `at_most` counted instead of named."""
    return "; ".join(items[:at_most]) + (f"; and {len(items) - at_most} more" if len(items) > at_most else "")


def without_keys(arms):
    """A claim's arms with the figure each reads left out: what stays when only the probe changed."""
    if isinstance(arms, dict):
        return {k: without_keys(v) for k, v in arms.items() if k != "key"}
    return [without_keys(v) for v in arms] if isinstance(arms, list) else arms


def causes(old_claim, new_claim, old_studies, new_studies, defaults):
    """[(cause, detail)] of a claim's move between two revisions (module docstring), every one that
    applies, in order; seeds and registry-wide rules are added by `moves`, which reads the judged
    claims."""
    if old_claim is None:
        return [("arm changed", "new claim")]
    changed = {k for k in old_claim.keys() | new_claim.keys() if unplaced(old_claim.get(k)) != unplaced(new_claim.get(k))}
    found = []
    if changed & DESIGN_KEYS:
        probe_only = changed & DESIGN_KEYS == {"arms"} and \
            unplaced(without_keys(old_claim["arms"])) == unplaced(without_keys(new_claim["arms"]))
        found.append(("probe", "arms read another figure") if probe_only else
                     ("arm changed", "reads " + ", ".join(sorted(changed & DESIGN_KEYS))))
    if changed & GATE_KEYS:
        found.append(("gate", "gated arms (" + ", ".join(sorted(changed & GATE_KEYS)) + ")"))
    new_arms, retrained = [], {why: [] for why in [*RETRAINING, "protocol"]}
    for study, cond in sorted(arms_read(new_claim, new_studies)):
        before = find(old_studies, cond, study)
        if before is None:
            new_arms.append(f"{cond} (new arm)")
            continue
        diff = setting_changes(before, new_studies[study][cond], defaults)
        for why, arms in retrained.items():
            keys = [k for k in diff if retraining_cause(k) == why]
            # a condition that several studies train is one arm of the claim
            if keys and (named := f"{cond} ({', '.join(keys)})") not in arms:
                arms.append(named)
    if new_arms and not any(why == "arm changed" for why, _ in found):
        found.insert(0, ("arm changed", "arms " + listed(new_arms)))
    found += [(why, f"{why}: " + listed(arms)) for why, arms in retrained.items() if arms]
    if judged := changed - DESIGN_KEYS - GATE_KEYS - WORDING_KEYS:
        found.append(("rule", "rule " + ", ".join(sorted(judged))))
    return found


def seeds_read(judged):
    """The most seeds any contrast of a judged claim (claims.json, as a dict) read."""
    contrasts = judged.get("contrasts") or ([judged["contrast"]] if judged.get("contrast") else [])
    return max((len(c.get("seeds") or []) for c in contrasts), default=0)


def moves(old_rev, new_rev=None):
    """Rows (id, old verdict, new verdict, cause, detail), and the counts below the table."""
    judged_before = {c["id"]: c for c in load(old_rev)}
    old_verdicts = {cid: c["verdict"] for cid, c in judged_before.items()}
    judged_now = {c["id"]: c for c in load(new_rev)}
    new_verdicts = {cid: c["verdict"] for cid, c in judged_now.items()}
    # in path form (in_path_form): an arm that names its condition reads the records its pattern did
    old_defs = {c["id"]: in_path_form(c) for c in read_yaml(old_rev, "analysis/claims.yaml")["claims"]}
    new_defs = {c["id"]: in_path_form(c) for c in read_yaml(new_rev, "analysis/claims.yaml")["claims"]}
    defaults = read_yaml(new_rev, "params.yaml")["pretrain"]["defaults"]
    old_studies, new_studies = conditions(old_rev), conditions(new_rev)
    rows = []
    for cid, verdict in new_verdicts.items():
        old = old_verdicts.get(cid, "(no claim)")
        if old == verdict:
            continue
        found = causes(old_defs.get(cid), new_defs[cid], old_studies, new_studies, defaults)
        if amended := judged_now[cid].get("rules_amended"):          # a registry-wide rule change moved it
            found.append(("rule", f"rule change of {amended[-1]['date']} (post hoc)"))
        before, after = seeds_read(judged_before.get(cid, {})), seeds_read(judged_now[cid])
        if cid in judged_before and before and after and before != after:
            found.append(("seeds", f"{before} -> {after} seeds"))
        found = found or [("data and evaluation" if arms_read(new_defs[cid], new_studies)
                           else "example rerun or judging code", "")]
        named = list(dict.fromkeys(why for why, _ in found))
        rows.append((cid, old, verdict, " + ".join(named), "; ".join(detail for _, detail in found if detail)))
    removed = sorted(set(old_verdicts) - set(new_verdicts))
    newly_tested = [cid for cid, v in new_verdicts.items()
                    if old_verdicts.get(cid, NOT_TESTED) in set(NOT_JUDGED) and v not in set(NOT_JUDGED)]
    return rows, removed, newly_tested


def markdown(rows, removed, newly_tested, n_claims):
    """The table and its counts as markdown."""
    lines = ["| claim | before | now | cause | what changed |", "|---|---|---|---|---|"]
    lines += [f"| {cid} | {old} | {new} | {why} | {detail} |" for cid, old, new, why, detail in rows]
    counted = ", ".join(f"{n} {why}" for why, n in Counter(w for row in rows for w in row[3].split(" + ")).most_common())
    lines += ["", f"{len(rows)} of {n_claims} verdicts moved" + (f"; by cause (a move may have several): {counted}."
                                                                 if counted else ".")]
    lines.append(f"Claims removed: {', '.join(removed) or 'none'}.")
    lines.append(f"Claims untested before (or new) with a measured verdict now: {len(newly_tested)}.")
    return "\n".join(lines)


def arm_costs(old, root="."):
    """Rows (arm, study, steps x batch, images over seeds, training minutes, CPUs) of every arm in
    root's resolved configurations that is not among the `old` arm names, and the old names it dropped."""
    now = set()
    rows = []
    for resolved in sorted(Path(root, "resolved/pretrain").glob("*.json")):
        study = json.loads(resolved.read_text())
        for name, cfg in study["conditions"].items():
            now.add(name)
            if name in old:
                continue
            steps = max([cfg["steps"], *cfg["ladder"]])
            records = [read_training(p)
                       for p in sorted(Path(root, "results/pretrain", resolved.stem, name).glob("seed_*.json"))]
            cpus = ", ".join(sorted({r.get("cpu", "?") for r in records})) or "not run yet"
            rows.append((name, resolved.stem, f"{steps:,} x {cfg['batch']}", steps * cfg["batch"] * len(study["seeds"]),
                         sum(r["wall_s"] for r in records) / 60, cpus))
    return rows, sorted(old - now)


def costs_markdown(rows, dropped):
    lines = ["| new arm | study | steps x batch | images (all seeds) | training minutes (all seeds) | CPU |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {a} | {s} | {sb} | {n:,} | {m:.1f} | {cpu} |" for a, s, sb, n, m, cpu in rows]
    lines.append(f"\n{len(rows)} new arms: {sum(r[3] for r in rows):,} images, {sum(r[4] for r in rows):.1f} training "
                 "minutes summed over seeds (two seeds train at once, so the stages' wall time is about half).")
    lines.append(f"Arms dropped: {', '.join(dropped) or 'none'}.")
    return "\n".join(lines)


def add_arguments(parser):
    parser.add_argument("old", metavar="OLD", nargs="?", help="a revision, a claims file or REV:path (default: "
                        "git HEAD)")
    parser.add_argument("new", metavar="NEW", nargs="?", help="the same (default: the working tree)")
    parser.add_argument("--causes", action="store_true", help="each moved verdict with its cause, and new arms' "
                        "costs (revisions only; needs OLD)")


def run(args):
    try:
        return compare_runs(args)
    except (RecordError, FileError) as e:
        raise SystemExit(f"error: {e}") from None


def compare_runs(args):
    require_inside()
    causes = args.causes
    revs = [rev for rev in (args.old, args.new) if rev is not None]
    if causes and not revs:
        raise SystemExit(__doc__.split("\n\n")[1])
    old, new = (revs + [None, None])[:2] if revs else ("HEAD", None)
    print("\n".join(compare(load(old), load(new))))
    if causes:
        rows, removed, newly_tested = moves(old, new)
        print("\n" + markdown(rows, removed, newly_tested, len(load(new))))
        if new is None:
            old_arms = {c for conds in conditions(old).values() for c in conds}
            print("\n" + costs_markdown(*arm_costs(old_arms)))
    return 0

