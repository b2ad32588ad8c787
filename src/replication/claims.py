"""Judging the claims registry (analysis/claims.yaml: `rules`, then `claims`) against the files the
pipeline wrote.

Each claim names where its measurements are and how they are judged (`kind`):
    exact       a printed number (or list, or true/false) within `tolerance`  -> exact match | mismatch
    bound       a measured number against at_most / at_least                  -> exact match | mismatch
    range       every per-seed value inside a printed range [lo, hi] +- tolerance -> exact match | mismatch
    interval    the 95% interval of each arm's mean inside [lo, hi]           -> reproduced | contradicted | inconclusive
    single_run  a figure printed from one run, against the 95% prediction interval of our
                realisations (seeds, or one seed at several thread counts)   -> reproduced | contradicted
    paired      arm a against each arm in b, seed by seed: the symmetric table of stats.VERDICT_RULES,
                Holm's correction over every paired contrast of the registry
    correlation Spearman's rank correlation of two figures over runs, with a Fisher-z interval, judged
                by the same table as a paired effect
    failure     a condition fails: every run diverges or collapses, or it does not beat its untrained
                control and its loss stays near log(K + 1)                  -> reproduced | contradicted | inconclusive
                With `collapse: {runs: spec, above: x, avoided_by: spec}`, failure is collapse of the
                embedding itself: every run's spread figure (z uniformity) above x, the loss at its
                collapsed level, and every run of `avoided_by` spread below x.
    not_tested  a reason why this study cannot test it                        -> not tested
A claim with `not_testable: reason` (a design that differs from the paper where it decides the
outcome) is measured and shown, and its verdict is `not testable here`.

The scale ladder: a claim with `ladder: true` writes its keys with a `{step}` placeholder
('at.{step}.h.linear', 'rung_loss.{step}') and is judged at every rung its arms share (steps above
0); its headline verdict is the top rung's. Every rung's contrasts join the registry's Holm family.
Each contrast gets a trend (ladder_trend) from the per-seed slopes of its effect against
log10(steps), and a contradicted top rung says whether it is trustworthy or may be a scale artefact.

The untrained control: every pretraining arm (a condition's evaluation records) gets its gain over
the same encoder at step 0, linear probe on h, paired by seed; an arm whose gain does not clear
rules.control_margin (lower 95% bound) has not trained, and no contrast that involves it is judged.

Measurements: {file, key} reads one value; {files: glob, key} one value per file (per seed, in
seed order); {file, select: list-key, where: {field: value}, key} one value per selected record.
A key is a dotted path ('*' maps over a list); `ratio: [a, b]` or `difference: [a, b]` instead of key combines two paths.
{minus: [spec, spec]} and {spread: [spec, ...]} combine conditions seed by seed; {best_of: [spec, ...]}
takes the spec with the highest mean (a learning-rate sweep's best arm).
"""
import glob
import math
import re
from pathlib import Path

import numpy as np
import yaml
from scipy import stats as scipy_stats

from . import stats
from .io import read_json

KINDS = {"exact", "bound", "range", "interval", "single_run", "paired", "correlation", "failure", "not_tested"}


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
    if "files" in spec:                   # a pattern, or a list of patterns read in turn
        patterns = spec["files"] if isinstance(spec["files"], list) else [spec["files"]]
        paths = [p for pattern in patterns for p in sorted(glob.glob(pattern, root_dir=root), key=_seed_order)]
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


def _best_of(spec, root):
    """(index, {seed: value}) of the part of a best_of spec with the highest mean."""
    parts = [measure_by_seed(s, root) for s in spec["best_of"]]
    means = [np.mean(list(p.values())) if p else -math.inf for p in parts]
    best = int(np.argmax(means))
    return best, parts[best]


def measure_by_seed(spec, root="."):
    """{seed: value} over the runs a spec selects. Failed runs (status not 'ok') give no value.

    Derived specs combine others seed by seed: {minus: [a, b]} is a - b, {spread: [a, b, ...]}
    is max - min (over the seeds every part has), {best_of: [a, b, ...]} the part with the highest mean."""
    if "best_of" in spec:
        return _best_of(spec, root)[1]
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


def _parts(spec):
    return spec.get("minus") or spec.get("spread") or spec.get("best_of") or []


