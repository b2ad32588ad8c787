"""The claims registry's schema (analysis/claims.yaml): what a claim may say, checked before any
claim is judged.

Rule: a registry entry is valid only when every key is known for its kind, every value has its
type and range (margins and tolerances >= 0, `direction` and `kind` from their lists, ids unique
and from [a-z0-9-]), every condition it names is defined in params.yaml, and every key it reads
from a pipeline record exists in that record's schema (EVALUATION_KEY, TRAINING_KEY). A YAML key
written twice is an error. A mistake gives one line naming the claim id, the key and what is
allowed (RegistryError); nothing is judged or written.
"""
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .io import load_yaml

Verdict = Literal["reproduced", "contradicted", "no meaningful effect", "inconclusive", "not testable here",
                  "exact match", "within bound", "mismatch", "not tested"]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
ClaimId = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$")]

# The sections that hold the three documents' own printed examples and analytic facts; every other
# section holds results of the literature that the documents quote.
DOCUMENT_SECTIONS = {"ntxent-example", "tiny-simclr", "toy2d", "analytic"}

_METRIC = (r"(h|z)\.(alignment|uniformity|linear|linear_full|knn|knn_centred|wknn|tolerance|tolerance_centred|"
           r"rotation|rotation_mlp|colour)")
EVALUATION_KEY = re.compile(rf"^(eval|control|at\.(\{{step\}}|\{{rung:\d+\}}|\d+))\.({_METRIC}|contrastive_top1)$")
TRAINING_KEY = re.compile(r"^(status|loss|steps_done|rung_loss\.(\{step\}|\d+)|learned_scalars\.\w+)$")


class RegistryError(Exception):
    """A registry that cannot be judged as written; str(e) is the one line to print."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Spec(Strict):
    """Where a measurement is: {file, key} one value; {files: glob(s), key} one per run; {file,
    select, where, key} one per selected record; `ratio` / `difference` of two paths instead of
    `key`; {minus: [a, b]}, {spread: [...]}, {best_of: [...]} combine specs seed by seed."""
    file: str | None = None
    files: str | list[str] | None = None
    select: str | None = None
    where: dict[str, Any] | None = None
    key: str | None = None
    ratio: Annotated[list[str], Field(min_length=2, max_length=2)] | None = None
    difference: Annotated[list[str], Field(min_length=2, max_length=2)] | None = None
    minus: Annotated[list["Spec"], Field(min_length=2, max_length=2)] | None = None
    spread: Annotated[list["Spec"], Field(min_length=2)] | None = None
    best_of: Annotated[list["Spec"], Field(min_length=2)] | None = None

    @model_validator(mode="after")
    def _one_source(self):
        sources = [k for k in ("file", "files", "minus", "spread", "best_of") if getattr(self, k) is not None]
        if len(sources) != 1:
            raise ValueError("give exactly one of file, files, minus, spread, best_of")
        if sources[0] in ("file", "files"):
            reads = [k for k in ("key", "ratio", "difference") if getattr(self, k) is not None]
            if len(reads) > 1:
                raise ValueError("give one of key, ratio, difference")
        return self


class Amendment(Strict):
    date: Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$")]
    what: str
    why: str
    previous_verdict: Verdict | Literal["none (new claim)"]
    post_registration: bool = False


class Claim(Strict):
    id: ClaimId
    section: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$")]
    source: str
    statement: str
    published: Any
    metric: str
    amended: list[Amendment] = []
    scale_note: str | None = None
    not_testable: str | None = None          # measured and shown, judged `not testable here`
    calibrated: str | None = None            # the setup was tuned to this figure: says how
    realisation: str | None = None           # judged against float realisations of one seed: says which
    published_effect: str | None = None
    # the published effect in the unit of our effect (before effect_scale), one per b arm or one for all
    published_effect_value: Annotated[float, Field(allow_inf_nan=False)] | \
        list[Annotated[float, Field(allow_inf_nan=False)]] | None = None
    effect_scale: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 1.0
    effect_unit: str = ""

    @model_validator(mode="before")
    @classmethod
    def _amended_as_list(cls, data):
        if isinstance(data, dict) and isinstance(data.get("amended"), dict):
            data = {**data, "amended": [data["amended"]]}
        return data


class Exact(Claim):
    kind: Literal["exact"]
    tolerance: NonNegative = 0.0
    measured: Spec


class Bound(Claim):
    kind: Literal["bound"]
    at_most: Annotated[float, Field(allow_inf_nan=False)] | None = None
    at_least: Annotated[float, Field(allow_inf_nan=False)] | None = None
    measured: Spec

    @model_validator(mode="after")
    def _a_bound(self):
        if self.at_most is None and self.at_least is None:
            raise ValueError("give at_most, at_least or both")
        return self


class Range(Claim):
    kind: Literal["range"]
    range: Annotated[list[float], Field(min_length=2, max_length=2)]
    tolerance: NonNegative = 0.0
    measured: Spec


def _reads_a_value(arms):
    for name, spec in arms.items():
        for where, leaf in _leaves(f"arms.{name}", spec):
            if leaf.key is None and leaf.ratio is None and leaf.difference is None:
                raise ValueError(f"{where}: give one of key, ratio, difference")
    return arms


class Interval(Claim):
    kind: Literal["interval"]
    range: Annotated[list[float], Field(min_length=2, max_length=2)]
    arms: Annotated[dict[str, Spec], Field(min_length=1)]

    @model_validator(mode="after")
    def _values(self):
        _reads_a_value(self.arms)
        return self


class SingleRun(Claim):
    kind: Literal["single_run"]
    tolerance: NonNegative = 0.0
    realisations: Spec


class Paired(Claim):
    kind: Literal["paired"]
    a: str
    b: str | Annotated[list[str], Field(min_length=1)]
    direction: Literal["greater", "less", "equal"]   # equal: predicts no effect beyond +-margin
    margin: NonNegative
    arms: Annotated[dict[str, Spec], Field(min_length=2)]
    ladder: bool = False
    reference: list[str] | None = None       # arms that must have trained (default: the b arms)
    basis: Literal["equal steps", "equal images", "equal updates", "equal encoder passes"] = "equal steps"

    @property
    def bs(self):
        return self.b if isinstance(self.b, list) else [self.b]

    @model_validator(mode="after")
    def _basis_pairs_two_runs(self):
        """A ladder claim judged at a compute basis pairs one rung of a with one of b: two arms, each
        one condition's runs (robustness.matched_steps)."""
        if self.ladder and self.basis not in ("equal steps", "equal updates"):
            plain = all(isinstance(spec.files, str) for spec in self.arms.values())
            if len(self.bs) != 1 or len(self.arms) != 2 or not plain:
                raise ValueError(f"basis: '{self.basis}' on a ladder needs two arms, a and one b, each "
                                 "reading one condition's files")
        return self

    @model_validator(mode="after")
    def _arms_named(self):
        _reads_a_value(self.arms)
        if isinstance(self.published_effect_value, list) and len(self.published_effect_value) != len(self.bs):
            raise ValueError("published_effect_value: give one number, or one per b arm")
        for name in [self.a, *self.bs, *(self.reference or [])]:
            if name not in self.arms:
                raise ValueError(f"arm {name!r} is not in arms ({', '.join(self.arms)})")
        return self


