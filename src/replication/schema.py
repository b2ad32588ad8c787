"""The strict-schema base that params.yaml (run/config.py) and analysis/claims.yaml (judge/
registry.py) share: no coercion, no unknown key, no infinity or NaN, and every validation error
given as one short line."""
from pydantic import BaseModel, ConfigDict

SHOWN = 80          # characters of an offending value quoted in an error line


class Strict(BaseModel):
    """No coercion ('0.2' is not a number, 'yes' not a flag), no infinity or NaN, no unknown key."""
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


def excerpt(value):
    """A value's repr cut to SHOWN characters, so that an error line stays one short line."""
    shown = repr(value)
    return shown if len(shown) <= SHOWN else shown[:SHOWN - 3] + "..."


def one_line(error, where, sep=": ", allowed=None):
    """The first error of a pydantic ValidationError as 'where<sep>key.path: what is wrong (got
    ...)'; an unknown key first (a misspelt key is also a missing one). allowed(loc) may name the
    keys allowed beside an unknown one."""
    errors = error.errors()
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = [str(p) for p in err["loc"] if not str(p).startswith("function-") and p != "__root__"]
    key = sep.join(part for part in (where, ".".join(loc)) if part) or "(top level)"
    if err["type"] == "extra_forbidden":
        names = allowed(loc[:-1]) if allowed else []
        return f"{key}: unknown key" + (f"; allowed: {', '.join(names)}" if names else "")
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "literal_error":
        msg = msg.replace("Input should be", "must be")
    got = "" if err["type"] == "missing" else f" (got {excerpt(err.get('input'))})"
    return f"{key}: {msg}{got}"
