"""Gates: whether an arm has trained (against its untrained control).

Trained (rules.control_error_removed = r): the untrained control is the same encoder at step 0,
probed after BatchNorm's statistics were re-estimated on training images (the evaluation record's
`control`, with `bn: calibrated`; its `control_uncalibrated` is kept beside it). Per seed,
the arm's gain removes a share of its control's error, g = (acc - acc0) / (1 - acc0), with acc the
quantity the claim reads where it is a probe's accuracy (the rotation probe on h for a rotation
claim, kNN for a kNN claim), else the linear probe on the embedding it measures (h or z; h for
figures of no embedding, such as a loss). The arm has trained when the lower bound of the interval of the
mean of g (at the registered level) exceeds r. Relative to headroom, so a control that already scores 96% can
still be judged.

The last doubling of steps before a rung starts at the rung at half its steps, or the closest rung
at or above half (previous_rung); convergence over it is judged on the contrast
(verdicts.one_more_doubling).
"""
from . import stats, verdicts
from .measure import RUNG, record_paths, rung_of
from .probes import PROBES


def embedding_of(key):
    """'h' or 'z': the embedding a record key reads; h for a figure of no embedding."""
    return "z" if ".z." in f".{key or ''}." else "h"


def probe_of(key):
    """The accuracy a gate reads for a key: the key's own probe where it is one, else 'linear' (also
    where the untrained control lacks the key's probe, _control_gain)."""
    last = (key or "").rsplit(".", 1)[-1]
    return last if last in PROBES else "linear"


def _control_value(record, embedding, probe):
    """(calibrated, uncalibrated) accuracy of a run's untrained control on one embedding and probe:
    a record evaluated with BatchNorm calibrated holds both, one without only the uncalibrated."""
    linear = lambda metrics: (metrics or {}).get(embedding, {}).get(probe)
    if record.get("bn") == "calibrated":
        return linear(record.get("control")), linear(record.get("control_uncalibrated"))
    return None, linear(record.get("control"))


def step_of(key):
    """The rung a key names: literally ('at.400.h.linear' -> 400), by index ('at.{rung:1}.h.linear'
    -> 'rung:1', resolved per record), else None (the budget)."""
    fields = (key or "").split(".")
    if len(fields) > 2 and fields[0] == "at" and fields[1].isdigit():
        return int(fields[1])
    found = RUNG.fullmatch(fields[1]) if len(fields) > 2 and fields[0] == "at" else None
    return f"rung:{found.group(1)}" if found else None


def _reached(record, step):
    """The evaluation of a record at `step` (None: its budget; 'rung:K': its K-th trained rung)."""
    if step is None:
        return record.get("eval")
    if isinstance(step, str):
        step = rung_of(record, int(step.split(":")[1]))
    return (record.get("at") or {}).get(str(step))


def control_gain(condition, key, step, rules, results):
    """An arm's gate on the embedding `key` reads, at `step` (None: the budget, `eval`): per-seed
    share of the control's error removed, its summary, and `trained`. None with under two runs."""
    embedding, probe = embedding_of(key), probe_of(key)
    if step is None:
        step = step_of(key)
    return _control_gain(condition, embedding, probe, step, rules, results)


def _control_gain(condition, embedding, probe, step, rules, results):
    shares, gains, calibrated, uncalibrated = {}, {}, [], []
    for path in record_paths(condition, "evaluation", results):
        record = results.record(path)
        reached = _reached(record, step)
        if not reached or (step is None and record["status"] != "ok"):
            continue
        cal, uncal = _control_value(record, embedding, probe)
        acc0 = cal if cal is not None else uncal
        acc = reached[embedding].get(probe)
        if acc is None or acc0 is None:
            return None if probe == "linear" else _control_gain(condition, embedding, "linear", step, rules, results)
        gains[record["seed"]] = acc - acc0
        shares[record["seed"]] = (acc - acc0) / max(1 - acc0, 1e-9)
        calibrated.append(cal)
        uncalibrated.append(uncal)
    if len(shares) < 2:
        return None
    summary = stats.summarize(list(shares.values()), verdicts.level(rules))
    return {"metric": f"{probe.replace('_', ' ')} probe on {embedding}", "step": step, "seeds": list(shares),
            "error_removed": summary, "gain": stats.summarize(list(gains.values()), verdicts.level(rules)),
            "control_calibrated": None if None in calibrated else sum(calibrated) / len(calibrated),
            "control_uncalibrated": None if None in uncalibrated else sum(uncalibrated) / len(uncalibrated),
            "calibrated": None not in calibrated,
            "trained": summary["ci95"][0] > rules["control_error_removed"]}


def untrained_reason(name, condition, gate):
    lo, hi = (100 * v for v in gate["error_removed"]["ci95"])
    return (f"{name} ({condition}) did not train: it removed {100 * gate['error_removed']['mean']:.0f}% "
            f"[{lo:.0f}, {hi:.0f}] of its control's error on the {gate['metric']}")


def previous_rung(rungs, step):
    """The rung that starts the last doubling before `step`: at half its steps, else the closest
    trained rung at or above half; None when there is none below `step`."""
    below = [r for r in rungs if 0 < r < step]
    halves = [r for r in below if 2 * r >= step]
    return min(halves) if halves else None


def rungs_of(condition, results):
    """The rungs a condition's runs were evaluated at (its first evaluation record's)."""
    paths = record_paths(condition, "evaluation", results)
    return results.record(paths[0])["rungs"] if paths else []