def failed_runs(spec, root="."):
    """Runs a per-seed spec selects that did not finish ('diverged', 'collapsed')."""
    if _parts(spec):
        return [f for s in _parts(spec) for f in failed_runs(s, root)]
    if "files" not in spec:
        return []
    return [{"seed": r.get("seed"), "status": r["status"], "reason": r.get("reason")}
            for r in _records(spec, root) if r.get("status", "ok") != "ok"]


def _patterns(spec):
    """Every file pattern a measurement spec reads."""
    if _parts(spec):
        return [p for part in _parts(spec) for p in _patterns(part)]
    found = [spec[k] for k in ("files", "file") if k in spec]
    return [p for f in found for p in (f if isinstance(f, list) else [f])]


def conditions_of(spec):
    """The pretraining conditions a spec reads (results/pretrain|evaluate/<study>/<condition>/...)."""
    names = []
    for pattern in _patterns(spec):
        parts = Path(pattern).parts
        if len(parts) > 3 and parts[1] in ("pretrain", "evaluate") and parts[3] not in names:
            names.append(parts[3])
    return names


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


# ---------------------------------------------------------------- the untrained control

_CONTROL_CACHE = {}


def control_gain(condition, rules, root=".", step=None):
    """A condition's gain over its untrained control: per seed, linear probe on h at `step` (None:
    the budget, `eval`) minus the same encoder at step 0 (runs that reached the step), its summary,
    and whether it trained (lower 95% bound above rules['control_margin']). Cached per run of
    judge_all."""
    key = (condition, str(root), step, rules["control_margin"])
    if key not in _CONTROL_CACHE:
        _CONTROL_CACHE[key] = _control_gain(condition, rules, root, step)
    return _CONTROL_CACHE[key]


def _control_gain(condition, rules, root, step):
    paths = sorted(glob.glob(f"results/evaluate/*/{condition}/seed_*.json", root_dir=root), key=_seed_order)
    gains = {}
    for path in paths:
        record = _read(path, root)
        reached = record.get("eval") if step is None else (record.get("at") or {}).get(str(step))
        if record.get("control") and reached and (step is not None or record["status"] == "ok"):
            gains[record["seed"]] = reached["h"]["linear"] - record["control"]["h"]["linear"]
    if len(gains) < 2:
        return None
    summary = {**stats.summarize(list(gains.values())), "seeds": list(gains), "metric": "linear probe on h"}
    summary["trained"] = summary["ci95"][0] > rules["control_margin"]
    return summary


def _untrained(out):
    """'arm (condition): gain ...' for every arm of a judged claim whose condition did not train."""
    reasons = {}
    for name, arm in out["arms"].items():
        for condition, gain in (arm.get("control") or {}).items():
            if not gain["trained"]:
                lo, hi = (100 * v for v in gain["ci95"])
                reasons[name] = (f"{name} ({condition}) did not beat its untrained control: gain "
                                 f"{100 * gain['mean']:+.1f} points [{lo:+.1f}, {hi:+.1f}]")
    return reasons


# ---------------------------------------------------------------- one function per kind

def _judge_exact(claim, out, notes, root):
    """A printed number (or list, or true/false) within `tolerance`."""
    measured = measure(claim["measured"], root)
    out["arms"]["measured"] = _arm(measured, per_seed=False)
    if _close(measured, claim["published"], claim.get("tolerance", 0)):
        return "exact match"
    notes.append(f"Measured {_flatten(measured)[:6]} against the printed {_flatten(claim['published'])[:6]}, "
                 f"tolerance {claim.get('tolerance', 0):g}.")
    return "mismatch"


def _judge_bound(claim, out, notes, root):
    """Every measured number within at_most / at_least."""
    measured = measure(claim["measured"], root)
    out["arms"]["measured"] = _arm(measured, per_seed=False)
    ok = all((claim.get("at_most") is None or v <= claim["at_most"]) and
             (claim.get("at_least") is None or v >= claim["at_least"]) for v in _flatten(measured))
    if not ok:
        notes.append(f"Measured {_flatten(measured)[:6]} against at most {claim.get('at_most')}, "
                     f"at least {claim.get('at_least')}.")
    return "exact match" if ok else "mismatch"


