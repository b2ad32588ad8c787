"""Judging the claims registry (analysis/claims.yaml) against the files the pipeline wrote.

Each claim names where its measurements are and how they are judged (`kind`):
    exact       a printed number (or list, or true/false) within `tolerance`  -> exact match | mismatch
    bound       a measured number against at_most / at_least                  -> exact match | mismatch
    range       every per-seed value inside a printed range [lo, hi] +- tolerance -> exact match | mismatch
    interval    the 95% interval of each arm's mean inside [lo, hi]           -> reproduced | contradicted | inconclusive
    paired      arm a against each arm in b, seed by seed (stats.verdict with Holm within the claim)
    not_tested  a reason why this study cannot test it                        -> not tested

Measurements: {file, key} reads one value; {files: glob, key} one value per file (per seed, in
seed order); {file, select: list-key, where: {field: value}, key} one value per selected record.
A key is a dotted path ('*' maps over a list); `ratio: [a, b]` or `difference: [a, b]` instead of key combines two paths.
"""
import glob
import re
from pathlib import Path

import yaml

from . import stats
from .io import read_json

KINDS = {"exact", "bound", "range", "interval", "paired", "not_tested"}


class ClaimError(Exception):
    pass


def _dig(record, path):
    """record at a dotted path; '*' maps over a list ('per_tau.*.p_positive')."""
    head, _, rest = str(path).partition(".")
    if head == "*":
        return [_dig(item, rest) if rest else item for item in record]
    value = record[int(head)] if isinstance(record, list) else record[head]
    return _dig(value, rest) if rest else value


def _value(record, spec):
    if "ratio" in spec:
        a, b = spec["ratio"]
        return _dig(record, a) / _dig(record, b)
    if "difference" in spec:
        a, b = spec["difference"]
        return _dig(record, a) - _dig(record, b)
    return _dig(record, spec["key"])


def _seed_order(path):
    numbers = re.findall(r"\d+", Path(path).stem)
    return int(numbers[-1]) if numbers else path


def measure(spec, root="."):
    """The value, or the list of per-seed values, a measurement spec points to.

    Records whose `status` is not 'ok' (diverged, collapsed) are failed runs, never values."""
    root = Path(root)
    if "files" in spec:
        paths = sorted(glob.glob(str(root / spec["files"])), key=_seed_order)
        if not paths:
            raise ClaimError(f"no files match {spec['files']}")
        records = [read_json(p) for p in paths]
    else:
        data = read_json(root / spec["file"])
        if "select" not in spec:
            return _value(data, spec)
        records = [r for r in _dig(data, spec["select"])
                   if all(r.get(k) == v for k, v in (spec.get("where") or {}).items())]
        if not records:
            raise ClaimError(f"no records in {spec['file']}:{spec['select']} match {spec.get('where')}")
    return [_value(r, spec) for r in records if r.get("status", "ok") == "ok"]


def failed_runs(spec, root="."):
    """Statuses of runs in a per-seed spec that did not finish ('diverged', 'collapsed')."""
    if "files" not in spec:
        return []
    paths = sorted(glob.glob(str(Path(root) / spec["files"])), key=_seed_order)
    return [{"seed": r.get("seed"), "status": r["status"], "reason": r.get("reason")}
            for r in map(read_json, paths) if r.get("status", "ok") != "ok"]


def _flatten(x):
    return [v for item in x for v in _flatten(item)] if isinstance(x, list) else [x]


def _close(measured, published, tolerance):
    m, p = _flatten(measured), _flatten(published)
    if len(m) != len(p):
        return False
    return all(a == b if isinstance(b, bool) or isinstance(b, str) else abs(a - b) <= tolerance
               for a, b in zip(m, p))


def _arm(values, per_seed=True):
    """An arm for claims.json: per-seed numbers get their summary; anything else is kept as is."""
    values = values if isinstance(values, list) else [values]
    numeric = values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return stats.summarize(values) if per_seed and numeric else {"values": values, "n": len(values)}


