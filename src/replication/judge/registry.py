"""The claims registry's schema (analysis/claims.yaml, its claims; analysis/rules.yaml, the rules,
sections and amendments they share): what a claim may say, checked before any claim is judged.

Rule: a registry entry is valid only when every key is known for its kind, every value has its
type and range (margins and tolerances >= 0, `direction` and `kind` from their lists, ids unique
and from [a-z0-9-]), every condition it names is defined in params.yaml (in the study it names, if
any), and every key it reads from a pipeline record exists in that record's schema (EVALUATION_KEY,
TRAINING_KEY). A study named in `studies` that params.yaml does not define reads no runs, as a
population registered before its study was renamed does; a population named by its `conditions`
names each one that params.yaml defines. A positive control belongs to a claim of no effect only;
the sequential rule (`rules.sequential`) is optional, and absent from the rules when not given, so
that the rules registered without it keep their digest. A YAML key written twice is an error. A mistake gives one line naming the claim id, the key and what is
allowed (RegistryError); nothing is judged or written.
"""
import datetime
import re
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import AfterValidator, Field, ValidationError, model_serializer, model_validator

from ..io import load_yaml
from ..schema import Strict, one_line
from .measure import EVALUATION_KEY, TRAINING_KEY, patterns, record_of
from .probes import PANEL
from .verdicts import ORIGINS, VERDICTS

Verdict = Literal[VERDICTS]
Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$")]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
ClaimId = Slug


class RegistryError(Exception):
    """A registry that cannot be judged as written; str(e) is the one line to print."""


SOURCES = ("file", "files", "condition", "conditions", "studies", "minus", "spread", "best_of")   # where a spec reads
NAMING_RUNS = ("file", "files", "condition", "conditions", "studies")      # the sources that read records


class Spec(Strict):
    """Where a measurement is: {file, key} one value; {files: glob(s), key} one per run; {condition:
    name or study/name, key} one per run of a condition; {conditions: [...]} every run of those
    conditions; {studies: [...]} every run of those studies (measure.in_path_form); {file, select, where, key} one per selected record; `ratio` /
    `difference` of two paths instead of `key`; {minus: [a, b]}, {spread: [...]}, {best_of: [...]}
    combine specs seed by seed."""
    file: str | None = None
    files: str | list[str] | None = None
    condition: Annotated[str, Field(pattern=r"^([\w-]+/)?[\w-]+$")] | None = None
    conditions: Annotated[list[Annotated[str, Field(pattern=r"^[\w-]+$")]], Field(min_length=1)] | None = None
    studies: Annotated[list[Annotated[str, Field(pattern=r"^[\w-]+$")]], Field(min_length=1)] | None = None
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
        sources = [k for k in SOURCES if getattr(self, k) is not None]
        if len(sources) != 1:
            raise ValueError(f"give exactly one of {', '.join(SOURCES)}")
        if sources[0] in NAMING_RUNS:
            reads = [k for k in ("key", "ratio", "difference") if getattr(self, k) is not None]
            if len(reads) > 1:
                raise ValueError("give one of key, ratio, difference")
        return self


def _real_date(text):
    """An ISO date that exists and is not after today (an amendment cannot be dated in the future)."""
    try:
        day = datetime.date.fromisoformat(text)
    except ValueError:
        raise ValueError("not a real date (YYYY-MM-DD)") from None
    if day > datetime.date.today():
        raise ValueError(f"dated after today ({datetime.date.today().isoformat()})")
    return text


Date = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$"), AfterValidator(_real_date)]


class Section(Strict):
    """A section of the report: its claims, in the order of `sections:`. `document` sections hold
    the three documents' own printed examples and analytic facts; `literature` sections the
    published results they quote."""
    id: Slug
    title: Annotated[str, Field(min_length=1)]
    short: Annotated[str, Field(min_length=1)]          # its name in the report's contents
    origin: Literal["document", "literature"]


