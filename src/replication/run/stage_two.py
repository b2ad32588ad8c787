"""Stage 2 of a registered run: the further seeds its sequential rule gives (analysis/claims.yaml:
rules.sequential; judge/sequential.py decides with them).

After stage 1's analysis is committed, `python -m replication sequential --write` writes the rule's choice
to analysis/stage_two.yaml: the further seeds, and the stage-2 studies that run them, each some
chosen conditions of one stage-1 study at some of those seeds (a study's seeds split into parts
where one stage would pass the stage limit), named <study>_stage2 (or _stage2_a, _stage2_b, ...).
resolve turns each into resolved/pretrain/<name>.json (the study's resolved conditions, only those,
at the part's seeds), which the DVC stages pretrain_stage2@<name> and evaluate_stage2@<name> train
and evaluate exactly as stage 1's (dvc.yaml). Their records go to results/pretrain|evaluate/<name>/,
so that stage 1's are never rewritten, and resolved/conditions.json gives each chosen condition its
`runs`: the seeds in each folder.

The choice names the interim analysis it was made from (stage_two.chosen_from: the commit that
wrote stage 1's reports/claims.json, and that file's sha256); cli/sequential.py refuses a second
look and, before every DVC command (cli/check.py), a choice the rule does not give on it.

Before the look the file chooses nothing, and resolve's output is stage 1's alone.
"""
from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationError

from ..io import STAGE_TWO_SUFFIX
from ..schema import Strict, one_line
from .config import Name, ParamsError, Seed, read_yaml

SELECTION = Path("analysis/stage_two.yaml")


class Part(Strict):
    """One stage-2 study: chosen conditions of one stage-1 study, at some of the further seeds."""
    study: Name
    conditions: list[Name]
    seeds: list[Seed]


class Interim(Strict):
    """The interim analysis a choice was made from: the commit that wrote stage 1's reports/claims.json,
    and that file's sha256."""
    commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")]
    claims_json_sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class StageTwo(Strict):
    """analysis/stage_two.yaml's `stage_two`: the interim analysis it was chosen from (none before the
    look), every further seed, and the stage-2 studies by name."""
    chosen_from: Interim | None = None
    seeds: list[Seed]
    studies: dict[Name, Part]          # each a DVC stage's name and its command's argument (dvc.yaml)


def part_names(study, parts):
    """The names of a study's stage-2 studies: <study>_stage2 alone, else _stage2_a, _stage2_b, ..."""
    if parts == 1:
        return [f"{study}{STAGE_TWO_SUFFIX}"]
    return [f"{study}{STAGE_TWO_SUFFIX}_{chr(ord('a') + i)}" for i in range(parts)]


def read_selection(path=SELECTION):
    """analysis/stage_two.yaml as a StageTwo; ParamsError naming the file and key when it is missing
    or malformed: params.yaml's checks of the YAML (config.read_yaml: size, aliases, keys given twice),
    then of the types, and every name against the one name pattern (config.Name)."""
    if not Path(path).is_file():
        raise ParamsError(f"{path}: missing; restore it with `git checkout {path}` (before stage 2 it "
                          "chooses nothing)")
    raw = read_yaml(path)
    if not isinstance(raw, dict) or set(raw) != {"stage_two"}:
        raise ParamsError(f"{path}: expected one key, stage_two (seeds, studies); restore it with "
                          f"`git checkout {path}`")
    try:
        return StageTwo.model_validate(raw["stage_two"])
    except ValidationError as e:
        raise ParamsError(one_line(e, f"{path}: stage_two", sep=".")) from None


def _check(files, selection, path):
    """ParamsError (naming `path`'s key) unless every part reads a stage-1 study's own conditions at
    new seeds among stage_two.seeds, and no condition gets a seed twice."""
    stage_one = files["conditions.json"]["seeds"]
    if set(selection.seeds) & set(stage_one) or len(set(selection.seeds)) < len(selection.seeds):
        raise ParamsError(f"{path}: stage_two.seeds must be new, unique seeds (stage 1 ran "
                          f"{', '.join(map(str, stage_one))}); write the file with "
                          "`python -m replication sequential --write`")
    given = {}
    for name, part in selection.studies.items():
        where = f"{path}: stage_two.studies.{name}"
        first = files.get(f"pretrain/{part.study}.json")
        if first is None or first["study"] != part.study:
            raise ParamsError(f"{where}.study: {part.study} is not a study of params.yaml (pretrain.studies)")
        if f"pretrain/{name}.json" in files:
            raise ParamsError(f"{where}: a study of params.yaml already has this name")
        unknown = [c for c in part.conditions if c not in first["conditions"]]
        if unknown or not part.conditions:
            raise ParamsError(f"{where}.conditions: " + (f"{unknown[0]} is not a condition of {part.study}"
                                                         if unknown else "none"))
        if not part.seeds or not set(part.seeds) <= set(selection.seeds) or len(set(part.seeds)) < len(part.seeds):
            raise ParamsError(f"{where}.seeds: unique seeds among stage_two.seeds")
        for c in part.conditions:
            if twice := set(part.seeds) & given.setdefault(c, set()):
                raise ParamsError(f"{where}: {c} seed {min(twice)} is in another part too")
            given[c] |= set(part.seeds)


def extend(files, selection, path=SELECTION):
    """resolve's files ({path under resolved/: content}, config.resolve) with the stage-2 studies
    added and each chosen condition's `runs` in conditions.json; ParamsError (naming `path`'s key)
    for a selection that does not fit stage 1 (_check)."""
    if not selection.studies:
        return files
    _check(files, selection, path)
    conditions = files["conditions.json"]
    out = {**files, "conditions.json": {**conditions, "conditions": dict(conditions["conditions"])}}
    for name, part in selection.studies.items():
        first = files[f"pretrain/{part.study}.json"]
        out[f"pretrain/{name}.json"] = {**first, "study": name, "seeds": list(part.seeds),
                                        "conditions": {c: first["conditions"][c] for c in part.conditions}}
        for c in part.conditions:
            info = out["conditions.json"]["conditions"][c]
            runs = info.get("runs") or {part.study: list(conditions["seeds"])}
            out["conditions.json"]["conditions"][c] = {**info, "runs": {**runs, name: list(part.seeds)}}
    return out