def judge(claim, root="."):
    """One claims.json entry for one registry entry."""
    kind = claim.get("kind")
    if kind not in KINDS:
        raise ClaimError(f"claim {claim.get('id')}: kind must be one of {sorted(KINDS)}")
    out = {k: claim.get(k) for k in ("id", "source", "statement", "published", "metric")}
    out.update(section=claim.get("section", "other"), kind=kind, arms={}, contrast=None)
    notes = [claim["scale_note"]] if claim.get("scale_note") else []
    if kind == "not_tested":
        out.update(verdict="not tested", note=claim["reason"])
        return out

    if kind in ("exact", "bound", "range"):
        measured = measure(claim["measured"], root)
        out["arms"]["measured"] = _arm(measured, per_seed=kind == "range")
        if kind == "exact":
            ok = _close(measured, claim["published"], claim.get("tolerance", 0))
        elif kind == "bound":
            values = _flatten(measured)
            ok = all((claim.get("at_most") is None or v <= claim["at_most"]) and
                     (claim.get("at_least") is None or v >= claim["at_least"]) for v in values)
        else:
            lo, hi = claim["range"]
            tol = claim.get("tolerance", 0)
            ok = all(lo - tol <= v <= hi + tol for v in measured)
        out["verdict"] = "exact match" if ok else "mismatch"

    elif kind == "interval":
        lo, hi = claim["range"]
        verdicts = []
        for name, spec in claim["arms"].items():
            out["arms"][name] = _arm(measure(spec, root))
            verdicts.append(stats.interval_verdict(out["arms"][name]["ci95"], lo, hi))
        out["verdict"] = _combine(verdicts)

    else:  # paired
        a, bs = claim["a"], claim["b"] if isinstance(claim["b"], list) else [claim["b"]]
        for name in [a] + bs:
            spec = claim["arms"][name]
            out["arms"][name] = _arm(measure(spec, root))
            failures = failed_runs(spec, root)
            if failures:
                out["arms"][name]["failed"] = failures
                notes.append(f"{name}: {len(failures)} run(s) failed ({failures[0]['status']}); "
                             "failed runs are shown, not averaged")
        margin, direction = claim.get("margin", 0.0), claim.get("direction", "greater")
        contrasts = []
        for b in bs:
            va, vb = out["arms"][a]["values"], out["arms"][b]["values"]
            if len(va) != len(vb) or len(va) < 2:
                contrasts.append({"a": a, "b": b, "direction": direction, "margin": margin,
                                  "diff_mean": None, "diff_ci95": None, "p": None, "p_holm": None,
                                  "verdict": "inconclusive"})
                notes.append(f"{a} vs {b}: fewer than two paired seeds")
                continue
            c = stats.paired_contrast(va, vb, direction)
            contrasts.append({"a": a, "b": b, "direction": direction, "margin": margin, **c})
        tested = [c for c in contrasts if c["p"] is not None]
        for c, p_holm in zip(tested, stats.holm([c["p"] for c in tested])):
            c["p_holm"] = p_holm
            c["verdict"] = stats.verdict(c["diff_ci95"], margin, p_holm)
            if c["verdict"] == "inconclusive":
                c["seeds_needed"] = stats.seeds_needed(c["diffs"], margin)
        out["verdict"] = _combine([c["verdict"] for c in contrasts])
        out["contrast"] = max(contrasts, key=lambda c: -1 if c["p_holm"] is None else c["p_holm"])
        if len(contrasts) > 1:
            out["contrasts"] = contrasts
        notes.append(_effect_note(claim, out["contrast"]))

    out["note"] = " ".join(n for n in notes if n)
    return out


def _combine(verdicts):
    """A claim over several arms or contrasts holds only if every part holds."""
    if all(v == verdicts[0] for v in verdicts):
        return verdicts[0]
    if "contradicted" in verdicts:
        return "contradicted"
    return "inconclusive"


def _effect_note(claim, c):
    if c["diff_mean"] is None:
        return ""
    scale = claim.get("effect_scale", 1.0)
    unit = claim.get("effect_unit", "")
    lo, hi = (v * scale for v in c["diff_ci95"])
    ours = f"here {c['diff_mean'] * scale:.3g}{unit}, 95% CI {lo:.3g} to {hi:.3g}{unit}"
    if claim.get("published_effect") is not None:
        return f"Published effect {claim['published_effect']}; {ours}."
    return f"Effect {ours}."


def load_registry(path="analysis/claims.yaml"):
    registry = yaml.safe_load(Path(path).read_text())
    ids = [c["id"] for c in registry]
    duplicated = {i for i in ids if ids.count(i) > 1}
    if duplicated:
        raise ClaimError(f"{path}: duplicated claim ids {sorted(duplicated)}")
    return registry


def judge_all(registry, root="."):
    """Judge every claim; one whose measurements are absent from this run (a profile that skips
    them) is reported as 'not tested' with the reason, never dropped."""
    judged = []
    for claim in registry:
        try:
            judged.append(judge(claim, root))
        except (ClaimError, KeyError, IndexError, FileNotFoundError) as e:
            judged.append({**{k: claim.get(k) for k in ("id", "source", "statement", "published", "metric")},
                           "section": claim.get("section", "other"), "kind": claim.get("kind"),
                           "arms": {}, "contrast": None, "verdict": "not tested",
                           "note": f"no measurement in this run: {e}"})
    return judged


def summary(judged):
    """The compact headline file for `dvc metrics show`: verdict counts."""
    counts = {}
    for claim in judged:
        counts[claim["verdict"]] = counts.get(claim["verdict"], 0) + 1
    return {"claims": len(judged), "verdicts": dict(sorted(counts.items()))}
