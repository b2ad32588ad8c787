"""Reading measurements from the results (results.Results, the snapshot of the files the pipeline
wrote): what a registry spec points at. A key a spec names but a record lacks is an InputError
naming the file and the `dvc repro` command that rewrites it, never a silent `not tested`.

Specs: {file, key} reads one value; {files: glob, key} one value per file (per seed, in seed
order); {condition: name, key} one value per run of a condition, from its training or evaluation
records as the key says (record_kind; 'study/name': in that study only); {conditions: [name, ...]}
the same over each named condition; {studies: [study, ...]} over every condition of those studies; {file, select: list-key, where: {field: value},
key} one value per selected record. A key
is a dotted path ('*' maps over a list); `ratio: [a, b]` or `difference: [a, b]` instead of key
combines two paths. {minus: [spec, spec]} and {spread: [spec, ...]} combine conditions seed by
seed; {best_of: [spec, ...]} takes the spec with the highest mean (a learning-rate sweep's best arm).
"""
import math
import re
from pathlib import Path

import numpy as np

from ..io import STAGE_TWO_SUFFIX, is_stage_two
from .probes import CONTRASTIVE_TOP1, EMBEDDING_FIGURES, PROBES

STAGE_OF_EXAMPLE = {"ntxent_numpy": "ntxent_example", "analytic": "analytic", "toy2d": "toy2d",
                    "tiny_simclr": "tiny_simclr", "limits": "limits"}


class InputError(Exception):
    """A result file that is missing, unreadable or incomplete; str(e) names it and the fix."""


def producing_stage(path):
    """The DVC stage that writes a result file: pretrain@<study>, evaluate@<study> (a stage-2 study's:
    pretrain_stage2@<name>, evaluate_stage2@<name>), an example's stage or determinism."""
    parts = Path(path).parts
    if len(parts) > 2 and parts[1] in ("pretrain", "evaluate"):
        return f"{parts[1]}{STAGE_TWO_SUFFIX if is_stage_two(parts[2]) else ''}@{parts[2]}"
    if len(parts) > 2 and parts[1] == "examples":
        return STAGE_OF_EXAMPLE.get(Path(path).stem, "analyze")
    return Path(path).stem


def fix(path):
    """What rewrites a result file: the `dvc repro -f` of the stage that writes it."""
    return f"rewrite it with `dvc repro -f {producing_stage(path)}`"


def dig(record, path, where="record"):
    """record at a dotted path; '*' maps over a list ('per_tau.*.p_positive')."""
    head, _, rest = str(path).partition(".")
    try:
        if head == "*":
            return [dig(item, rest, where) if rest else item for item in record]
        value = record[int(head)] if isinstance(record, list) else record[head]
    except (KeyError, IndexError, TypeError, ValueError):
        raise InputError(f"{where}: has no field {path!r}; {fix(where) if '/' in where else 'check the key'}") \
            from None
    return dig(value, rest, where) if rest else value


RUNG = re.compile(r"\{rung:(\d+)\}")


def rung_of(record, index):
    """The index-th trained rung an evaluation record holds (0: the budget, 1: the first ladder rung),
    so that a key can name a rung whatever a profile scales the steps by."""
    trained = sorted(int(r) for r in record.get("rungs") or [] if int(r) > 0)
    return trained[index] if index < len(trained) else None


def with_rungs(key, record):
    """A key with each '{rung:K}' replaced by that record's K-th trained rung."""
    return RUNG.sub(lambda m: str(rung_of(record, int(m.group(1)))), key)


def _value(record, spec, where):
    if "ratio" in spec:
        a, b = spec["ratio"]
        return dig(record, a, where) / dig(record, b, where)
    if "difference" in spec:
        a, b = spec["difference"]
        return dig(record, a, where) - dig(record, b, where)
    return dig(record, with_rungs(spec["key"], record), where)


def seed_order(path):
    numbers = re.findall(r"\d+", Path(path).stem)
    return int(numbers[-1]) if numbers else path


# ---------------------------------------------------------------- where a condition's records are

# the fields a spec may read from each kind of record (the registry checks them); the two share none
_METRIC = rf"(h|z)\.({'|'.join((*EMBEDDING_FIGURES, *PROBES))})"
EVALUATION_KEY = re.compile(rf"^(eval|control|at\.(\{{step\}}|\{{rung:\d+\}}|\d+))\.({_METRIC}|{CONTRASTIVE_TOP1})$")
TRAINING_KEY = re.compile(r"^(status|loss|steps_done|rung_loss\.(\{step\}|\d+)|learned_scalars\.\w+)$")
FOLDERS = {"training": "results/pretrain", "evaluation": "results/evaluate"}    # the folder of each kind of record


