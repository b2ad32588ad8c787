"""Reading measurements from the files the pipeline wrote: what a registry spec points at, and a
check that every record the resolved configuration expects is there and complete.

Rule: a claim is judged only on complete inputs. Every run the resolved configuration expects
(study x condition x seed) must have its training and evaluation record with the fields judging
reads; a missing, empty, truncated or partial record stops the analysis with one line naming the
file and the `dvc repro` command that rewrites it (InputError). A key a spec names but a record
lacks is an InputError too, never a silent `not tested`.

Specs: {file, key} reads one value; {files: glob, key} one value per file (per seed, in seed
order); {condition: name, key} one value per run of a condition, from its training or evaluation
records as the key says (record_kind; 'study/name': in that study only); {conditions: [name, ...]}
the same over each named condition; {studies: [study, ...]} over every condition of those studies; {file, select: list-key, where: {field: value},
key} one value per selected record. A key
is a dotted path ('*' maps over a list); `ratio: [a, b]` or `difference: [a, b]` instead of key
combines two paths. {minus: [spec, spec]} and {spread: [spec, ...]} combine conditions seed by
seed; {best_of: [spec, ...]} takes the spec with the highest mean (a learning-rate sweep's best arm).
"""
import glob
import json
import math
import re
from pathlib import Path

import numpy as np

from ..io import STAGE_TWO_SUFFIX, digest, is_stage_two, read_json, run_digest, sha256
from .probes import ACCURACIES, CONTRASTIVE_TOP1, EMBEDDING_FIGURES, PROBES

STAGE_OF_EXAMPLE = {"ntxent_numpy": "ntxent_example", "analytic": "analytic", "toy2d": "toy2d",
                    "tiny_simclr": "tiny_simclr", "limits": "limits"}
TRAINING_FIELDS = ("condition", "seed", "status", "config", "rung_loss", "loss")
EVALUATION_FIELDS = ("condition", "seed", "status", "rungs", "at", "eval", "control", "bn", "control_uncalibrated")


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


def _fix(path):
    return f"rewrite it with `dvc repro -f {producing_stage(path)}`"


def read_record(path, root="."):
    """A result file's JSON object; anything else raises InputError naming the file and the fix."""
    try:
        record = read_json(Path(root) / path)
    except FileNotFoundError:
        raise InputError(f"{path}: missing; {_fix(path)}") from None
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot be read ({type(e).__name__}: empty, truncated or corrupted?); "
                         f"{_fix(path)}") from None
    if not isinstance(record, dict) or not record:
        raise InputError(f"{path}: empty record; {_fix(path)}")
    return record


def dig(record, path, where="record"):
    """record at a dotted path; '*' maps over a list ('per_tau.*.p_positive')."""
    head, _, rest = str(path).partition(".")
    try:
        if head == "*":
            return [dig(item, rest, where) if rest else item for item in record]
        value = record[int(head)] if isinstance(record, list) else record[head]
    except (KeyError, IndexError, TypeError, ValueError):
        raise InputError(f"{where}: has no field {path!r}; {_fix(where) if '/' in where else 'check the key'}") \
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


def study_of(root="."):
    """{condition: its study} (resolved/conditions.json), so that a stage-2 folder's records count
    under their condition's study; {} without the file (then the folder names the study)."""
    path = Path(root, "resolved", "conditions.json")
    return {name: info["study"] for name, info in read_json(path)["conditions"].items()} if path.exists() else {}


def record_paths(condition, kind, root="."):
    """Every record of one kind of a condition's runs, in seed order."""
    return sorted(glob.glob(record_pattern(condition, kind), root_dir=root), key=seed_order)


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


def _records(spec, root):
    """[(path, record)] a spec selects, or None when it names a single value."""
    spec = in_path_form(spec)
    if "files" in spec:                   # a pattern, or a list of patterns read in turn
        patterns = spec["files"] if isinstance(spec["files"], list) else [spec["files"]]
        paths = [p for pattern in patterns for p in sorted(glob.glob(pattern, root_dir=root), key=seed_order)]
        if not paths:
            raise InputError(f"no result files match {spec['files']}; run the stage that writes them "
                             "(`dvc repro`), or check the pattern in analysis/claims.yaml")
        return [(p, read_record(p, root)) for p in paths]
    data = read_record(spec["file"], root)
    if "select" not in spec:
        return None
    records = [(spec["file"], r) for r in dig(data, spec["select"], spec["file"])
               if all(r.get(k) == v for k, v in (spec.get("where") or {}).items())]
    if not records:
        raise InputError(f"{spec['file']}: no records in {spec['select']} match {spec.get('where')}; "
                         f"{_fix(spec['file'])}")
    return records


