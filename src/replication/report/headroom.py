"""Does the default dataset leave the claims room? Four design targets, fixed before the registered
run with the dataset's pilot, read from the run's own records:

- the untrained control (BatchNorm calibrated) scores at most CONTROL_AT_MOST on the primary probe;
- the default SimCLR arm ends (at its last rung) at least GAIN_AT_LEAST above its control;
- no arm's mean over seeds exceeds ARM_AT_MOST at any checkpoint, on the primary probe;
- same-class negatives are at most SAME_CLASS_AT_MOST of a batch (the data manifest's measurement).

The primary probe is the linear probe on h with the registered label budget (evaluate's `linear`);
the full-label probe (`linear_full`, read at each run's budget) is shown beside the ceiling.
"""
import json
from pathlib import Path

import numpy as np

from ..judge.results import study_of

CONTROL_AT_MOST = 0.30
GAIN_AT_LEAST = 0.25
ARM_AT_MOST = 0.90
SAME_CLASS_AT_MOST = 0.02
PROBE = "linear"


def arm_records(root, dataset):
    """{(study, condition): [evaluation records]} of every arm whose training records say it trained
    on `dataset` (the records, not today's configuration, say what ran)."""
    arms, studies = {}, study_of(root)
    for trained in sorted(Path(root, "results/pretrain").glob("*/*/seed_*.json")):
        evaluated = Path(root, "results/evaluate", *trained.parts[-3:])
        if json.loads(trained.read_text())["config"]["dataset"] == dataset and evaluated.exists():
            record = json.loads(evaluated.read_text())
            condition = trained.parts[-2]
            if record["status"] == "ok":
                arms.setdefault((studies.get(condition, trained.parts[-3]), condition), []).append(record)
    return arms


def by_step(records, probe=PROBE):
    """{step: mean over seeds of the probe on h} at every checkpoint the seeds share (step 0 aside)."""
    steps = set.intersection(*(set(r["at"]) for r in records)) - {"0"}
    return {int(s): float(np.mean([r["at"][s]["h"][probe] for r in records])) for s in steps}


def headroom(root, dataset, reference):
    """Rows (target, measured, holds) of the four targets for `dataset`; `reference` is the default
    arm's (study, condition). Rows whose records are missing say so and hold nothing (None)."""
    arms = arm_records(root, dataset)
    if not arms:
        return [("every target", f"no evaluated arm on {dataset}", None)]
    rows = []
    controls = {arm: float(np.mean([r["control"]["h"][PROBE] for r in recs])) for arm, recs in arms.items()}
    worst = max(controls, key=controls.get)
    rows.append((f"untrained control at most {CONTROL_AT_MOST:.0%} on the primary probe",
                 f"highest arm's control {controls[worst]:.1%} ({worst[1]}); mean over arms "
                 f"{np.mean(list(controls.values())):.1%}", controls[worst] <= CONTROL_AT_MOST))
    if reference in arms:
        steps = by_step(arms[reference])
        last = max(steps)
        gains = ", ".join(f"{s:,} steps {100 * (v - controls[reference]):+.1f} points" for s, v in sorted(steps.items()))
        gain = steps[last] - controls[reference]
        rows.append((f"default SimCLR ({reference[1]}) at least {100 * GAIN_AT_LEAST:.0f} points above its control "
                     "at its last rung", gains, gain >= GAIN_AT_LEAST))
    else:
        rows.append((f"default SimCLR at least {100 * GAIN_AT_LEAST:.0f} points above its control",
                     f"{reference[1]} not evaluated", None))
    best = max(((v, arm, s) for arm, recs in arms.items() for s, v in by_step(recs).items()))
    full = [(float(np.mean([r["eval"]["h"]["linear_full"] for r in recs])), arm) for arm, recs in arms.items()
            if all("linear_full" in r["eval"]["h"] for r in recs)]
    ceiling = f"highest arm mean {best[0]:.1%} ({best[1][1]} at {best[2]:,} steps)"
    if full:
        top = max(full)
        ceiling += f"; with every training label (not the target's probe) {top[0]:.1%} ({top[1][1]})"
    rows.append((f"no arm above {ARM_AT_MOST:.0%} on the primary probe", ceiling, best[0] <= ARM_AT_MOST))
    manifest = Path(root, "data", f"{dataset}.json")
    share = json.loads(manifest.read_text()).get("same_class_negatives") if manifest.exists() else None
    if share:
        rows.append((f"same-class negatives at most {SAME_CLASS_AT_MOST:.0%} of a batch of {share['batch']}",
                     f"{share['measured']:.2%} measured over {share['batches']:,} batches "
                     f"({share['per_anchor']:.2f} per anchor); {share['analytic']:.2%} analytic",
                     share["measured"] <= SAME_CLASS_AT_MOST))
    else:
        rows.append((f"same-class negatives at most {SAME_CLASS_AT_MOST:.0%} of a batch", f"not in {manifest}", None))
    return rows