def _judge_range(claim, out, notes, root):
    """Every per-seed value inside the printed range [lo, hi], widened by `tolerance`."""
    measured = measure(claim["measured"], root)
    out["arms"]["measured"] = _arm(measured)
    lo, hi = claim["range"]
    tol = claim.get("tolerance", 0)
    outside = [v for v in measured if not lo - tol <= v <= hi + tol]
    if outside:
        notes.append(f"{len(outside)} of {len(measured)} values outside [{lo:g}, {hi:g}] (tolerance {tol:g}): "
                     + ", ".join(f"{v:.4g}" for v in outside) + ".")
    return "mismatch" if outside else "exact match"


def _judge_interval(claim, out, notes, root):
    """Each arm's 95% interval of the mean inside the published range."""
    lo, hi = claim["range"]
    verdicts = []
    for name, spec in claim["arms"].items():
        out["arms"][name] = _arm(measure(spec, root))
        verdicts.append(stats.interval_verdict(out["arms"][name]["ci95"], lo, hi))
        if verdicts[-1] != "reproduced":
            a, b = out["arms"][name]["ci95"]
            notes.append(f"{name}: the 95% interval of the mean [{a:.4g}, {b:.4g}] "
                         f"{'lies outside' if verdicts[-1] == 'contradicted' else 'straddles an edge of'} "
                         f"the published range [{lo:g}, {hi:g}].")
    return _combine(verdicts)


def _judge_single_run(claim, out, notes, root):
    """A figure from one printed run, inside the 95% prediction interval of our realisations."""
    spec = claim["realisations"]
    records = _records(spec, root)          # every realisation, also several of one seed
    values = [_value(r, spec) for r in records] if records is not None else _flatten(measure(spec, root))
    arm = out["arms"]["realisations"] = _arm(values)
    if len(values) < 2:
        notes.append("Fewer than two realisations: no spread to judge a single run against.")
        return "inconclusive"
    arm["prediction95"] = stats.prediction_interval(values)
    lo, hi = arm["prediction95"]
    notes.append(f"One more run of ours would fall in [{lo:.4g}, {hi:.4g}] (95% prediction interval over "
                 f"{len(values)} realisations); the printed figure is one run.")
    return stats.single_run_verdict(claim["published"], values, claim.get("tolerance", 0))


def chance_loss(config):
    """The loss of an encoder that tells nothing apart, where the loss has one: log of the number
    of candidates for InfoNCE-type losses (K + 1 for MoCo and the memory bank, 2N - 1 for SimCLR's
    NT-Xent), the margin for the triplet loss (every similarity equal); else None."""
    if config["method"] in ("moco", "memory_bank"):
        return math.log(config["queue"] + 1)
    if config["method"] == "simclr" and config["loss"] == "nt_xent":
        return math.log(2 * config["batch"] - 1)
    if config["method"] == "simclr" and config["loss"] == "margin_triplet":
        return config["margin"]
    return None


def _judge_failure(claim, out, notes, root, rules):
    """A condition fails by its budget (or, with `at: top`, by its ladder's last rung): every run
    diverges or collapses before it, or the arm has not trained there (untrained-control gate) and
    its loss (the mean of the steps just before) stays at rules['failure_loss_fraction'] of the
    chance loss or above. A claim with `collapse` is judged on its embedding instead of the gate
    (_judge_collapse)."""
    records = _records(claim["runs"], root)
    config = records[0]["config"]
    step = (config.get("ladder") or [config["steps"]])[-1] if claim.get("at") == "top" else config["steps"]
    reached = [r for r in records if str(step) in (r.get("rung_loss") or {})]
    failures = [{"seed": r.get("seed"), "status": r["status"], "reason": r.get("reason")}
                for r in records if r not in reached]
    out["step"] = step
    out["arms"]["runs"] = {"values": [r.get("status", "ok") for r in records], "n": len(records), "failed": failures}
    if failures and len(failures) == len(records):
        notes.append(f"{len(failures)} of {len(records)} runs diverged or collapsed before step {step}.")
        return "reproduced"
    condition = conditions_of(claim["runs"])[0]
    gain = control_gain(condition, rules, root, step if claim.get("at") == "top" else None)   # None: `eval`
    floor = chance_loss(reached[0]["config"])
    losses = [r["rung_loss"][str(step)] for r in reached]
    out["arms"]["loss"] = {**_arm(losses), "chance_loss": floor, "step": step}
    out["arms"]["runs"]["control"] = {condition: gain}
    notes.append(f"At step {step}: {len(failures)} of {len(records)} runs had diverged or collapsed; loss "
                 f"{np.mean(losses):.2f}" + (f" (chance {floor:.2f}, lowest run {min(losses):.2f})." if floor else "."))
    near_floor = floor is None or min(losses) >= rules["failure_loss_fraction"] * floor
    if gain is not None:
        lo, hi = (100 * v for v in gain["ci95"])
        notes.append(f"Gain over the untrained control: {100 * gain['mean']:+.1f} points [{lo:+.1f}, {hi:+.1f}]"
                     + (" (on h; the verdict reads the embedding, below)." if claim.get("collapse") else "."))
    if claim.get("collapse"):
        return _judge_collapse(claim["collapse"], out, notes, root, near_floor)
    if gain is None:
        return "inconclusive"
    if gain["trained"]:
        return "contradicted"
    return "reproduced" if near_floor else "inconclusive"