def parts(spec):
    return spec.get("minus") or spec.get("spread") or spec.get("best_of") or []


def selection_seeds(found):
    """The seeds a best_of chooses on: the first half of the seeds every candidate has; the others
    judge the chosen candidate, so that no seed both picks a winner and tests it."""
    common = sorted(set.intersection(*(set(p) for p in found))) if found else []
    return common[:len(common) // 2]


def best_of(spec, root):
    """(index, {seed: value}) of the part of a best_of spec with the highest mean on the selection
    seeds, its values on the remaining seeds."""
    found = [measure_by_seed(s, root) for s in spec["best_of"]]
    chosen_on = selection_seeds(found)
    means = [np.mean([p[s] for s in chosen_on]) if chosen_on else -math.inf for p in found]
    best = int(np.argmax(means))
    return best, {s: v for s, v in found[best].items() if s not in chosen_on}


def measure_by_seed(spec, root="."):
    """{seed: value} over the runs a spec selects. Failed runs (status not 'ok') give no value."""
    if "best_of" in spec:
        return best_of(spec, root)[1]
    for op in ("minus", "spread"):
        if op in spec:
            found = [measure_by_seed(s, root) for s in spec[op]]
            seeds = sorted(set.intersection(*(set(p) for p in found)))
            if op == "minus":
                return {s: found[0][s] - found[1][s] for s in seeds}
            return {s: max(p[s] for p in found) - min(p[s] for p in found) for s in seeds}
    records = _records(spec, root)
    if records is None:
        raise InputError("a single value has no seeds; use `files` or `select` in the spec")
    return {r.get("seed", i): _number(_value(r, spec, path), spec, path) for i, (path, r) in enumerate(records)
            if r.get("status", "ok") == "ok"}


def _number(value, spec, path):
    """A per-seed value, which the statistics need as a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{path}: {spec.get('key') or spec.get('ratio') or spec.get('difference')} is "
                         f"{str(value)[:40]!r}, not a finite number; fix the key in analysis/claims.yaml or "
                         f"{_fix(path)}")
    return value


def measure(spec, root="."):
    """The value a spec names, or the list of its per-seed values (in seed order)."""
    if "file" in spec and "select" not in spec:          # one value, not one per seed
        return _value(read_record(spec["file"], root), spec, spec["file"])
    return list(measure_by_seed(spec, root).values())


def realisations(spec, root="."):
    """Every value a spec selects, one per record (several may share a seed)."""
    records = _records(spec, root)
    if records is None:
        return flatten(measure(spec, root))
    return [_value(r, spec, path) for path, r in records]


def failed_runs(spec, root="."):
    """Runs a per-seed spec selects that did not finish ('diverged', 'collapsed')."""
    if parts(spec):
        return [f for s in parts(spec) for f in failed_runs(s, root)]
    if "files" not in in_path_form(spec):
        return []
    return [{"seed": r.get("seed"), "status": r["status"], "reason": r.get("reason")}
            for _, r in _records(spec, root) if r.get("status", "ok") != "ok"]


def runs(spec, root="."):
    """Every record a per-run spec selects (finished or not)."""
    return [r for _, r in _records(spec, root) or []]


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


def sweep_values(spec, free, root="."):
    """The values of a free parameter that its sweep's records hold, ascending."""
    records = dig(read_record(spec["file"], root), free["sweep"], spec["file"])
    return sorted({dig(r, free["name"], spec["file"]) for r in records})


# ---------------------------------------------------------------- complete inputs

def _check_fields(path, record, fields):
    missing = [f for f in fields if f not in record]
    if missing:
        raise InputError(f"{path}: partial record, no field {missing[0]!r}; {_fix(path)}")


def _inside(path, root):
    """Whether a path, symlinks followed, stays inside the repository."""
    repo = Path(root).resolve()
    return Path(root, path).resolve() == repo or repo in Path(root, path).resolve().parents


def _check_folders(conditions, root):
    """results/ and its record folders are real folders of this repository (not symlinks out of
    it), and each holds only the records the resolved configuration expects."""
    expected = {record_pattern(name, kind, folder, seed) for name, info in conditions["conditions"].items()
                for folder, seed in runs_of(info, conditions["seeds"]) for kind in FOLDERS}
    for kind in FOLDERS:
        folder = Path(root, FOLDERS[kind])
        for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
            relative = str(path.relative_to(root))
            if not _inside(relative, root):
                raise InputError(f"{relative}: leads outside the repository (a symlink?); replace it with the "
                                 f"folder itself (`git checkout {relative}`)")
            if path.is_file() and relative not in expected and not path.name.startswith("."):
                raise InputError(f"{relative}: a file the resolved configuration does not expect (seeds "
                                 f"{', '.join(map(str, conditions['seeds']))}); remove it, or add its condition and "
                                 "seed to params.yaml")
    if not _inside("results", root):
        raise InputError("results: leads outside the repository (a symlink?); replace it with the folder itself")


# The range of every figure a record holds that reaches a verdict or a plot, from its definition in
# src/contrastive (evaluate.py, losses.py: features are l2-normalised, so ||x - y||^2 lies in [0, 4]):
# (least, most, what it is)
RANGES = {**{name: (0, 1, "an accuracy") for name in ACCURACIES},
          "alignment": (0, 4, "an alignment, E ||x - y||^2 of unit vectors"),
          "uniformity": (-8, 0, "a uniformity, log E exp(-2 ||x - y||^2) of unit vectors"),
          "tolerance": (-1, 1, "a tolerance, a mean cosine similarity"),
          "tolerance_centred": (-2, 2, "a centred tolerance, a difference of two mean cosine similarities")}
FIGURES = {"training": ("loss", "loss_curve", "rung_loss", "learned_scalars", "rung_tau", "tau_final"),
           "evaluation": ("eval", "control", "control_uncalibrated", "at")}   # the fields whose figures are checked
SETTINGS = "protocol"        # the probes' settings inside an evaluation's figures: text among numbers
SHA256 = re.compile(r"[0-9a-f]{64}")


def _leaves(value, where):
    """(where, value) for every leaf inside a record's field (dicts and lists walked), its settings left out."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() if k != SETTINGS for leaf in _leaves(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{where}.{i}")]
    return [(where, value)]


def _check_ranges(path, record, kind):
    """Every figure of a record (FIGURES) a finite number, or None (not measured), and each one
    RANGES names within its range."""
    for field in FIGURES[kind]:
        for where, value in _leaves(record.get(field), field):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                shown = repr(value[:40]) if isinstance(value, str) else str(value)[:40]
                raise InputError(f"{path}: {where} is {shown}, not a finite number; {_fix(path)}")
            least, most, what = RANGES.get(where.rsplit(".", 1)[-1], (-math.inf, math.inf, ""))
            if not least <= value <= most:
                raise InputError(f"{path}: {where} = {value:g}, {what} outside [{least}, {most}]; {_fix(path)}")


def _resolved(name, root):
    """resolved/<name>.json, the configuration a run ran under, or InputError naming the command that writes it."""
    path = f"resolved/{name}.json"
    try:
        return read_json(Path(root, path))
    except (OSError, ValueError):
        raise InputError(f"{path}: missing or unreadable; write it with `dvc repro resolve`") from None


def _check_config(path, record, name, study, resolved):
    """A training record ran under its condition's resolved configuration (`resolved`: resolved/pretrain/
    <study>.json): its config_sha256, where it has one (records written since issue 55), is the digest
    of it (run_digest), and every setting the resolved condition defines is the same in its `config`."""
    source = f"resolved/pretrain/{study}.json"
    settings = (resolved.get("conditions") or {}).get(name) or {}
    config = record["config"] if isinstance(record["config"], dict) else {}
    if "config_sha256" in record and \
            record["config_sha256"] != run_digest(settings, resolved.get("execution"), resolved.get("data")):
        raise InputError(f"{path}: config_sha256 is not the digest of {name}'s resolved configuration ({source}): "
                         f"a record of another run; {_fix(path)}")
    for key, value in settings.items():
        if config.get(key, "(missing)") != value:
            raise InputError(f"{path}: config.{key} is {str(config.get(key, '(missing)'))[:40]}, the resolved "
                             f"configuration says {str(value)[:40]} ({source}): a record of another run; {_fix(path)}")


def _check_evaluation_config(path, record, root):
    """An evaluation record's config_sha256, where it has one, is the digest of resolved/evaluate.json."""
    if "config_sha256" in record and record["config_sha256"] != digest(_resolved("evaluate", root)):
        raise InputError(f"{path}: config_sha256 is not the digest of resolved/evaluate.json: an evaluation under "
                         f"other settings; {_fix(path)}")


