"""The one reader of the judging: every result file, read once into a snapshot (Results), after a
check that the inputs are complete (check_inputs).

Every judging function takes the snapshot (`results`) and a claim, never a folder: it looks a record
up (Results.record, with read_record's InputError for a missing, empty or corrupt file) and lists
the records a pattern matches (Results.glob), so that no two looks at one file can differ.

Rule: a claim is judged only on complete inputs. Every run the resolved configuration expects
(study x condition x seed) must have its training and evaluation record with the fields judging
reads; a missing, empty, truncated or partial record stops the analysis with one line naming the
file and the `dvc repro` command that rewrites it (InputError).
"""
import fnmatch
import glob
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..io import digest, read_json, run_digest, sha256
from .measure import FOLDERS, InputError, fix, record_pattern, runs_of
from .probes import ACCURACIES

TRAINING_FIELDS = ("condition", "seed", "status", "config", "rung_loss", "loss")
EVALUATION_FIELDS = ("condition", "seed", "status", "rungs", "at", "eval", "control", "bn", "control_uncalibrated")


def read_record(path, root="."):
    """A result file's JSON object; anything else raises InputError naming the file and the fix."""
    try:
        record = read_json(Path(root) / path)
    except FileNotFoundError:
        raise missing(path) from None
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot be read ({type(e).__name__}: empty, truncated or corrupted?); "
                         f"{fix(path)}") from None
    if not isinstance(record, dict) or not record:
        raise InputError(f"{path}: empty record; {fix(path)}")
    return record


def missing(path):
    """The InputError of a result file that is not there."""
    return InputError(f"{path}: missing; {fix(path)}")


# ---------------------------------------------------------------- complete inputs
def _check_fields(path, record, fields):
    missing = [f for f in fields if f not in record]
    if missing:
        raise InputError(f"{path}: partial record, no field {missing[0]!r}; {fix(path)}")


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
                raise InputError(f"{path}: {where} is {shown}, not a finite number; {fix(path)}")
            least, most, what = RANGES.get(where.rsplit(".", 1)[-1], (-math.inf, math.inf, ""))
            if not least <= value <= most:
                raise InputError(f"{path}: {where} = {value:g}, {what} outside [{least}, {most}]; {fix(path)}")


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
                         f"a record of another run; {fix(path)}")
    for key, value in settings.items():
        if config.get(key, "(missing)") != value:
            raise InputError(f"{path}: config.{key} is {str(config.get(key, '(missing)'))[:40]}, the resolved "
                             f"configuration says {str(value)[:40]} ({source}): a record of another run; {fix(path)}")


def _check_evaluation_config(path, record, root):
    """An evaluation record's config_sha256, where it has one, is the digest of resolved/evaluate.json."""
    if "config_sha256" in record and record["config_sha256"] != digest(_resolved("evaluate", root)):
        raise InputError(f"{path}: config_sha256 is not the digest of resolved/evaluate.json: an evaluation under "
                         f"other settings; {fix(path)}")


def _check_checkpoints(path, record, root):
    """Each checkpoint a training record lists lies in its own run's folder (artifacts/ + the record's
    path), with a well-formed sha256 (64 hex digits, not zeros), and where the checkpoint is present
    (DVC's cache checked out; a fresh clone has none) its sha256 is the file's own."""
    run = Path("artifacts", *Path(path).with_suffix("").parts[1:])
    for checkpoint in record.get("checkpoints") or []:
        where, recorded = checkpoint.get("path"), checkpoint.get("sha256")
        if not isinstance(where, str) or Path(where).parent != run:
            raise InputError(f"{path}: checkpoint {str(where)[:80]!r} is not in its run's folder {run}/; "
                             f"{fix(path)}")
        if not (isinstance(recorded, str) and SHA256.fullmatch(recorded)) or not recorded.strip("0"):
            raise InputError(f"{path}: the sha256 of {where} is {repr(recorded)[:70]}, not a checkpoint's hash; "
                             f"{fix(path)}")
        if Path(root, where).is_file() and sha256(Path(root, where)) != recorded:
            raise InputError(f"{path}: the sha256 of {where} differs from the checkpoint's own; restore it with "
                             f"`dvc checkout {where} --force`, or {fix(path)}")


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
                                 f"record?); {fix(path)}")
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
                raise InputError(f"{path}: records another run than {name} seed {seed}; {fix(path)}")
            _check_config(trained, training, name, info["study"], resolved)
            _check_evaluation_config(path, evaluation, root)
            _check_checkpoints(trained, training, root)
            _check_ranges(trained, training, "training")
            _check_ranges(path, evaluation, "evaluation")
            reached = [int(s) for s in training["rung_loss"]] if training["status"] != "ok" else info["rungs"]
            absent = [s for s in reached if str(s) not in evaluation["at"]]
            if absent:
                raise InputError(f"{path}: partial record, no evaluation at step {absent[0]}; {fix(path)}")
            runs.append((trained, training, path, evaluation))
        _check_distinct(runs)


# ---------------------------------------------------------------- the snapshot

def study_of(root="."):
    """{condition: its study} (resolved/conditions.json), so that a stage-2 folder's records count
    under their condition's study; {} without the file (then the folder names the study)."""
    path = Path(root, "resolved", "conditions.json")
    return {name: info["study"] for name, info in read_json(path)["conditions"].items()} if path.exists() else {}


@dataclass(frozen=True)
class Results:
    """The files under one folder (results/): each path's JSON object or the InputError message
    reading it gave (`records`, by posix path relative to the repository), and each condition's
    study (`studies`: study_of)."""
    records: dict
    studies: dict

    @classmethod
    def load(cls, root=".", folder="results", conditions=None):
        """Every file under root/folder read (read_record; symlinked folders not followed), after
        check_inputs where the resolved `conditions` are given."""
        if conditions is not None:
            check_inputs(conditions, root)
        records = {}
        for top, folders, names in os.walk(Path(root, folder)):
            folders.sort()
            for name in sorted(names):
                path = Path(top, name).relative_to(root).as_posix()
                try:
                    records[path] = read_record(path, root)
                except InputError as e:
                    records[path] = str(e)
        return cls(records, study_of(root))

    def record(self, path):
        """A result file's JSON object; InputError naming the file and the fix, as read_record."""
        found = self.records.get(PurePosixPath(path).as_posix())
        if found is None:
            raise missing(path)
        if isinstance(found, str):
            raise InputError(found)
        return found

    def glob(self, pattern):
        """The files a glob pattern matches, sorted, as glob.glob(pattern, root_dir=root) finds them:
        a wildcard stays within one name, and matches a name with a leading '.' only where it has one."""
        wanted = pattern.split("/")
        return sorted(path for path in self.records if _matches(path.split("/"), wanted))


def _matches(names, patterns):
    return len(names) == len(patterns) and all(
        fnmatch.fnmatchcase(name, pattern) and not (name.startswith(".") and glob.has_magic(pattern)
                                                   and not pattern.startswith("."))
        for name, pattern in zip(names, patterns))