class AmendmentText(Strict):
    """What changed and why, written once under `amendments:` and named by its id from each claim."""
    date: Date
    what: str
    why: str
    post_registration: bool = False
    registration: Annotated[int, Field(ge=1)] = 1     # the registered run whose record it amends
    withdraws: list[Slug] = []           # registered claims this amendment removes from the registry


class Amendment(Strict):
    date: Date
    what: str
    why: str
    previous_verdict: Verdict | Literal["none (new claim)"]
    post_registration: bool = False
    registration: Annotated[int, Field(ge=1)] = 1     # the registered run whose record it amends

    @model_serializer(mode="wrap")
    def _first_run_unwritten(self, handler):
        """Written out without `registration` when it is 1, as before the field existed (the first
        run's reports/claims.json stays byte for byte); readers take a missing one as 1."""
        out = handler(self)
        if out.get("registration") == 1:
            del out["registration"]
        return out


class AmendmentRef(Strict):
    """A claim's use of a shared amendment: its id and the verdict the claim had before it."""
    ref: Slug
    previous_verdict: Verdict | Literal["none (new claim)"]


class Claim(Strict):
    id: ClaimId
    section: Slug
    source: str
    statement: str
    published: Any
    metric: str
    amended: list[Amendment] = []
    scale_note: str | None = None
    not_testable: str | None = None          # measured and shown, judged verdicts.NOT_TESTABLE
    calibrated: str | None = None            # the setup was tuned to this figure: says how
    realisation: str | None = None           # judged against float realisations of one seed: says which
    published_effect: str | None = None
    # the published effect in the unit of our effect (before effect_scale), one per b arm or one for all
    published_effect_value: Annotated[float, Field(allow_inf_nan=False)] | \
        list[Annotated[float, Field(allow_inf_nan=False)]] | None = None
    effect_scale: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 1.0
    effect_unit: str = ""
    origin: Literal[tuple(ORIGINS)] | None = None    # who makes the claim, where not its section's origin

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


class FreeParameter(Strict):
    """A setting of a reconstruction that the documents leave open and its calibration does not fix:
    every spec of the claim is read again from the sweep's records (`sweep`, a list in the same
    file) at each value of the field `name` they hold, and the verdict is labelled underdetermined
    with the values at which it holds (verdicts.underdetermined)."""
    name: Annotated[str, Field(pattern=r"^[a-z_]+$")]
    sweep: Annotated[str, Field(min_length=1)]


def _reads_trained_encoders(specs):
    """Whether any spec reads the evaluation records of trained encoders."""
    found = [record_of(p) for spec in specs for p in patterns(_plain(spec))]
    return any(record and record[0] == "evaluation" for record in found)


def _gated_when_trained(claim, specs):
    """A claim that reads trained encoders names the reference that must have trained (`reference`:
    the condition and the figure its gate reads), else its verdict could rest on an encoder that
    never trained."""
    if claim.reference is None and _reads_trained_encoders(specs):
        raise ValueError("reads trained encoders (results/evaluate/...): declare `reference`, the condition "
                         "and key that must have trained for the claim to be judged")
    return claim


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
    reference: Spec | None = None            # what must have trained (required when an arm reads a trained encoder)
    free_parameter: FreeParameter | None = None
    yardstick: Literal["one run"] | None = None   # one run: a range printed from one run, against one run of ours
    # (None: the interval of the mean of our runs inside the range)

    @model_validator(mode="after")
    def _values(self):
        _reads_a_value(self.arms)
        return _gated_when_trained(self, self.arms.values())


class SingleRun(Claim):
    kind: Literal["single_run"]
    tolerance: NonNegative = 0.0
    realisations: Spec
    reference: Spec | None = None            # what must have trained (required when it reads a trained encoder)
    free_parameter: FreeParameter | None = None

    @model_validator(mode="after")
    def _gated(self):
        return _gated_when_trained(self, [self.realisations])


class PositiveControl(Strict):
    """What shows that the measurement of a claim of no effect could have seen an effect of the
    margin's size: arm a against arm b (specs read like the claim's arms, '{step}' at the rung
    judged), in `direction`, decided against the claim's margin (verdicts.positive_control)."""
    a: Spec
    b: Spec
    direction: Literal["greater", "less"]

    @model_validator(mode="after")
    def _values(self):
        _reads_a_value({"a": self.a, "b": self.b})
        return self