class Collapse(Strict):
    runs: Spec
    above: Annotated[float, Field(allow_inf_nan=False)]
    avoided_by: Spec | None = None


class Failure(Claim):
    kind: Literal["failure"]
    runs: Spec
    at: Literal["budget", "top"] = "budget"
    collapse: Collapse | None = None
    reference: Spec | None = None            # a condition that must train by the same step


class Correlation(Claim):
    kind: Literal["correlation"]
    runs: Spec
    x: str | Annotated[list[str], Field(min_length=2, max_length=2)]   # two: each given the other (jointly)
    y: str
    direction: Literal["greater", "less"]
    margin: NonNegative


class NotTested(Claim):
    kind: Literal["not_tested"]
    reason: Annotated[str, Field(min_length=1)]


KINDS = {m.model_fields["kind"].annotation.__args__[0]: m
         for m in (Exact, Bound, Range, Interval, SingleRun, Paired, Failure, Correlation, NotTested)}


class Robustness(Strict):
    """The registered alternatives every paired claim is re-judged under (robustness.py)."""
    probes: list[Literal["linear", "knn", "knn_centred", "wknn", "linear_full"]]
    rungs: Literal["last doubling", "none"]
    bases: list[Literal["equal steps", "equal images", "equal encoder passes"]]
    multiplicity: list[Literal["bh"]]


class Rules(Strict):
    control_error_removed: Fraction          # trained: its gain removes at least this share of the control's error
    max_seeds: Annotated[int, Field(ge=2)]
    failure_loss_fraction: Fraction
    alpha: Annotated[float, Field(gt=0, lt=0.5)]          # each one-sided test's level
    convergence_fraction: NonNegative        # converged: moved less than this x margin over the last doubling
    robustness: Robustness