def _collapsed_runs(spec, above, out, notes, root):
    """Per seed, whether the embedding stayed collapsed: its spread figure (z uniformity, 0 for a
    single point) above `above`. Adds the arm and a note; returns (collapsed seeds, all seeds)."""
    values = measure_by_seed(spec, root)
    stuck = [s for s, v in values.items() if v > above]
    name = f"{conditions_of(spec)[0]}: {_key(spec)}"
    out["arms"][name] = {**_arm(list(values.values())), "seeds": list(values), "key": _key(spec),
                         "collapsed_above": above, "collapsed": len(stuck)}
    notes.append(f"{name}: above {above:g} (a collapsed embedding) in {len(stuck)} of {len(values)} runs "
                 f"({', '.join(f'{v:.3g}' for v in values.values())}).")
    return stuck, list(values)


def _judge_collapse(collapse, out, notes, root, loss_at_floor):
    """A collapse claim judged on the embedding the loss acts on (`collapse.runs`): every run's spread
    figure stays above `collapse.above` with the loss at the collapsed level (loss_at_floor); and,
    with `collapse.avoided_by`, every run of the alternative spreads below it."""
    stuck, seeds = _collapsed_runs(collapse["runs"], collapse["above"], out, notes, root)
    if len(seeds) < 2:
        return "inconclusive"
    if not stuck:
        return "contradicted"
    if len(stuck) < len(seeds) or not loss_at_floor:
        return "inconclusive"
    if "avoided_by" not in collapse:
        return "reproduced"
    also, others = _collapsed_runs(collapse["avoided_by"], collapse["above"], out, notes, root)
    if len(others) < 2:                   # the alternative's runs did not finish: nothing avoided
        return "inconclusive"
    if not also:
        return "reproduced"
    return "contradicted" if len(also) == len(others) else "inconclusive"


def _paired_arms(claim, out, notes, root, rules):
    """Per-seed values of every arm of a paired claim, with failed runs and the untrained control."""
    a, bs = claim["a"], claim["b"] if isinstance(claim["b"], list) else [claim["b"]]
    by_seed = {}
    for name in [a] + bs:
        spec = claim["arms"][name]
        by_seed[name] = measure_by_seed(spec, root)
        arm = out["arms"][name] = {**_arm(list(by_seed[name].values())), "seeds": list(by_seed[name]),
                                   "key": _key(spec)}
        if "best_of" in spec:
            arm["chosen"] = _patterns(spec["best_of"][_best_of(spec, root)[0]])[0]
        controls = {c: control_gain(c, rules, root, claim.get("_step")) for c in conditions_of(spec)}
        if any(controls.values()):
            arm["control"] = {c: g for c, g in controls.items() if g}
        failures = failed_runs(spec, root)
        if failures:
            arm["failed"] = failures
            notes.append(f"{name}: {len(failures)} run(s) failed ({failures[0]['status']}); "
                         "failed runs are shown, not averaged")
    return a, bs, by_seed


