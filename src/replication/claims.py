"""Judging the claims registry (analysis/claims.yaml) against the files the pipeline wrote.

Each claim names where its measurements are and how they are judged (`kind`):
    exact       a printed number (or list, or true/false) within `tolerance`  -> exact match | mismatch
    bound       a measured number against at_most / at_least                  -> exact match | mismatch
    range       every per-seed value inside a printed range [lo, hi] +- tolerance -> exact match | mismatch
    interval    the 95% interval of each arm's mean inside [lo, hi]           -> reproduced | contradicted | inconclusive
    paired      arm a against each arm in b, seed by seed (stats.verdict with Holm within the claim)
    failure     the runs of a condition fail (diverge or collapse)    -> reproduced | contradicted | inconclusive
    not_tested  a reason why this study cannot test it                        -> not tested

Measurements: {file, key} reads one value; {files: glob, key} one value per file (per seed, in
seed order); {file, select: list-key, where: {field: value}, key} one value per selected record.
A key is a dotted path ('*' maps over a list); `ratio: [a, b]` or `difference: [a, b]` instead of key combines two paths.
{minus: [spec, spec]} and {spread: [spec, ...]} combine conditions seed by seed.
"""
import glob
import re
from pathlib import Path

import yaml

from . import stats
from .io import read_json

KINDS = {"exact", "bound", "range", "interval", "paired", "failure", "not_tested"}


class ClaimError(Exception):
    """A registry entry that cannot be judged as written (a configuration error)."""


class ResultFileError(Exception):
    """A result file the pipeline wrote that cannot be read; str(e) names it and the fix."""


STAGE_OF_EXAMPLE = {"ntxent_numpy": "ntxent_example", "analytic": "analytic", "toy2d": "toy2d",
                    "tiny_simclr": "tiny_simclr"}


def producing_stage(path):
    """The DVC stage that writes a result file: pretrain@<study>, evaluate@<study>, an example's
    stage or determinism."""
    parts = Path(path).parts
    if len(parts) > 2 and parts[1] in ("pretrain", "evaluate"):
        return f"{parts[1]}@{parts[2]}"
    if len(parts) > 2 and parts[1] == "examples":
        return STAGE_OF_EXAMPLE.get(Path(path).stem, "analyze")
    return Path(path).stem


def _read(path, root):
    """A result file's JSON; a truncated or unreadable one raises ResultFileError with the fix."""
    try:
        return read_json(Path(root) / path)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as e:
        raise ResultFileError(f"{path}: cannot be read ({type(e).__name__}: truncated or corrupted?); "
                              f"regenerate it with `dvc repro -f {producing_stage(path)}`") from None


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


def _records(spec, root):
    """The per-seed records a spec selects, or None when it names a single value."""
    if "files" in spec:
        paths = sorted(glob.glob(spec["files"], root_dir=root), key=_seed_order)
        if not paths:
            raise ClaimError(f"no files match {spec['files']}")
        return [_read(p, root) for p in paths]
    data = _read(spec["file"], root)
    if "select" not in spec:
        return None
    records = [r for r in _dig(data, spec["select"])
               if all(r.get(k) == v for k, v in (spec.get("where") or {}).items())]
    if not records:
        raise ClaimError(f"no records in {spec['file']}:{spec['select']} match {spec.get('where')}")
    return records


def measure_by_seed(spec, root="."):
    """{seed: value} over the runs a spec selects. Failed runs (status not 'ok') give no value.

    Derived specs combine others seed by seed: {minus: [a, b]} is a - b, {spread: [a, b, ...]}
    is max - min (over the seeds every part has)."""
    for op in ("minus", "spread"):
        if op in spec:
            parts = [measure_by_seed(s, root) for s in spec[op]]
            seeds = sorted(set.intersection(*(set(p) for p in parts)))
            if op == "minus":
                return {s: parts[0][s] - parts[1][s] for s in seeds}
            return {s: max(p[s] for p in parts) - min(p[s] for p in parts) for s in seeds}
    records = _records(spec, root)
    if records is None:
        raise ClaimError("a single value has no seeds")
    return {r.get("seed", i): _value(r, spec) for i, r in enumerate(records) if r.get("status", "ok") == "ok"}