class Paired(Claim):
    kind: Literal["paired"]
    a: str
    b: str | Annotated[list[str], Field(min_length=1)]
    direction: Literal["greater", "less", "equal"]   # equal: predicts no effect beyond +-margin
    margin: NonNegative
    arms: Annotated[dict[str, Spec], Field(min_length=2)]
    ladder: bool = False
    reference: Annotated[list[str], Field(min_length=1)]   # arms that must have trained (gates.py)
    outcome: list[str]                       # arms whose failure the claim predicts or allows: not gated
    basis: Literal["equal steps", "equal images", "equal updates", "equal encoder passes"] = "equal steps"
    free_parameter: FreeParameter | None = None
    positive_control: PositiveControl | None = None     # a claim of no effect: required to decide it

    @property
    def bs(self):
        return self.b if isinstance(self.b, list) else [self.b]

    @model_validator(mode="after")
    def _basis_pairs_two_runs(self):
        """A ladder claim judged at a compute basis pairs one rung of a with one of b: two arms, each
        one condition's runs (robustness.matched_steps)."""
        if self.ladder and self.basis not in ("equal steps", "equal updates"):
            plain = all(isinstance(spec.files, str) or spec.condition for spec in self.arms.values())
            if len(self.bs) != 1 or len(self.arms) != 2 or not plain:
                raise ValueError(f"basis: '{self.basis}' on a ladder needs two arms, a and one b, each "
                                 "reading one condition's files")
        return self

    @model_validator(mode="after")
    def _arms_named(self):
        _reads_a_value(self.arms)
        if isinstance(self.published_effect_value, list) and len(self.published_effect_value) != len(self.bs):
            raise ValueError("published_effect_value: give one number, or one per b arm")
        for name in [self.a, *self.bs, *self.reference, *self.outcome]:
            if name not in self.arms:
                raise ValueError(f"arm {name!r} is not in arms ({', '.join(self.arms)})")
        for name in [self.a, *self.bs]:
            if (name in self.reference) == (name in self.outcome):
                raise ValueError(f"arm {name!r}: name it in exactly one of reference (must train) and outcome")
        if self.positive_control and self.direction != "equal":
            raise ValueError("positive_control: only a claim of no effect (direction: equal) has one")
        return self


class Collapse(Strict):
    runs: Spec
    above: Annotated[float, Field(allow_inf_nan=False)]
    avoided_by: Spec | None = None


class Failure(Claim):
    kind: Literal["failure"]
    runs: Spec
    at: Literal["budget", "top", "first"] = "budget"     # the step judged: the budget, the last or the first rung
    collapse: Collapse | None = None
    reference: Spec | None = None            # a condition that must train by the same step


class Correlation(Claim):
    """Over a population named by its `conditions` (runs: {conditions: [...]}), the conditions that
    did not train and the supervised ones are left out unless `keep` names them (kinds.population)."""
    kind: Literal["correlation"]
    runs: Spec
    x: str | Annotated[list[str], Field(min_length=2, max_length=2)]   # two: each given the other (jointly)
    y: str
    direction: Literal["greater", "less"]
    margin: NonNegative
    keep: list[Literal["untrained", "supervised"]] | None = None

    @model_validator(mode="after")
    def _population_named(self):
        if self.keep is not None and self.runs.conditions is None:
            raise ValueError("keep: only a population named by its conditions (runs: {conditions: [...]}) "
                             "leaves conditions out")
        return self


class NotTested(Claim):
    kind: Literal["not_tested"]
    reason: Annotated[str, Field(min_length=1)]


KINDS = {m.model_fields["kind"].annotation.__args__[0]: m
         for m in (Exact, Bound, Range, Interval, SingleRun, Paired, Failure, Correlation, NotTested)}