def _judge_paired(claim, out, notes, root, rules):
    """Arm a against each arm in b, seed by seed. Contrasts get their statistics here; their verdicts
    wait for Holm's correction over the whole registry (judge_all)."""
    a, bs, by_seed = _paired_arms(claim, out, notes, root, rules)
    margin, direction = claim.get("margin", 0.0), claim.get("direction", "greater")
    untrained = _untrained(out)
    contrasts = []
    for b in bs:
        seeds = [s for s in by_seed[a] if s in by_seed[b]]
        c = {"a": a, "b": b, "direction": direction, "margin": margin, "seeds": seeds, "metric_key": _key(claim["arms"][a])}
        reasons = [untrained[n] for n in (a, b) if n in untrained]
        if len(seeds) < 2:
            c.update(diff_mean=None, diff_ci95=None, p=None, p_holm=None, verdict="inconclusive",
                     reason="fewer than two seeds with both runs finished")
        else:
            c.update(stats.paired_contrast([by_seed[a][s] for s in seeds], [by_seed[b][s] for s in seeds], direction))
            effect = claim.get("published_effect_value")
            if claim.get("not_testable"):
                c.update(verdict="not testable here", reason="the design differs from the paper's (above)")
            elif reasons:
                c.update(verdict="not testable here", reason="; ".join(reasons))
            elif effect is not None and abs(effect) <= margin:
                c.update(verdict="not testable here",
                         reason=f"the published effect ({effect:+.3g}) is no larger than the margin ({margin:g})")
            else:
                c["verdict"] = None                       # judged after Holm over the registry
        contrasts.append(c)
    out["contrasts"] = contrasts
    return None


def _key(spec):
    """The figure a spec reads (its key), for the thread-count shift of that figure."""
    if _parts(spec):
        return _key(_parts(spec)[0])
    return spec.get("key")


def _judge_correlation(claim, out, notes, root, rules):
    """Spearman's rho of x and y over every run a pattern selects, with a Fisher-z 95% interval;
    direction 'less' claims a negative correlation. Judged by the paired table after Holm."""
    records = [r for r in _records(claim["runs"], root) if r.get("status", "ok") == "ok" and r.get("eval")]
    x = [_dig(r, claim["x"]) for r in records]
    y = [_dig(r, claim["y"]) for r in records]
    rho, p = scipy_stats.spearmanr(x, y)
    n = len(x)
    half = 1.96 * math.sqrt(1.06 / (n - 3))        # Fieller et al.'s standard error for Spearman's rho
    z = math.atanh(min(max(rho, -1 + 1e-12), 1 - 1e-12))       # a perfect rank order has an infinite z
    lo, hi = math.tanh(z - half), math.tanh(z + half)
    sign = -1 if claim.get("direction") == "less" else 1
    out["arms"] = {"x": {"values": x, "n": n, "key": claim["x"]}, "y": {"values": y, "n": n, "key": claim["y"]}}
    ci = sorted([sign * lo, sign * hi])
    out["contrasts"] = [{"a": claim["y"], "b": claim["x"], "direction": claim.get("direction", "greater"),
                         "margin": claim.get("margin", 0.0), "seeds": [], "rho": float(rho), "n_runs": n,
                         "diffs": [], "diff_mean": float(sign * rho), "diff_ci95": ci, "se": half / 1.96,
                         "p": float(p), "verdict": None}]
    notes.append(f"Spearman rho {rho:+.3f} [{lo:+.3f}, {hi:+.3f}] over {n} runs.")
    return None


JUDGES = {"exact": _judge_exact, "bound": _judge_bound, "range": _judge_range, "interval": _judge_interval,
          "single_run": _judge_single_run}
REGISTRY_JUDGES = {"paired": _judge_paired, "correlation": _judge_correlation, "failure": _judge_failure}
DEFAULT_RULES = {"control_margin": 0.02, "max_seeds": 50, "failure_loss_fraction": 0.8}


def _judge_one(claim, root, rules):
    """A claims.json entry; paired and correlation claims leave their contrasts' verdicts open."""
    kind = claim.get("kind")
    if kind not in KINDS:
        raise ClaimError(f"claim {claim.get('id')}: kind must be one of {sorted(KINDS)}")
    out = {k: claim.get(k) for k in ("id", "source", "statement", "published", "metric")}
    out.update(section=claim.get("section", "other"), kind=kind, arms={}, contrast=None)
    for key in ("published_effect", "published_effect_value", "effect_scale", "effect_unit"):
        if claim.get(key) is not None:
            out[key] = claim[key]
    if claim.get("amended"):
        out["amended"] = claim["amended"]
    if kind == "not_tested":
        out.update(verdict="not tested", note=claim["reason"])
        return out
    out["_notes"] = [claim["scale_note"]] if claim.get("scale_note") else []
    judge_kind = JUDGES.get(kind)
    out["verdict"] = (judge_kind(claim, out, out["_notes"], root) if judge_kind else
                      REGISTRY_JUDGES[kind](claim, out, out["_notes"], root, rules))
    return out