def _check_checkpoints(path, record, root):
    """Each checkpoint a training record lists lies in its own run's folder (artifacts/ + the record's
    path), with a well-formed sha256 (64 hex digits, not zeros), and where the checkpoint is present
    (DVC's cache checked out; a fresh clone has none) its sha256 is the file's own."""
    run = Path("artifacts", *Path(path).with_suffix("").parts[1:])
    for checkpoint in record.get("checkpoints") or []:
        where, recorded = checkpoint.get("path"), checkpoint.get("sha256")
        if not isinstance(where, str) or Path(where).parent != run:
            raise InputError(f"{path}: checkpoint {str(where)[:80]!r} is not in its run's folder {run}/; "
                             f"{_fix(path)}")
        if not (isinstance(recorded, str) and SHA256.fullmatch(recorded)) or not recorded.strip("0"):
            raise InputError(f"{path}: the sha256 of {where} is {repr(recorded)[:70]}, not a checkpoint's hash; "
                             f"{_fix(path)}")
        if Path(root, where).is_file() and sha256(Path(root, where)) != recorded:
            raise InputError(f"{path}: the sha256 of {where} differs from the checkpoint's own; restore it with "
                             f"`dvc checkout {where} --force`, or {_fix(path)}")


def _fingerprints(trained, training, path, evaluation):
    """(record, what, value) of what no two seeds' runs share: the loss curve, each checkpoint's sha256,
    the figures at every rung."""
    return [(trained, "loss_curve", training.get("loss_curve")),
            *((trained, "checkpoint sha256", c.get("sha256")) for c in training.get("checkpoints") or []),
            (path, "evaluation at every rung (at)", evaluation.get("at"))]