class Robustness(Strict):
    """The registered alternatives every paired claim is re-judged under (robustness.py)."""
    probes: list[Literal[PANEL]]
    rungs: Literal["last doubling", "none"]
    bases: list[Literal["equal steps", "equal images", "equal encoder passes"]]
    multiplicity: list[Literal["bh"]]


class Sequential(Strict):
    """The two-stage design of the seeds (sequential.py): after stage 1's seeds, a contrast still
    inconclusive that about `seeds_needed_at_most` seeds would settle gets `further_seeds` more for
    the arms it reads; the one-sided error is spent across the two looks by `spending`. Stage 2 runs
    at most `conditions_at_most` conditions, taken for the claims in `first` before the others."""
    stage_one_seeds: Annotated[int, Field(ge=2)]
    further_seeds: Annotated[int, Field(ge=1)]
    seeds_needed_at_most: Annotated[int, Field(ge=2)]
    spending: Literal["pocock", "obrien-fleming"]
    conditions_at_most: Annotated[int, Field(ge=1)]
    first: list[str]                       # claim ids, checked to exist (load_registry)


class Rules(Strict):
    control_error_removed: Fraction          # trained: its gain removes at least this share of the control's error
    max_seeds: Annotated[int, Field(ge=2)]
    failure_loss_fraction: Fraction
    alpha: Annotated[float, Field(gt=0, lt=0.5)]          # each one-sided test's level
    convergence_fraction: NonNegative        # registered for run 3; decides nothing since issue 70's amendment
    robustness: Robustness
    sequential: Sequential | None = None     # absent from the dumped rules when not given (their digest)


def _claim(raw, path, shared=None):
    where = f"{path}: claim {raw.get('id', '?') if isinstance(raw, dict) else '?'}"
    if not isinstance(raw, dict):
        raise RegistryError(f"{where}: must be a mapping")
    raw = _expand_amendments(raw, shared or {}, where)
    model = KINDS.get(raw.get("kind"))
    if model is None:
        raise RegistryError(f"{where}: kind: must be one of {', '.join(sorted(KINDS))} (got {raw.get('kind')!r})")
    try:
        return model(**raw)
    except ValidationError as e:
        raise RegistryError(one_line(e, where)) from None


def _expand_amendments(raw, shared, where):
    """A claim whose `amended:` entries name shared amendments ({ref, previous_verdict}) with each
    one written out in full, as the claim carries it."""
    entries = raw.get("amended")
    if not isinstance(entries, list) or not any(isinstance(e, dict) and "ref" in e for e in entries):
        return raw
    expanded = []
    for i, entry in enumerate(entries):
        if not (isinstance(entry, dict) and "ref" in entry):
            expanded.append(entry)
            continue
        try:
            ref = AmendmentRef(**entry)
        except ValidationError as e:
            raise RegistryError(one_line(e, f"{where}: amended.{i}")) from None
        if ref.ref not in shared:
            raise RegistryError(f"{where}: amended.{i}.ref: {ref.ref!r} is not an id under `amendments:`")
        text = shared[ref.ref]
        expanded.append({"date": text.date, "what": text.what, "why": text.why,
                         "previous_verdict": ref.previous_verdict, "post_registration": text.post_registration,
                         "registration": text.registration})
    return {**raw, "amended": expanded}


def declared_gates(claim):
    """A paired claim's (reference arms, outcome arms): as declared, or, for a claim in the form it
    was registered in before they were declared, as the code registered with it read them (the b
    arms gated, the other arms their outcome)."""
    bs = claim["b"] if isinstance(claim["b"], list) else [claim["b"]]
    reference = claim.get("reference") or bs
    return reference, claim.get("outcome", [n for n in [claim["a"], *bs] if n not in reference])


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
    if getattr(claim, "positive_control", None):
        found += [(f"positive_control.{k}", getattr(claim.positive_control, k)) for k in ("a", "b")]
    return [(w, leaf) for where, spec in found for w, leaf in _leaves(where, spec)]


def _leaves(where, spec):
    parts = spec.minus or spec.spread or spec.best_of
    if parts:
        return [leaf for i, part in enumerate(parts) for leaf in _leaves(f"{where}.{i}", part)]
    return [(where, spec)]