def record_pattern(condition="*", kind="evaluation", study="*", seed="*"):
    """The path of a run's record of one kind (training or evaluation):
    results/pretrain|evaluate/<study>/<condition>/seed_<seed>.json; '*' (a glob) for any. The one
    rule for where a run's records are."""
    return f"{FOLDERS[kind]}/{study}/{condition}/seed_{seed}.json"


def runs_of(info, seeds):
    """[(study folder, seed)] of every run of a condition (its resolved/conditions.json entry):
    stage 1's seeds in its study's folder, and where stage 2 chose it (`runs`), each folder's seeds."""
    return [(folder, seed) for folder, chosen in (info.get("runs") or {info["study"]: seeds}).items()
            for seed in chosen]


def record_paths(condition, kind, results):
    """Every record of one kind of a condition's runs, in seed order."""
    return sorted(results.glob(record_pattern(condition, kind)), key=seed_order)


def record_of(path):
    """(kind, study, condition) of a path or pattern in record_pattern's layout, else None."""
    found = Path(path).parts
    for kind, folder in FOLDERS.items():
        if len(found) > 3 and found[:2] == Path(folder).parts:
            return kind, found[2], found[3]
    return None


def record_kind(spec):
    """The record a spec reads a condition's runs from: 'training' when every field it reads (its
    key, or the paths of its ratio / difference) is the training record's (TRAINING_KEY), else
    'evaluation'."""
    keys = [spec["key"]] if spec.get("key") else spec.get("ratio") or spec.get("difference") or []
    return "training" if keys and all(TRAINING_KEY.match(k) for k in keys) else "evaluation"