def _one_line(error, where):
    """The first error as one line; an unknown key first (a misspelt key is also a missing one)."""
    errors = error.errors()
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown key"
    elif err["type"] == "literal_error":
        msg = msg.replace("Input should be", "must be")
    shown = repr(err.get("input"))
    got = "" if err["type"] in ("missing", "extra_forbidden") else \
        f" (got {shown if len(shown) <= 80 else shown[:77] + '...'})"
    return f"{where}{': ' + loc if loc else ''}: {msg}{got}"


def _claim(raw, path):
    where = f"{path}: claim {raw.get('id', '?') if isinstance(raw, dict) else '?'}"
    if not isinstance(raw, dict):
        raise RegistryError(f"{where}: must be a mapping")
    model = KINDS.get(raw.get("kind"))
    if model is None:
        raise RegistryError(f"{where}: kind: must be one of {', '.join(sorted(KINDS))} (got {raw.get('kind')!r})")
    try:
        return model(**raw)
    except ValidationError as e:
        raise RegistryError(_one_line(e, where)) from None


def specs(claim):
    """(where, spec) of every measurement a claim reads, nested parts included."""
    found = []
    for key in ("measured", "realisations", "runs", "reference"):
        if isinstance(getattr(claim, key, None), Spec):
            found.append((key, getattr(claim, key)))
    for name, spec in (getattr(claim, "arms", None) or {}).items():
        found.append((f"arms.{name}", spec))
    if getattr(claim, "collapse", None):
        found += [(f"collapse.{k}", s) for k in ("runs", "avoided_by") if (s := getattr(claim.collapse, k))]
    return [(w, leaf) for where, spec in found for w, leaf in _leaves(where, spec)]


def _leaves(where, spec):
    parts = spec.minus or spec.spread or spec.best_of
    if parts:
        return [leaf for i, part in enumerate(parts) for leaf in _leaves(f"{where}.{i}", part)]
    return [(where, spec)]


def _check_reads(claim, conditions, path):
    """Conditions that exist, and keys that exist in the schema of the records they read."""
    for where, spec in specs(claim):
        patterns = spec.files if isinstance(spec.files, list) else [spec.files or spec.file]
        for pattern in patterns:
            parts = Path(pattern).parts
            if len(parts) > 3 and parts[1] in ("pretrain", "evaluate", "control"):
                if conditions is not None and "*" not in parts[3] and parts[3] not in conditions:
                    raise RegistryError(f"{path}: claim {claim.id}: {where}: condition {parts[3]!r} is not defined "
                                        "in params.yaml (pretrain.studies); fix the pattern or add the condition")
                schema = TRAINING_KEY if parts[1] == "pretrain" else EVALUATION_KEY
                keys = [spec.key] if spec.key else (spec.ratio or spec.difference or [])
                if isinstance(claim, Correlation):
                    keys = [*keys, *(claim.x if isinstance(claim.x, list) else [claim.x]), claim.y]
                for key in keys:
                    if not schema.match(key):
                        raise RegistryError(f"{path}: claim {claim.id}: {where}.key: {key!r} is not a field of "
                                            f"a {parts[1]} record (pattern {schema.pattern})")


def load_registry(path="analysis/claims.yaml", conditions=None):
    """(rules, claims) of the registry: a Rules object and a list of validated claims as plain dicts
    (defaults filled in). With `conditions` (names params.yaml defines), every condition a claim
    names is checked too. Raises RegistryError with one line."""
    try:
        registry = load_yaml(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RegistryError(f"{path}: file not found") from None
    except UnicodeDecodeError:
        raise RegistryError(f"{path}: not UTF-8 text") from None
    except Exception as e:                     # yaml.YAMLError, DuplicateKeyError
        raise RegistryError(f"{path}: not valid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(registry, dict) or set(registry) != {"rules", "claims"} or \
            not isinstance(registry["claims"], list) or not isinstance(registry["rules"], dict):
        raise RegistryError(f"{path}: expected exactly two keys, `rules` (a mapping) and `claims` (a list)")
    try:
        rules = Rules(**registry["rules"])
    except ValidationError as e:
        raise RegistryError(_one_line(e, f"{path}: rules")) from None
    claims = [_claim(raw, path) for raw in registry["claims"]]
    seen = set()
    for claim in claims:
        if claim.id in seen:
            raise RegistryError(f"{path}: claim {claim.id}: id: used twice; ids must be unique")
        seen.add(claim.id)
        _check_reads(claim, conditions, path)
    return rules.model_dump(), [c.model_dump(exclude_none=True) for c in claims]


def validate_claim(raw):
    """One claim as a dict with defaults filled in (tests and judge() on a single claim)."""
    return _claim(raw, "claim").model_dump(exclude_none=True)