def _check_reads(claim, conditions, path):
    """Conditions that exist (in the study named with them), and keys that exist in the schema of
    the records they read."""
    for where, spec in specs(claim):
        for found in filter(None, map(record_of, patterns(_plain(spec)))):
            kind, study, condition = found
            if conditions is not None and "*" not in condition:
                if condition not in conditions:
                    raise RegistryError(f"{path}: claim {claim.id}: {where}: condition {condition!r} is not defined "
                                        "in params.yaml (pretrain.studies); fix the name or add the condition")
                if "*" not in study and conditions[condition]["study"] != study:
                    raise RegistryError(f"{path}: claim {claim.id}: {where}: condition {condition!r} is in study "
                                        f"{conditions[condition]['study']!r}, not {study!r}; fix the study or leave "
                                        "it out")
            schema = TRAINING_KEY if kind == "training" else EVALUATION_KEY
            keys = [spec.key] if spec.key else (spec.ratio or spec.difference or [])
            if isinstance(claim, Correlation):
                keys = [*keys, *(claim.x if isinstance(claim.x, list) else [claim.x]), claim.y]
            for key in keys:
                if not schema.match(key):
                    raise RegistryError(f"{path}: claim {claim.id}: {where}.key: {key!r} is not a field of "
                                        f"the {kind} record (pattern {schema.pattern})")


def _plain(spec):
    """A Spec as the dict the measuring reads."""
    return spec.model_dump(exclude_none=True)


class Registry(NamedTuple):
    rules: dict            # Rules, as a plain dict
    claims: list           # validated claims as plain dicts (defaults filled in, amendments written out)
    sections: list         # Section dicts, in report order
    withdrawn: dict        # {claim id: the shared amendment (a dict) that withdraws it}

    @property
    def documents(self):
        """The ids of the sections that hold the documents' own examples."""
        return {s["id"] for s in self.sections if s["origin"] == "document"}


KEYS = ("rules", "sections", "amendments", "claims")
SHARED_KEYS = KEYS[:3]          # what RULES_FILE holds beside the claims file, when it is there
RULES_FILE = "rules.yaml"       # the shared rules, sections and amendments: analysis/rules.yaml


def rules_path(path="analysis/claims.yaml"):
    """The file beside the claims file that holds the shared rules, sections and amendments."""
    return Path(path).with_name(RULES_FILE)