def _check_distinct(runs):
    """No two seeds of a condition hold the same run: a copied record would count one run twice."""
    seen = {}
    for run in runs:
        for path, what, value in _fingerprints(*run):
            key = (what, json.dumps(value, sort_keys=True))
            if value and seen.get(key, path) != path:
                raise InputError(f"{path}: its {what} is that of {seen[key]}: one run recorded twice (a copied "
                                 f"record?); {_fix(path)}")
            seen.setdefault(key, path)


def check_inputs(conditions, root="."):
    """Every training and evaluation record the resolved configuration (resolved/
    conditions.json: seeds, and each condition's study, steps and rungs) expects, present, complete
    and in range, and no other file beside them: each the record of its own run (its condition and
    seed, its condition's resolved settings: _check_config, _check_evaluation_config; its own
    checkpoints: _check_checkpoints; no two seeds one run: _check_distinct), a finished run evaluated
    at every rung it reached, every figure finite and within its range (_check_ranges). Raises
    InputError on the first gap."""
    _check_folders(conditions, root)
    for name, info in conditions["conditions"].items():
        resolved, runs = _resolved(f"pretrain/{info['study']}", root), []
        for folder, seed in runs_of(info, conditions["seeds"]):
            trained = record_pattern(name, "training", folder, seed)
            training = read_record(trained, root)
            _check_fields(trained, training, TRAINING_FIELDS)
            path = record_pattern(name, "evaluation", folder, seed)
            evaluation = read_record(path, root)
            _check_fields(path, evaluation, EVALUATION_FIELDS)
            if (training["condition"], training["seed"]) != (name, seed) or \
                    (evaluation["condition"], evaluation["seed"]) != (name, seed):
                raise InputError(f"{path}: records another run than {name} seed {seed}; {_fix(path)}")
            _check_config(trained, training, name, info["study"], resolved)
            _check_evaluation_config(path, evaluation, root)
            _check_checkpoints(trained, training, root)
            _check_ranges(trained, training, "training")
            _check_ranges(path, evaluation, "evaluation")
            reached = [int(s) for s in training["rung_loss"]] if training["status"] != "ok" else info["rungs"]
            absent = [s for s in reached if str(s) not in evaluation["at"]]
            if absent:
                raise InputError(f"{path}: partial record, no evaluation at step {absent[0]}; {_fix(path)}")
            runs.append((trained, training, path, evaluation))
        _check_distinct(runs)
