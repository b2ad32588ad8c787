"""Stage 2 of a registered run: the further seeds its sequential rule gives (analysis/claims.yaml:
rules.sequential; judge/sequential.py decides with them).

After stage 1's analysis is committed, `python -m tools.sequential --write` writes the rule's choice
to analysis/stage_two.yaml: the seeds stage 2 adds and, per study, the conditions that get them,
under the name <study>_stage2. resolve turns each into a study of its own,
resolved/pretrain/<study>_stage2.json (the study's resolved conditions, only those, at stage 2's
seeds), which the DVC stages pretrain_stage2@<study>_stage2 and evaluate_stage2@<study>_stage2
train and evaluate exactly as stage 1's (dvc.yaml). Their records go to
results/pretrain|evaluate/<study>_stage2/, so that stage 1's are never rewritten, and
resolved/conditions.json gives each selected condition its `runs`: the seeds in each folder.

Before the look the file selects nothing, and resolve's output is stage 1's alone.
"""
from pathlib import Path

import yaml
from pydantic import ValidationError

from ..io import load_yaml
from ..schema import Strict, one_line
from .config import ParamsError, Seed, check_name

SELECTION = Path("analysis/stage_two.yaml")
SUFFIX = "_stage2"           # <study>_stage2: stage 2's study, DVC stages and record folders


class StageTwo(Strict):
    """analysis/stage_two.yaml's `stage_two`: the seeds stage 2 adds, and per stage-2 study
    (<study>_stage2) the conditions of <study> that get them."""
    seeds: list[Seed]
    studies: dict[str, list[str]]


def folder_of(study):
    """The study (and record folder, and DVC stage key) holding a stage-1 study's stage-2 seeds."""
    return f"{study}{SUFFIX}"


def read_selection(path=SELECTION):
    """analysis/stage_two.yaml as a StageTwo; ParamsError naming the file and key when it is missing
    or malformed."""
    try:
        raw = load_yaml(Path(path).read_text(encoding="utf-8"))
    except OSError:
        raise ParamsError(f"{path}: missing; restore it with `git checkout {path}` (before stage 2 it "
                          "selects nothing)") from None
    except yaml.YAMLError as e:
        raise ParamsError(f"{path}: not YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(raw, dict) or set(raw) != {"stage_two"}:
        raise ParamsError(f"{path}: expected one key, stage_two (seeds, studies); restore it with "
                          f"`git checkout {path}`")
    try:
        selection = StageTwo.model_validate(raw["stage_two"])
    except ValidationError as e:
        raise ParamsError(one_line(e, f"{path}: stage_two", sep=".")) from None
    return selection


def extend(files, selection, path=SELECTION):
    """resolve's files ({path under resolved/: content}, config.resolve) with stage 2's studies
    added and each selected condition's `runs` in conditions.json; ParamsError (naming `path`'s
    key) for a study or condition that stage 1 does not have, or a seed stage 1 already ran."""
    if not selection.studies:
        return files
    conditions = files["conditions.json"]
    taken = set(selection.seeds) & set(conditions["seeds"])
    if taken or not selection.seeds or len(set(selection.seeds)) < len(selection.seeds):
        raise ParamsError(f"{path}: stage_two.seeds must be new, unique seeds (stage 1 ran "
                          f"{', '.join(map(str, conditions['seeds']))}); write the file with "
                          "`python -m tools.sequential --write`")
    out = {**files, "conditions.json": {**conditions, "conditions": dict(conditions["conditions"])}}
    for name, chosen in selection.studies.items():
        check_name(name, f"{path}: stage_two.studies.{name}")
        study = name.removesuffix(SUFFIX)
        first = files.get(f"pretrain/{study}.json")
        if not name.endswith(SUFFIX) or first is None:
            raise ParamsError(f"{path}: stage_two.studies.{name}: not <study>{SUFFIX} for a study of params.yaml "
                              "(pretrain.studies)")
        unknown = [c for c in chosen if c not in first["conditions"]]
        if unknown or not chosen:
            raise ParamsError(f"{path}: stage_two.studies.{name}: "
                              + (f"{unknown[0]} is not a condition of {study}" if unknown else "no conditions"))
        out[f"pretrain/{name}.json"] = {**first, "study": name, "seeds": list(selection.seeds),
                                        "conditions": {c: first["conditions"][c] for c in chosen}}
        for c in chosen:
            out["conditions.json"]["conditions"][c] = {**conditions["conditions"][c], "runs": {
                study: list(conditions["seeds"]), name: list(selection.seeds)}}
    return out