def measure(spec, root="."):
    """The value a spec names, or the list of its per-seed values (in seed order)."""
    if "file" in spec and "select" not in spec:          # one value, not one per seed
        return _value(_read(spec["file"], root), spec)
    return list(measure_by_seed(spec, root).values())


def failed_runs(spec, root="."):
    """Runs a per-seed spec selects that did not finish ('diverged', 'collapsed')."""
    for op in ("minus", "spread"):
        if op in spec:
            return [f for s in spec[op] for f in failed_runs(s, root)]
    if "files" not in spec:
        return []
    return [{"seed": r.get("seed"), "status": r["status"], "reason": r.get("reason")}
            for r in _records(spec, root) if r.get("status", "ok") != "ok"]


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


def _judge_exact(claim, out, notes, root):
    """A printed number (or list, or true/false) within `tolerance`."""
    measured = measure(claim["measured"], root)
    out["arms"]["measured"] = _arm(measured, per_seed=False)
    return "exact match" if _close(measured, claim["published"], claim.get("tolerance", 0)) else "mismatch"


def _judge_bound(claim, out, notes, root):
    """Every measured number within at_most / at_least."""
    measured = measure(claim["measured"], root)
    out["arms"]["measured"] = _arm(measured, per_seed=False)
    ok = all((claim.get("at_most") is None or v <= claim["at_most"]) and
             (claim.get("at_least") is None or v >= claim["at_least"]) for v in _flatten(measured))
    return "exact match" if ok else "mismatch"


def _judge_range(claim, out, notes, root):
    """Every per-seed value inside the printed range [lo, hi], widened by `tolerance`."""
    measured = measure(claim["measured"], root)
    out["arms"]["measured"] = _arm(measured)
    lo, hi = claim["range"]
    tol = claim.get("tolerance", 0)
    return "exact match" if all(lo - tol <= v <= hi + tol for v in measured) else "mismatch"


def _judge_interval(claim, out, notes, root):
    """Each arm's 95% interval of the mean inside the published range."""
    lo, hi = claim["range"]
    verdicts = []
    for name, spec in claim["arms"].items():
        out["arms"][name] = _arm(measure(spec, root))
        verdicts.append(stats.interval_verdict(out["arms"][name]["ci95"], lo, hi))
    return _combine(verdicts)


def _judge_failure(claim, out, notes, root):
    """The runs of a condition fail (diverge or collapse)."""
    failures = failed_runs(claim["runs"], root)
    statuses = [r.get("status", "ok") for r in _records(claim["runs"], root)]
    out["arms"]["runs"] = {"values": statuses, "n": len(statuses), "failed": failures}
    notes.append(f"{len(failures)} of {len(statuses)} runs failed.")
    if failures and len(failures) == len(statuses):
        return "reproduced"
    return "contradicted" if not failures else "inconclusive"