def _float_shift(key, root):
    """How far a figure moved at another thread count (results/determinism.json), or 0."""
    path = Path(root, "results/determinism.json")
    if not key or not path.exists():
        return 0.0
    moves = [abs(b - a) for diffs in read_json(path)["thread_differences"].values()
             for field, a, b in diffs if field == key and isinstance(a, (int, float))]
    return max(moves, default=0.0)


def _finish(claim, out, rules, root):
    """Verdicts of a claim's contrasts (their Holm p already set), the claim's verdict and note."""
    contrasts = out.pop("contrasts", None)
    if contrasts is not None:
        for c in contrasts:
            if c["verdict"] is None:
                c["verdict"] = stats.verdict(c["diff_ci95"], c["margin"], c["p_holm"])
                shift = 2 * _float_shift(c.get("metric_key"), root)      # both arms may move
                c["unstable"] = stats.unstable(c["diff_ci95"], c["se"], c["margin"], c["p_holm"], shift)
                if c["verdict"] == "inconclusive" and c["diffs"]:
                    c["seeds_needed"] = stats.seeds_needed(c["diffs"], c["margin"])
                    if c["seeds_needed"] is None or c["seeds_needed"] > rules["max_seeds"]:
                        c["verdict"] = "not testable here"
                        c["reason"] = (f"the interval would clear the margin only with more than "
                                       f"{rules['max_seeds']} seeds" if c["seeds_needed"] is None else
                                       f"clearing the margin would need about {c['seeds_needed']} seeds "
                                       f"(bound {rules['max_seeds']})")
        out["contrast"] = contrasts[0] if len(contrasts) == 1 else max(
            contrasts, key=lambda c: -1 if c.get("p_holm") is None else c["p_holm"])
        if len(contrasts) > 1:
            out["contrasts"] = contrasts
        out["verdict"] = _combine([c["verdict"] for c in contrasts])
        out["unstable"] = any(c.get("unstable") for c in contrasts)
        for c in contrasts:
            why = c.get("reason") or _why(c)
            if why:
                out["_notes"].append(f"{c['a']} vs {c['b']}: {why}.")
        if out["kind"] == "paired":
            out["_notes"].append(_effect_note(claim, out["contrast"]))
    if claim.get("not_testable"):
        out["verdict"] = "not testable here"
        out["_notes"].insert(0, f"Not testable here as designed: {claim['not_testable']}")
    out["note"] = " ".join(n for n in out.pop("_notes") if n)
    return out


def _why(c):
    """What the measured interval says, for a verdict other than reproduced."""
    if c.get("diff_mean") is None or c["verdict"] == "reproduced":
        return ""
    lo, hi = c["diff_ci95"]
    m = c["margin"]
    if c["verdict"] == "contradicted":
        return f"the effect runs against the claim beyond the margin (interval [{lo:.3g}, {hi:.3g}] below -{m:g})"
    if c["verdict"] == "no meaningful effect":
        return f"the whole interval [{lo:.3g}, {hi:.3g}] lies inside the margin +-{m:g}"
    needed = c.get("seeds_needed")
    more = f"; about {needed} seeds would settle it" if needed else ""
    if lo > m or hi < -m:
        return f"the interval [{lo:.3g}, {hi:.3g}] clears the margin but Holm's p ({c['p_holm']:.2g}) does not reach 0.05"
    return f"the interval [{lo:.3g}, {hi:.3g}] reaches across the margin +-{m:g}{more}"


def _combine(verdicts):
    """A claim over several arms or contrasts holds only if every part holds."""
    if all(v == verdicts[0] for v in verdicts):
        return verdicts[0]
    for dominant in ("contradicted", "not testable here"):
        if dominant in verdicts:
            return dominant
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


# ---------------------------------------------------------------- the registry

