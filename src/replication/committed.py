"""The committed files the tools read, checked before a figure is taken from them: every JSON file under
results/ and reports/ parses (read_json: not truncated, no byte-order mark, no NaN or Infinity), and
every number a tool quotes lies in its physical range: reports/stage_times.json (tools.timing writes
it; tools.repro and tools.readme read its times) and the training records' wall_s and steps_done
(run/train.py writes them; README quotes the times). A malformed file is one line naming the file
and the key (FileError), and restoring the committed file is the fix; nothing is written.
"""
import json
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from .io import inside
from .run.config import MAX_STEPS
from .schema import one_line

STAGE_TIMES = Path("reports/stage_times.json")
COMMITTED_JSON = ("results", "reports")
TRAINING_RECORD = re.compile(r"results/pretrain/[^/]+/[^/]+/seed_\d+\.json")   # run/train.py's records
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
    """One stage's entry in reports/stage_times.json (tools.timing.record_stages)."""
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
