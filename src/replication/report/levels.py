"""What each method reached: every condition's probes on h at every rung, read from the evaluation
records (results/evaluate/<study>/<condition>/seed_<k>.json, `at`: {step: metrics}; step 0 is the
untrained control; the linear probe on every label only at the budget), beside the published
figures of the claims that read the condition."""
import json
from pathlib import Path

import pandas as pd

from . import claims_view as rc
from ..judge.probes import probe_title

SHOWN = ("linear", "linear_full", "knn")     # the probes on h the table shows, in its order


def probe_names(protocol):
    """{metric key on h: column title} in the words of the record's own protocol."""
    return {probe: probe_title(probe, protocol) for probe in SHOWN}


def levels(root="."):
    """One row per study, condition and rung: the mean over seeds of each probe on h, in %, and the
    seeds behind it; the columns in the order of probe_names."""
    rows, names = [], {}
    for path in sorted(Path(root, "results", "evaluate").glob("*/*/seed_*.json")):
        record = json.loads(path.read_text())
        for step, metrics in (record.get("at") or {}).items():
            names = names or probe_names(metrics["protocol"])
            rows.append({"study": path.parts[-3], "condition": path.parts[-2], "step": int(step),
                         **{title: 100 * metrics["h"][key] for key, title in probe_names(metrics["protocol"]).items()
                            if rc.number(metrics["h"].get(key)) is not None}})
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(rows).groupby(["study", "condition", "step"], sort=True)
    return table.mean().join(table.size().rename("seeds"))[[*names.values(), "seeds"]].reset_index()


def published_figures(claims):
    """{condition: 'claim: the published figures as printed; ...'} for the claims that read the
    condition and print a level in %."""
    found = {}
    for claim in claims:
        if "%" in str(claim.get("published") or ""):
            for condition in dict.fromkeys(rc.arm_conditions(claim)):
                found.setdefault(condition, []).append(f"{claim['id']}: {claim['published']}")
    return {condition: "; ".join(texts) for condition, texts in found.items()}
