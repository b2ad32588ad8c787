"""The committed files the tools read, checked before a figure is taken from them: every JSON file under
results/ and reports/ parses (read_json: not truncated, no byte-order mark, no NaN or Infinity), and
every number a tool quotes lies in its physical range: reports/stage_times.json (cli.timing writes
it; cli.repro and cli.readme read its times) and the training records' wall_s and steps_done
(run/train.py writes them; README quotes the times). A malformed file is one line naming the file
and the key (FileError), and restoring the committed file is the fix; nothing is written.
"""
import json
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from .io import inside
from .run.config import MAX_STEPS, ParamsError, read_yaml
from .schema import one_line

STAGE_TIMES = Path("reports/stage_times.json")
COMMITTED_JSON = ("results", "reports")
TRAINING_RECORD = re.compile(r"results/pretrain/[^/]+/[^/]+/seed_\d+\.json")   # run/train.py's records
LOCK = Path("dvc.lock")
LOCK_MAX_BYTES = 20_000_000     # DVC's record of every stage: 357 kB for run 3's 150 stages
MAX_SECONDS = 30 * 24 * 3600    # a month: far above any stage or run of any profile (the longest, hours)


class FileError(Exception):
    """A committed file that cannot be used; str(e) is the one line to print."""


def _restore(path):
    return f"restore it with `git checkout -- {path}`"


def _reject(constant):
    raise ValueError(f"{constant} is not a number JSON allows")


def read_json(path):
    """A JSON file's value, or FileError naming it: unreadable, a byte-order mark, truncated or not
    JSON (with the line), NaN or Infinity (json.loads would take them)."""
    try:
        data = inside(path).read_bytes()
    except OSError as e:
        raise FileError(f"{path}: cannot be read ({e.strerror or e}); {_restore(path)}") from None
    if data.startswith(b"\xef\xbb\xbf"):
        raise FileError(f"{path}: starts with a byte-order mark; save it as UTF-8 without one, or {_restore(path)}")
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject)
    except UnicodeDecodeError as e:
        raise FileError(f"{path}: not UTF-8 text (byte {e.start}); {_restore(path)}") from None
    except json.JSONDecodeError as e:
        raise FileError(f"{path}: not valid JSON at line {e.lineno} ({e.msg}: truncated?); {_restore(path)}") from None
    except ValueError as e:
        raise FileError(f"{path}: {e}; {_restore(path)}") from None


class Figures(BaseModel):
    """The checked figures of a file that holds more (strict: no text for a number, no NaN)."""
    model_config = ConfigDict(extra="ignore", strict=True, allow_inf_nan=False, frozen=True)


Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS)]


class StageTime(Figures):
    """One stage's entry in reports/stage_times.json (cli.timing.record_stages)."""
    seconds: Seconds
    seconds_in_dvc: Seconds
    cpu: str
    precision: Literal["fp32", "bf16"]
    date: str
    run: Annotated[int, Field(ge=1)] | None = None

    @model_validator(mode="after")
    def _dvc_within_the_stage(self):
        if self.seconds_in_dvc > self.seconds:
            raise ValueError(f"seconds_in_dvc ({self.seconds_in_dvc}) must not exceed seconds ({self.seconds})")
        return self


class TrainingTimes(Figures):
    """The time and steps of a training record (results/pretrain/<study>/<condition>/seed_<n>.json)."""
    wall_s: Seconds
    steps_done: Annotated[int, Field(ge=0, le=MAX_STEPS)]


def checked(path, value, schema):
    """`value`, read from `path`, when `schema` (a model, or a type such as dict[str, model]) accepts
    it; else FileError naming the file and the key."""
    try:
        TypeAdapter(schema).validate_python(value)
    except ValidationError as e:
        raise FileError(f"{one_line(e, str(path))}; {_restore(path)}") from None
    return value


def read_stage_times(path=STAGE_TIMES):
    """reports/stage_times.json, every entry checked (StageTime); {} where there is none yet."""
    return checked(path, read_json(path), dict[str, StageTime]) if Path(path).exists() else {}


def read_training(path):
    """A training record, its times checked (TrainingTimes)."""
    return checked(path, read_json(path), TrainingTimes)


def read_lock(path=LOCK):
    """dvc.lock (DVC writes it; cli.repro and cli.relock read its stages), with the YAML checks of
    params.yaml (run/config.read_yaml: size, aliases, keys given twice) and its shape (a mapping of
    stages, each a mapping); {} where there is none yet. FileError (one line) otherwise."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        lock = read_yaml(path, max_bytes=LOCK_MAX_BYTES)
    except ParamsError as e:
        raise FileError(str(e) if "git checkout" in str(e) else f"{e}; {_restore(path)}") from None
    stages = lock.get("stages") if isinstance(lock, dict) else None
    if not isinstance(stages, dict) or not all(isinstance(s, dict) for s in stages.values()):
        raise FileError(f"{path}: expected `stages:`, a mapping of DVC stages, each a mapping; {_restore(path)}")
    return lock


def check_committed(tops=COMMITTED_JSON):
    """Every JSON file under `tops` read (read_json), and the figures of reports/stage_times.json and
    of every training record checked: a damaged committed file stops a make entry in one line, not a
    stage minutes later in a traceback, nor a figure in README."""
    for top in map(Path, tops):
        for path in sorted(top.rglob("*.json")) if top.is_dir() else ():
            value = read_json(path)
            if path == STAGE_TIMES:
                checked(path, value, dict[str, StageTime])
            elif TRAINING_RECORD.fullmatch(path.as_posix()):
                checked(path, value, TrainingTimes)
