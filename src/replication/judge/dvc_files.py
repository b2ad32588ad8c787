"""What `dvc metrics` and `dvc plots` read, written by the analyze stage beside reports/claims.json.

reports/metrics.json holds, per claim id, the effect (its contrast's mean paired difference in the
claim's own unit), its interval at the registered level and the verdict, under keys without spaces, so that
`dvc metrics diff --targets reports/metrics.json` shows which claim moved (it is not a metrics file of
dvc.yaml: `dvc metrics show` prints the verdict counts alone). reports/plots/ holds the data of dvc.yaml's `plots:`,
as CSV, so that `dvc plots show` and `dvc plots diff` draw them offline:

    forest.csv                  one row per claim with an effect: the report's forest plot
    published_vs_ours.csv       claims with a numeric published effect: theirs against ours
    ladder.csv                  each ladder claim's effect and interval at every rung (steps)
    loss/<study>.csv            each condition's training loss against steps (mean, min and max over seeds)

A `series` column names the line a row belongs to (a claim, a condition): .dvc/plots/series.json
draws one line per series. Figures are written rounded as in claims.json (record.rounded), so that
every CPU writes the same bytes.

The claims are read defensively (missing or null fields are skipped, never guessed): claims.json
grows fields as judging does, and these files only need the few described in claims.json's schema.
"""
import csv
from pathlib import Path

import numpy as np

from ..io import atomic_path, write_json
from .kinds import chance_loss
from .measure import record_pattern
from .record import rounded

METRICS = "reports/metrics.json"
PLOTS = "reports/plots"


def write_dvc_files(judged, results, root="."):
    """Write reports/metrics.json and the plot data under reports/plots/ (in the repository at root)
    for a list of judged claims and the results (Results) they were judged on."""
    write_json(Path(root, METRICS), rounded(claim_metrics(judged)))
    plots = Path(root, PLOTS)
    _write_csv(plots / "forest.csv", forest_rows(judged))
    _write_csv(plots / "published_vs_ours.csv", published_rows(judged))
    _write_csv(plots / "ladder.csv", [row for claim in judged for row in ladder_rows(claim)])
    _write_folder(plots / "loss", loss_rows(results))


def effect(claim, contrast):
    """(effect, ci_low, ci_high) of one contrast in the claim's unit, or None where it has no mean."""
    if not isinstance(contrast, dict) or contrast.get("diff_mean") is None:
        return None
    scale = claim.get("effect_scale") or 1
    low, high = contrast.get("diff_ci95") or (None, None)
    scaled = lambda x: None if x is None else x * scale
    return scaled(contrast["diff_mean"]), scaled(low), scaled(high)


def claim_metrics(judged):
    """{claim id: {effect, ci_low, ci_high, verdict}}; a claim without a contrast has its verdict only."""
    out = {}
    for claim in judged:
        row = {"verdict": claim.get("verdict")}
        measured = effect(claim, claim.get("contrast"))
        if measured:
            row = dict(zip(("effect", "ci_low", "ci_high"), measured)) | row
        out[claim["id"]] = row
    return out


def forest_rows(judged):
    return [{"claim": claim["id"], **dict(zip(("effect", "ci_low", "ci_high"), measured)),
             "unit": (claim.get("effect_unit") or "").strip(), "verdict": claim.get("verdict")}
            for claim in judged if (measured := effect(claim, claim.get("contrast")))]


def published_rows(judged):
    """Claims whose published effect is a number (in the contrast's own unit, before scaling)."""
    rows = []
    for claim in judged:
        published, measured = claim.get("published_effect_value"), effect(claim, claim.get("contrast"))
        if isinstance(published, int | float) and measured:
            rows.append({"claim": claim["id"], "published": published * (claim.get("effect_scale") or 1),
                         "ours": measured[0], "ci_low": measured[1], "ci_high": measured[2]})
    return rows


def ladder_rows(claim):
    """Each rung's effect (its first contrast, the claim's headline one) against steps."""
    rows = []
    for rung in claim.get("ladder") or []:
        contrasts = rung.get("contrasts") or []
        measured = effect(claim, contrasts[0]) if contrasts else None
        if measured and rung.get("step") is not None:
            rows.append({"series": claim["id"], "step": rung["step"],
                         **dict(zip(("effect", "ci_low", "ci_high"), measured)), "verdict": rung.get("verdict")})
    return rows


def loss_rows(results):
    """{study: rows of series (the condition), step, loss (mean over seeds), loss_min, loss_max, chance}
    from the training records' loss curves; a seed that stopped early (diverged, collapsed) counts
    until it stopped. chance: the loss of an encoder that tells nothing apart (kinds.chance_loss),
    empty where the loss has none."""
    curves, chance, studies = {}, {}, results.studies
    for path in results.glob(record_pattern(kind="training")):
        folder, condition = Path(path).parts[-3:-1]
        study = studies.get(condition, folder)           # a stage-2 folder's seeds join their study's
        record = results.record(path)
        curve = curves.setdefault(study, {}).setdefault(condition, {})
        config = record.get("config") or {}
        chance[condition] = chance_loss(config) if {"method", "loss"} <= set(config) else None
        for step, loss in record.get("loss_curve") or []:
            if loss is not None:
                curve.setdefault(step, []).append(loss)
    return {study: [{"series": condition, "step": step, "loss": float(np.mean(losses)), "loss_min": min(losses),
                     "loss_max": max(losses), "chance": "" if chance[condition] is None else chance[condition]}
                    for condition, curve in conditions.items() for step, losses in sorted(curve.items())]
            for study, conditions in curves.items()}


def _write_csv(path, rows):
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        if rows:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rounded(rows))


def _write_folder(folder, tables):
    """One CSV per table, and no file left from a study that is gone."""
    for name, rows in tables.items():
        _write_csv(Path(folder, f"{name}.csv"), rows)
    for stale in Path(folder).glob("*.csv"):
        if stale.stem not in tables:
            stale.unlink()