def _judge_paired(claim, out, notes, root):
    """Arm a against each arm in b, seed by seed; Holm's correction over the claim's contrasts."""
    a, bs = claim["a"], claim["b"] if isinstance(claim["b"], list) else [claim["b"]]
    by_seed = {}
    for name in [a] + bs:
        spec = claim["arms"][name]
        by_seed[name] = measure_by_seed(spec, root)
        out["arms"][name] = {**_arm(list(by_seed[name].values())), "seeds": list(by_seed[name])}
        failures = failed_runs(spec, root)
        if failures:
            out["arms"][name]["failed"] = failures
            notes.append(f"{name}: {len(failures)} run(s) failed ({failures[0]['status']}); "
                         "failed runs are shown, not averaged")
    margin, direction = claim.get("margin", 0.0), claim.get("direction", "greater")
    contrasts = []
    for b in bs:
        seeds = [s for s in by_seed[a] if s in by_seed[b]]
        if len(seeds) < 2:
            contrasts.append({"a": a, "b": b, "direction": direction, "margin": margin, "seeds": seeds,
                              "diff_mean": None, "diff_ci95": None, "p": None, "p_holm": None,
                              "verdict": "inconclusive"})
            notes.append(f"{a} vs {b}: fewer than two seeds with both runs finished")
            continue
        c = stats.paired_contrast([by_seed[a][s] for s in seeds], [by_seed[b][s] for s in seeds], direction)
        contrasts.append({"a": a, "b": b, "direction": direction, "margin": margin, "seeds": seeds, **c})
    tested = [c for c in contrasts if c["p"] is not None]
    for c, p_holm in zip(tested, stats.holm([c["p"] for c in tested])):
        c["p_holm"] = p_holm
        c["verdict"] = stats.verdict(c["diff_ci95"], margin, p_holm)
        if c["verdict"] == "inconclusive":
            c["seeds_needed"] = stats.seeds_needed(c["diffs"], margin)
    out["contrast"] = max(contrasts, key=lambda c: -1 if c["p_holm"] is None else c["p_holm"])
    if len(contrasts) > 1:
        out["contrasts"] = contrasts
    notes.append(_effect_note(claim, out["contrast"]))
    return _combine([c["verdict"] for c in contrasts])


JUDGES = {"exact": _judge_exact, "bound": _judge_bound, "range": _judge_range, "interval": _judge_interval,
          "failure": _judge_failure, "paired": _judge_paired}


def judge(claim, root="."):
    """One claims.json entry for one registry entry."""
    kind = claim.get("kind")
    if kind not in KINDS:
        raise ClaimError(f"claim {claim.get('id')}: kind must be one of {sorted(KINDS)}")
    out = {k: claim.get(k) for k in ("id", "source", "statement", "published", "metric")}
    out.update(section=claim.get("section", "other"), kind=kind, arms={}, contrast=None)
    if kind == "not_tested":
        out.update(verdict="not tested", note=claim["reason"])
        return out
    notes = [claim["scale_note"]] if claim.get("scale_note") else []
    out["verdict"] = JUDGES[kind](claim, out, notes, root)
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
    sign = "Effect in the claimed direction (positive supports the claim): "
    if claim.get("published_effect") is not None:
        return f"{sign}published {claim['published_effect']}; {ours}."
    return f"{sign}{ours}."


def _patterns(spec):
    """Every file pattern a measurement spec reads."""
    for op in ("minus", "spread"):
        if op in spec:
            return [p for part in spec[op] for p in _patterns(part)]
    return [spec[k] for k in ("files", "file") if k in spec]


def _specs(claim):
    for key in ("measured", "runs"):
        if key in claim:
            yield key, claim[key]
    for name, spec in (claim.get("arms") or {}).items():
        yield f"arms.{name}", spec


def check_conditions(registry, conditions, path="analysis/claims.yaml"):
    """Every per-run pattern (results/pretrain|evaluate/<study>/<condition>/...) must name a condition
    that params.yaml defines: a misspelt one would otherwise leave its claim silently untested."""
    for claim in registry:
        for where, spec in _specs(claim):
            for pattern in _patterns(spec):
                parts = Path(pattern).parts
                if len(parts) > 3 and parts[1] in ("pretrain", "evaluate") and parts[3] not in conditions:
                    raise ClaimError(f"{path}: claim {claim['id']}, {where}: condition {parts[3]!r} is not "
                                     "defined in params.yaml (pretrain.studies); fix the pattern "
                                     f"{pattern!r} or add the condition")


def load_registry(path="analysis/claims.yaml", conditions=None):
    """The registry; with `conditions` (names params.yaml defines), every condition it names is checked."""
    registry = yaml.safe_load(Path(path).read_text())
    ids = [c["id"] for c in registry]
    duplicated = {i for i in ids if ids.count(i) > 1}
    if duplicated:
        raise ClaimError(f"{path}: duplicated claim ids {sorted(duplicated)}")
    if conditions is not None:
        check_conditions(registry, conditions, path)
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