def _read(path):
    try:
        return load_yaml(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RegistryError(f"{path}: file not found") from None
    except UnicodeDecodeError:
        raise RegistryError(f"{path}: not UTF-8 text") from None
    except Exception as e:                     # yaml.YAMLError, DuplicateKeyError
        raise RegistryError(f"{path}: not valid YAML: {str(e).splitlines()[0]}") from None


def _read_registry(path):
    """(registry, shared_path): the claims file's keys, and the shared ones (rules, sections,
    amendments) from RULES_FILE beside it where there is one (else from the claims file itself, as
    a registry of one file, like every revision before the split, has them); shared_path is the file
    they came from. A key in both files is refused: each has one home."""
    registry = _read(path)
    shared_path = rules_path(path)
    if not shared_path.exists() or not isinstance(registry, dict):
        return registry, path
    shared = _read(shared_path)
    if not isinstance(shared, dict) or not set(shared) <= set(SHARED_KEYS):
        raise RegistryError(f"{shared_path}: expected the keys `rules`, `sections` and optionally `amendments`")
    twice = sorted(set(shared) & set(registry))
    if twice:
        raise RegistryError(f"{path}: `{twice[0]}` is also in {shared_path}; keep it in {shared_path} only")
    return {**shared, **registry}, shared_path


def load_registry(path="analysis/claims.yaml", conditions=None):
    """The registry: its rules, its claims and its sections (a Registry), from the claims file and
    the shared rules beside it (_read_registry). With `conditions` (params.yaml's, {name: {study,
    ...}}), every condition a claim names is checked too. Raises RegistryError with one line."""
    registry, shared_path = _read_registry(path)
    if not isinstance(registry, dict) or not {"rules", "sections", "claims"} <= set(registry) <= set(KEYS) or \
            not isinstance(registry["claims"], list) or not isinstance(registry["rules"], dict) or \
            not isinstance(registry["sections"], list) or not isinstance(registry.get("amendments") or {}, dict):
        raise RegistryError(f"{path}: expected the keys `rules` (a mapping), `sections` (a list), `claims` (a list) "
                            "and optionally `amendments` (a mapping of id to amendment), all but `claims` in "
                            f"{rules_path(path)} where it exists")
    try:
        rules = Rules(**registry["rules"])
    except ValidationError as e:
        raise RegistryError(one_line(e, f"{shared_path}: rules")) from None
    sections = _sections(registry["sections"], shared_path)
    shared = _shared_amendments(registry.get("amendments") or {}, shared_path)
    if not registry["claims"]:
        raise RegistryError(f"{path}: claims: the registry holds no claim; restore it with `git checkout {path}`")
    claims = [_claim(raw, path, shared) for raw in registry["claims"]]
    _each_section_used(sections, claims, path)
    seen = set()
    for claim in claims:
        if claim.id in seen:
            raise RegistryError(f"{path}: claim {claim.id}: id: used twice; ids must be unique")
        seen.add(claim.id)
        _check_reads(claim, conditions, path)
    present = {c.id for c in claims}
    unknown = [cid for cid in (rules.sequential.first if rules.sequential else []) if cid not in present]
    if unknown:
        raise RegistryError(f"{shared_path}: rules.sequential.first: {', '.join(unknown)} is not a claim id; name "
                            f"claims under `claims:` in {path}")
    withdrawn = {cid: {"id": key, **text.model_dump()} for key, text in shared.items() for cid in text.withdraws}
    for cid in withdrawn:
        if cid in present:
            raise RegistryError(f"{shared_path}: amendments.{withdrawn[cid]['id']}.withdraws: claim {cid} is still in "
                                f"`claims:` of {path}; remove it there or from `withdraws`")
    return Registry(rules.model_dump(exclude_none=True), [c.model_dump(exclude_none=True) for c in claims],
                    [s.model_dump() for s in sections], withdrawn)


def _sections(raw, path):
    sections = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise RegistryError(f"{path}: sections.{i}: must be a mapping with id, title and origin")
        try:
            sections.append(Section(**entry))
        except ValidationError as e:
            raise RegistryError(one_line(e, f"{path}: sections.{i}")) from None
    ids = [s.id for s in sections]
    for s in sections:
        if ids.count(s.id) > 1:
            raise RegistryError(f"{path}: sections: {s.id!r} defined twice; ids must be unique")
    return sections


def _shared_amendments(raw, path):
    shared = {}
    for key, entry in raw.items():
        if not isinstance(key, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", key):
            raise RegistryError(f"{path}: amendments: id {str(key)[:40]!r} must use only a-z, 0-9 and '-'")
        try:
            shared[key] = AmendmentText(**(entry if isinstance(entry, dict) else {}))
        except ValidationError as e:
            raise RegistryError(one_line(e, f"{path}: amendments.{key}")) from None
    return shared


def _each_section_used(sections, claims, path):
    """Every claim names a section that `sections:` defines, and every section has a claim."""
    ids = {s.id for s in sections}
    for claim in claims:
        if claim.section not in ids:
            raise RegistryError(f"{path}: claim {claim.id}: section: {claim.section!r} is not defined under "
                                "`sections:`; add it there (id, title, origin) or use one of "
                                + ", ".join(sorted(ids)))
    used = {c.section for c in claims}
    for s in sections:
        if s.id not in used:
            raise RegistryError(f"{path}: sections: {s.id!r} has no claim; remove it or give it a claim")


def validate_claim(raw):
    """One claim as a dict with defaults filled in (tests and judge() on a single claim; a shared
    amendment cannot be named here)."""
    return _claim(raw, "claim").model_dump(exclude_none=True)