def in_path_form(value):
    """A spec, a claim or a list of them with every spec that names runs written as the files it
    reads: {condition: c} -> {files: c's records of the kind its key reads} ('study/c' in that study
    only), {conditions: [c, ...]} -> {files: [c's records, ...]}, {studies: [s, ...]} -> {files: [the
    records of every condition of s, ...]}. The measuring
    reads both forms through it, and the registration compares claims in it."""
    if isinstance(value, list):
        return [in_path_form(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        if k == "condition":
            study, _, condition = v.rpartition("/")
            out["files"] = record_pattern(condition, record_kind(value), study or "*")
        elif k == "conditions":
            out["files"] = [record_pattern(condition, record_kind(value)) for condition in v]
        elif k == "studies":
            out["files"] = [record_pattern("*", record_kind(value), study) for study in v]
        else:
            out[k] = v if k == "where" else in_path_form(v)
    return out


def _records(spec, results):
    """[(path, record)] a spec selects, or None when it names a single value."""
    spec = in_path_form(spec)
    if "files" in spec:                   # a pattern, or a list of patterns read in turn
        patterns = spec["files"] if isinstance(spec["files"], list) else [spec["files"]]
        paths = [p for pattern in patterns for p in sorted(results.glob(pattern), key=seed_order)]
        if not paths:
            raise InputError(f"no result files match {spec['files']}; run the stage that writes them "
                             "(`dvc repro`), or check the pattern in analysis/claims.yaml")
        return [(p, results.record(p)) for p in paths]
    data = results.record(spec["file"])
    if "select" not in spec:
        return None
    records = [(spec["file"], r) for r in dig(data, spec["select"], spec["file"])
               if all(r.get(k) == v for k, v in (spec.get("where") or {}).items())]
    if not records:
        raise InputError(f"{spec['file']}: no records in {spec['select']} match {spec.get('where')}; "
                         f"{fix(spec['file'])}")
    return records


def parts(spec):
    return spec.get("minus") or spec.get("spread") or spec.get("best_of") or []


def selection_seeds(found):
    """The seeds a best_of chooses on: the first half of the seeds every candidate has; the others
    judge the chosen candidate, so that no seed both picks a winner and tests it."""
    common = sorted(set.intersection(*(set(p) for p in found))) if found else []
    return common[:len(common) // 2]


def best_of(spec, results):
    """(index, {seed: value}) of the part of a best_of spec with the highest mean on the selection
    seeds, its values on the remaining seeds."""
    found = [measure_by_seed(s, results) for s in spec["best_of"]]
    chosen_on = selection_seeds(found)
    means = [np.mean([p[s] for s in chosen_on]) if chosen_on else -math.inf for p in found]
    best = int(np.argmax(means))
    return best, {s: v for s, v in found[best].items() if s not in chosen_on}


def measure_by_seed(spec, results):
    """{seed: value} over the runs a spec selects. Failed runs (status not 'ok') give no value."""
    if "best_of" in spec:
        return best_of(spec, results)[1]
    for op in ("minus", "spread"):
        if op in spec:
            found = [measure_by_seed(s, results) for s in spec[op]]
            seeds = sorted(set.intersection(*(set(p) for p in found)))
            if op == "minus":
                return {s: found[0][s] - found[1][s] for s in seeds}
            return {s: max(p[s] for p in found) - min(p[s] for p in found) for s in seeds}
    records = _records(spec, results)
    if records is None:
        raise InputError("a single value has no seeds; use `files` or `select` in the spec")
    return {r.get("seed", i): _number(_value(r, spec, path), spec, path) for i, (path, r) in enumerate(records)
            if r.get("status", "ok") == "ok"}


def _number(value, spec, path):
    """A per-seed value, which the statistics need as a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{path}: {spec.get('key') or spec.get('ratio') or spec.get('difference')} is "
                         f"{str(value)[:40]!r}, not a finite number; fix the key in analysis/claims.yaml or "
                         f"{fix(path)}")
    return value


def measure(spec, results):
    """The value a spec names, or the list of its per-seed values (in seed order)."""
    if "file" in spec and "select" not in spec:          # one value, not one per seed
        return _value(results.record(spec["file"]), spec, spec["file"])
    return list(measure_by_seed(spec, results).values())


def realisations(spec, results):
    """Every value a spec selects, one per record (several may share a seed)."""
    records = _records(spec, results)
    if records is None:
        return flatten(measure(spec, results))
    return [_value(r, spec, path) for path, r in records]


def failed_runs(spec, results):
    """Runs a per-seed spec selects that did not finish ('diverged', 'collapsed')."""
    if parts(spec):
        return [f for s in parts(spec) for f in failed_runs(s, results)]
    if "files" not in in_path_form(spec):
        return []
    return [{"seed": r.get("seed"), "status": r["status"], "reason": r.get("reason")}
            for _, r in _records(spec, results) if r.get("status", "ok") != "ok"]


def runs(spec, results):
    """Every record a per-run spec selects (finished or not)."""
    return [r for _, r in _records(spec, results) or []]


def patterns(spec):
    """Every file pattern a measurement spec reads."""
    if parts(spec):
        return [p for part in parts(spec) for p in patterns(part)]
    spec = in_path_form(spec)
    found = [spec[k] for k in ("files", "file") if k in spec]
    return [p for f in found for p in (f if isinstance(f, list) else [f])]


def conditions_of(spec):
    """The pretraining conditions a spec reads (record_of each pattern)."""
    names = []
    for pattern in patterns(spec):
        found = record_of(pattern)
        if found and found[2] not in names:
            names.append(found[2])
    return names


def key_of(spec):
    """The figure a spec reads (its key)."""
    if parts(spec):
        return key_of(parts(spec)[0])
    return spec.get("key")


def flatten(x):
    return [v for item in x for v in flatten(item)] if isinstance(x, list) else [x]


def at_step(value, step):
    """A measurement spec with every '{step}' in it replaced by the rung."""
    if isinstance(value, str):
        return value.replace("{step}", str(step))
    if isinstance(value, list):
        return [at_step(v, step) for v in value]
    if isinstance(value, dict):
        return {k: at_step(v, step) for k, v in value.items()}
    return value


def replace_key(spec, old, new):
    """A spec whose key(s) end in `old` read `new` instead (another probe); None if none does."""
    if parts(spec):
        found = [replace_key(p, old, new) for p in parts(spec)]
        op = next(k for k in ("minus", "spread", "best_of") if k in spec)
        return None if None in found else {**spec, op: found}
    if (spec.get("key") or "").endswith(f".{old}"):
        return {**spec, "key": spec["key"][: -len(old)] + new}
    return None


def at_sweep_value(spec, free, value):
    """A spec read from the sweep of a free parameter (`free`: {name, sweep}) at one value: the
    sweep's records of the same file, selected as before and at name == value."""
    return {**spec, "select": free["sweep"], "where": {**(spec.get("where") or {}), free["name"]: value}}


def sweep_values(spec, free, results):
    """The values of a free parameter that its sweep's records hold, ascending."""
    records = dig(results.record(spec["file"]), free["sweep"], spec["file"])
    return sorted({dig(r, free["name"], spec["file"]) for r in records})