def _specs(claim):
    for key in ("measured", "runs", "realisations"):
        if key in claim:
            yield key, claim[key]
    for name, spec in (claim.get("arms") or {}).items():
        yield f"arms.{name}", spec
    for key in ("runs", "avoided_by"):
        if key in (claim.get("collapse") or {}):
            yield f"collapse.{key}", claim["collapse"][key]


def check_conditions(claims, conditions, path="analysis/claims.yaml"):
    """Every per-run pattern (results/pretrain|evaluate/<study>/<condition>/...) must name a condition
    that params.yaml defines: a misspelt one would otherwise leave its claim silently untested."""
    for claim in claims:
        for where, spec in _specs(claim):
            for pattern in _patterns(spec):
                parts = Path(pattern).parts
                if len(parts) > 3 and parts[1] in ("pretrain", "evaluate") and "*" not in parts[3] \
                        and parts[3] not in conditions:
                    raise ClaimError(f"{path}: claim {claim['id']}, {where}: condition {parts[3]!r} is not "
                                     "defined in params.yaml (pretrain.studies); fix the pattern "
                                     f"{pattern!r} or add the condition")


def load_registry(path="analysis/claims.yaml", conditions=None):
    """(rules, claims) of the registry; with `conditions` (names params.yaml defines), every
    condition it names is checked."""
    registry = yaml.safe_load(Path(path).read_text())
    if not isinstance(registry, dict) or not isinstance(registry.get("claims"), list):
        raise ClaimError(f"{path}: expected a mapping with `rules` and a list of `claims`")
    rules = {**DEFAULT_RULES, **(registry.get("rules") or {})}
    claims = registry["claims"]
    ids = [c["id"] for c in claims]
    duplicated = {i for i in ids if ids.count(i) > 1}
    if duplicated:
        raise ClaimError(f"{path}: duplicated claim ids {sorted(duplicated)}")
    if conditions is not None:
        check_conditions(claims, conditions, path)
    return rules, claims


def _at_step(value, step):
    """A measurement spec with every '{step}' in it replaced by the rung."""
    if isinstance(value, str):
        return value.replace("{step}", str(step))
    if isinstance(value, list):
        return [_at_step(v, step) for v in value]
    if isinstance(value, dict):
        return {k: _at_step(v, step) for k, v in value.items()}
    return value


def claim_at(claim, step):
    """A ladder claim as judged at one rung."""
    return {**claim, "arms": _at_step(claim["arms"], step), "_step": step}


def ladder_rungs(claim, root="."):
    """The trained rungs (steps above 0) that every condition of a ladder claim was evaluated at."""
    common = None
    for _, spec in _specs(claim):
        for condition in conditions_of(spec):
            paths = glob.glob(f"results/evaluate/*/{condition}/seed_*.json", root_dir=root)
            rungs = set(_read(sorted(paths)[0], root)["rungs"]) if paths else set()
            common = rungs if common is None else common & rungs
    rungs = sorted(r for r in common or () if r > 0)
    if not rungs:
        raise ClaimError(f"claim {claim['id']}: its conditions share no trained rung")
    return rungs


def _judge_ladder(claim, root, rules):
    """The claim at its top rung (the headline), with the lower rungs' judgements kept in _rungs."""
    rungs = ladder_rungs(claim, root)
    judged = [_judge_one(claim_at(claim, step), root, rules) for step in rungs]
    out = judged[-1]
    out["_rungs"] = list(zip(rungs, judged))
    return out


def _rung_summary(step, out):
    contrasts = out.get("contrasts") or ([out["contrast"]] if out.get("contrast") else [])
    return {"step": step, "verdict": out["verdict"], "arms": out["arms"], "contrasts": contrasts}


def _trend(claim, out, root):
    """Per contrast of a ladder claim: its trend along the rungs and, for a contradicted top rung,
    whether the contradiction can be trusted (both arms levelled off, trend not toward the claim)."""
    ladder = [_rung_summary(step, o) for step, o in out.pop("_rungs")]
    out["ladder"] = ladder
    steps = [r["step"] for r in ladder]
    top = ladder[-1]
    for i, c in enumerate(top["contrasts"]):
        per_rung = [r["contrasts"][i] for r in ladder]
        effects = [dict(zip(rc["seeds"], rc["diffs"])) if rc.get("diffs") else {} for rc in per_rung]
        c["trend"] = stats.ladder_trend(steps, effects, c["margin"], per_rung[0]["verdict"], c["verdict"])
        if c["verdict"] == "contradicted":
            c["scale_artefact"] = _scale_artefact(c, ladder)
    out["untrained"] = _untrained_levels(claim, top, root)
    main = out["contrast"]
    out["trend"] = (main.get("trend") or {}).get("label") if main else None
    artefacts = [c["scale_artefact"] for c in top["contrasts"] if c.get("scale_artefact")]
    if artefacts:
        out["note"] += " " + " ".join(f"May be a scale artefact: {a}." for a in artefacts)


def _untrained_levels(claim, top, root):
    """Each arm's figure at step 0 (its untrained control on the arm's own measure), mean over
    seeds; only arms that read an evaluation at a rung ('at.<step>. ...') have one."""
    levels = {}
    for name, arm in top["arms"].items():
        if (arm.get("key") or "").startswith(f"at.{top['step']}."):
            values = list(measure_by_seed(claim_at(claim, 0)["arms"][name], root).values())
            levels[name] = float(sum(values) / len(values)) if values else None
    return levels


def _scale_artefact(c, ladder):
    """Why a contradicted top-rung contrast may be a scale artefact, or None when it is trustworthy:
    both arms must have levelled off (their means moved by less than half the margin between the
    last two rungs) and the trend must not be growing toward the claim. (Both arms beat their
    untrained control, or the contrast would not have been judged.)"""
    if len(ladder) < 2:
        return "judged at one rung only"
    reasons = []
    last, previous = ladder[-1], ladder[-2]
    for arm in (c["a"], c["b"]):
        move = last["arms"][arm]["mean"] - previous["arms"][arm]["mean"]
        if abs(move) >= c["margin"] / 2:
            reasons.append(f"{arm} still moved by {move:+.3g} from step {previous['step']} to {last['step']}")
    if (c.get("trend") or {}).get("label") == "grows toward the claim":
        reasons.append("the effect grows toward the claim with training")
    return "; ".join(reasons) or None


def judge_all(claims, root=".", rules=None):
    """Judge every claim; Holm's correction runs over every open contrast of the registry at once
    (every rung of a ladder claim included). A claim whose measurements are absent from this run
    (a profile that skips them) is reported as 'not tested' with the reason, never dropped."""
    rules = {**DEFAULT_RULES, **(rules or {})}
    _CONTROL_CACHE.clear()
    judged = []
    for claim in claims:
        try:
            judged.append(_judge_ladder(claim, root, rules) if claim.get("ladder") else _judge_one(claim, root, rules))
        except (ClaimError, KeyError, IndexError, FileNotFoundError) as e:
            judged.append({**{k: claim.get(k) for k in ("id", "source", "statement", "published", "metric")},
                           "section": claim.get("section", "other"), "kind": claim.get("kind"),
                           "arms": {}, "contrast": None, "verdict": "not tested",
                           "note": f"no measurement in this run: {e}",
                           **({"amended": claim["amended"]} if claim.get("amended") else {})})
    outs = [o for out in judged for o in ([o for _, o in out["_rungs"]] if "_rungs" in out else [out])]
    family = [c for out in outs for c in out.get("contrasts") or [] if c["verdict"] is None]
    for c, p_holm in zip(family, stats.holm([c["p"] for c in family])):
        c["p_holm"] = p_holm
        c["holm_family"] = len(family)
    for claim, out in zip(claims, judged):
        for step, rung in out.get("_rungs", [])[:-1]:
            _finish(claim_at(claim, step), rung, rules, root)
        if "_notes" in out:
            _finish(claim, out, rules, root)
        if "_rungs" in out:
            _trend(claim, out, root)
    return judged


def judge(claim, root=".", rules=None):
    """One claim judged on its own (Holm's family is then its own contrasts)."""
    return judge_all([claim], root, rules)[0]


def summary(judged):
    """The compact headline file for `dvc metrics show`: verdict counts, and the ladder's trends."""
    counts, trends = {}, {}
    for claim in judged:
        counts[claim["verdict"]] = counts.get(claim["verdict"], 0) + 1
        if claim.get("ladder"):
            trends[claim.get("trend") or "none"] = trends.get(claim.get("trend") or "none", 0) + 1
    return {"claims": len(judged), "verdicts": dict(sorted(counts.items())), "ladder_trends": dict(sorted(trends.items()))}
