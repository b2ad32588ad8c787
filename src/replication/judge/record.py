"""The judged claim as a typed record, and the one reader and writer of reports/claims.json.

The judging (judge.py, kinds.py) builds each claim's judgement; `write_claims` checks it against
the records below and writes reports/claims.json; `read_claims` reads it back as `Judgement`s and
refuses, with one line naming the claim and field, a file with a missing, extra or mistyped field.
The report, tools/compare.py, tools/readme.py and the tests read claims.json only through it.

A claims.json is a list of Judgements, one per claim of the registry:

    Judgement      the claim as registered (id, statement, published ...), its verdict and labels,
                   its primary analysis, the magnitude against the published effect, robustness
      arms         {arm name: Arm}: per-seed values and their summary, each gated Arm's
                   {condition: Gate} against its untrained control
      contrast     the Contrast that decided the verdict; `contrasts` all of them when several
      positive_control  a claim of no effect's positive control, a Contrast (verdicts.positive_control)
      population   a correlation's named conditions that it reads, and why each other one is left out
      ladder       one Rung per trained rung of a ladder claim (its arms and contrasts there)
      convergence  whether the effect settled over the last doubling of steps
      robustness   the verdict under each registered Alternative

Fields are written in the order they are declared (a not-tested claim carries its note before its
labels, as it always has), and every figure to SIGNIFICANT digits (rounded): CPUs round a figure's
last binary digit differently (numpy's vectorised log and exp on AVX2 against AVX-512 gave two
figures of run 2 that differed in their 16th digit), so the same judgement gives the same bytes on
every CPU. Verdicts are decided on the unrounded figures, before they are written.
"""
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError, model_serializer

from ..io import atomic_path, json_text
from ..schema import Strict, one_line
from .verdicts import ORIGINS, VERDICTS

CLAIMS = Path("reports/claims.json")
SIGNIFICANT = 12                         # digits of every figure written: far above any figure's precision

Number = int | float                     # as judged: an int stays an int, so the bytes do not move
Interval = list[Number | None]           # [lo, hi] at the registered level (keys named *ci95)
Verdict = Literal[VERDICTS]
Origin = Literal[tuple(ORIGINS)]


class RecordError(Exception):
    """A claims.json that is missing, unreadable or not the shape below; str(e) is one line."""


class Record(Strict):
    """A part of a judgement: written without the fields it was built without (exclude_unset)."""


class Summary(Record):
    """Per-seed values and their summary (stats.summarize)."""
    values: list[Number]
    n: int
    mean: Number
    sd: Number
    min: Number
    max: Number
    ci95: Interval


class Gate(Record):
    """An arm's gate: the share of its untrained control's error it removed (gates.control_gain)."""
    metric: str
    step: int | str | None
    seeds: list[int]
    error_removed: Summary
    gain: Summary
    control_calibrated: Number | None
    control_uncalibrated: Number | None
    calibrated: bool
    trained: bool


class FailedRun(Record):
    seed: int | None
    status: str
    reason: str | None = None


class Arm(Record):
    """One arm of a claim: its per-seed values (a figure of the documents' examples may be a flag,
    a word or a list) and their summary; a gated arm's controls."""
    values: list[Any]
    n: int
    mean: Number | None = None
    failed: list[FailedRun] | None = None
    sd: Number | None = None
    min: Number | None = None
    max: Number | None = None
    ci95: Interval | None = None
    prediction95: Interval | None = None
    seeds: list[int] | None = None
    chance_loss: Number | None = None
    key: str | None = None
    step: int | None = None
    collapsed_above: Number | None = None
    collapsed: int | None = None
    chosen: str | None = None
    chosen_on_seeds: list[int] | None = None
    control: dict[str, Gate] | None = None
    reference: bool | None = None


class Trend(Record):
    """A contrast along the ladder's rungs: its slope per decade of steps (verdicts.ladder_trend)."""
    label: str
    slope_per_decade: Number | None = None
    slope_ci95: Interval | None = None
    slopes: list[Number] | None = None
    seeds: list[int] | None = None
    steps: list[int] | None = None


class Logit(Record):
    diffs: list[Number]
    mean: Number
    ci95: Interval


class Baseline(Record):
    """The contrast before training (step 0), and its gains over step 0 where the sides differ."""
    step: int
    diff_mean: Number | None = None
    absent: str | None = None
    diff_ci95: Interval | None = None
    differs: bool | None = None
    gain: dict[str, Any] | None = None


class Contrast(Record):
    """Arm a against arm b, seed by seed (or a rank correlation), decided against the margin."""
    a: str
    b: str
    given: str | None = None
    direction: str
    margin: Number
    basis: str | None = None
    seeds: list[int]
    level: Number | None = None              # of its interval, at the look its seeds make (sequential.look)
    metric_key: str | None = None
    rho: Number | None = None
    n_runs: int | None = None
    n_conditions: int | None = None
    resampling_unit: str | None = None
    bootstrap_draws: int | None = None
    diffs: list[Number] | None = None
    diff_mean: Number | None
    se: Number | None = None
    diff_ci95: Interval | None
    p: Number | None = None
    p_reproduced: Number | None = None
    p_contradicted: Number | None = None
    p_equivalent: Number | None = None
    published_effect_value: Number | None = None
    magnitude: str | None = None
    verdict: Verdict
    published_answer: str | None = None      # the published effect inside ours or ruled out (verdicts.py)
    seeds_needed: int | None = None
    reason: str | None = None
    logit: Logit | None = None
    baseline: Baseline | None = None
    trend: Trend | None = None
    trend_logit: Trend | None = None
    scale_artefact: str | None = None
    unstable: bool | None = None


class Rung(Record):
    """A ladder claim judged at one rung (each arm at its own step where the basis pairs them)."""
    step: int
    arm_steps: dict[str, int] | None
    verdict: Verdict
    arms: dict[str, Arm]
    contrasts: list[Contrast]


class ContrastMove(Record):
    """A contrast over its last doubling of steps, and one more doubling on (verdicts.one_more_doubling)."""
    b: str
    from_step: int
    to_step: int
    seeds: int
    change: Number
    change_interval: Interval
    ahead: Number
    ahead_interval: Interval
    verdict_now: Verdict
    verdict_ahead: Verdict
    settled: bool


class ArmMove(Record):
    """An arm's per-seed change over its last doubling of steps, in the claim's unit (ladder.last_doubling)."""
    moving: bool                 # its interval lies beyond +-margin (descriptive)
    moved: str


class EarlierContrastMove(Record):
    """A contrast's change against a threshold, as claims.json recorded it before the convergence
    rule read the effect one doubling on (issue 70): read so that earlier revisions still compare."""
    b: str | None
    from_step: int | None
    to_step: int
    threshold: Number
    change: Number | None = None
    change_ci95: Interval | None = None
    seeds: int | None = None
    converged: bool | None
    reason: str | None = None


class EarlierArmMove(Record):
    """An arm's mean move against a threshold, as claims.json recorded it before issue 70."""
    from_step: int | None = None
    to_step: int | None = None
    move: Number | None = None
    threshold: Number | None = None
    converged: bool | None
    reason: str | None = None


class Convergence(Record):
    contrasts: list[ContrastMove | EarlierContrastMove] | None = None
    arms: dict[str, ArmMove | EarlierArmMove] | None = None
    converged: bool | None
    held: Verdict | None = None                   # the verdict its interval gave, held until the effect settles
    reason: str | None = None
    threshold: Number | None = None               # claims.json before issue 70
    arms_moving: dict[str, str] | None = None     # claims.json before issue 70


class Primary(Record):
    """The registered primary analysis: probe, rung (or {arm: step}) and compute basis; the probe it
    stands in for where the records lack the registered one, and the probe the ladder reads where
    it is not the primary's (ladder.py)."""
    probe: str | None
    rung: int | dict[str, int] | None
    basis: str
    stand_in_for: str | None = None
    ladder_probe: str | None = None


class Alternative(Record):
    """The claim re-judged with one registered choice changed (robustness.py)."""
    dimension: str
    choice: int | str | dict[str, int]
    verdict: Verdict
    diff_mean: Number | None = None
    diff_ci95: Interval | None = None
    seeds: int | None = None             # the seeds its figure was read on, and the level of that look
    level: Number | None = None


class Robustness(Record):
    """'robust' or 'depends on: ...' (None where only reversals change the verdict), each reversal's
    label, and every alternative (robustness.py)."""
    label: str | None
    reversals: list[str] | None = None
    decided_on: list[str] | None = None       # probes that decide an undecided primary, with their decision
    alternatives: list[Alternative]


class SweptVerdict(Record):
    value: Number
    verdict: Verdict


class Underdetermined(Record):
    """Where along a reconstruction's free parameter the verdict holds (verdicts.underdetermined)."""
    parameter: str
    swept: list[Number]
    holds_at: list[Number]
    verdicts: list[SweptVerdict]
    reason: str


class Amendment(Record):
    date: str
    what: str
    why: str
    previous_verdict: str
    post_registration: bool | None = None
    registration: int | None = None


class RuleAmendment(Record):
    date: str
    what: str


class DataMove(Record):
    """A verdict moved between two snapshots judged on different results: by registered data."""
    before: Verdict
    after: Verdict
    by: str


class ReferenceGate(Record):
    """The condition a non-paired claim's reading needs trained, and its gate."""
    condition: str
    control: Gate | None


class Population(Record):
    """The conditions a correlation reads, and {condition: why it is left out} (kinds.population)."""
    conditions: list[str]
    left_out: dict[str, str]


class Judgement(Record):
    """One claim of the registry as judged: what reports/claims.json holds per claim."""
    id: str
    source: str
    statement: str
    published: Any
    metric: str
    section: str
    kind: str
    published_effect: str | None = None
    published_effect_value: Number | list[Number] | None = None
    effect_scale: Number | None = None
    effect_unit: str | None = None
    amended: list[Amendment] | None = None
    realisation: str | None = None
    calibrated: str | None = None
    origin: Origin
    arms: dict[str, Arm]
    contrast: Contrast | None
    reference_arms: list[str] | None = None
    step: int | None = None
    outcome_arms: list[str] | None = None
    contrasts: list[Contrast] | None = None
    positive_control: Contrast | None = None
    population: Population | None = None
    reference: ReferenceGate | None = None
    decided_by: str | None = None
    verdict: Verdict
    primary: Primary | None = None
    ladder: list[Rung] | None = None
    convergence: Convergence | None = None
    underdetermined: Underdetermined | None = None
    untrained: dict[str, Number | None] | None = None
    trend: str | None = None
    p_decision: Number | None = None
    q_bh: Number | None = None
    bh_family: int | None = None
    magnitude: str | None = None
    unstable: bool | None = None
    robustness: Robustness | None = None
    labels: list[str]
    note: str | None = None
    frozen_verdict: Verdict | None = None
    rules_amended: list[RuleAmendment] | None = None
    moved_by_data: list[DataMove] | None = None

    @model_serializer(mode="wrap")
    def _note_where_written(self, handler):
        """A not-tested claim is written with its note before its labels, as the judge writes it."""
        out = handler(self)
        if self.kind == "not_tested" and "note" in out:
            note, labels = out.pop("note"), out.pop("labels")
            out.update(note=note, labels=labels)
        return out


def as_record(judged, where="claims"):
    """A judged claim (a Judgement or its dict) as a Judgement; RecordError naming the field."""
    if isinstance(judged, Judgement):
        return judged
    if not isinstance(judged, dict):
        raise RecordError(f"{where}: a judged claim must be a JSON object")
    try:
        return Judgement(**judged)
    except ValidationError as e:
        raise RecordError(one_line(e, f"{where}: claim {judged.get('id', '?')}")) from None


def rounded(value):
    """`value` with every float inside it rounded to SIGNIFICANT digits (ints, words and flags as
    they are)."""
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT}g}")
    if isinstance(value, list):
        return [rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    return value


def claims_text(judged, path=CLAIMS):
    """The text of reports/claims.json for these judgements: each checked against Judgement (else
    RecordError naming the claim and field), its figures rounded."""
    return json_text([rounded(as_record(j, str(path)).model_dump(exclude_unset=True)) for j in judged])


def write_claims(judged, path=CLAIMS):
    """Write reports/claims.json (atomically) from the judgements; RecordError before writing when
    one does not fit the record."""
    text = claims_text(judged, path)
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def read_claims(path=CLAIMS, text=None):
    """reports/claims.json (or `text`, its content from elsewhere, e.g. a git revision) as a list of
    Judgements; RecordError with one line for a missing, unreadable or misshapen file."""
    try:
        raw = json.loads(text if text is not None else Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordError(f"{path}: missing; run the analysis (`dvc repro analyze`)") from None
    except (OSError, ValueError) as e:
        raise RecordError(f"{path}: not readable JSON ({type(e).__name__}); rewrite it with "
                          "`dvc repro -f analyze`") from None
    if not isinstance(raw, list):
        raise RecordError(f"{path}: expected a list of judged claims; rewrite it with `dvc repro -f analyze`")
    return [as_record(c, str(path)) for c in raw]


def as_dicts(judgements):
    """Judgements as the plain dicts the report's tables and figures are drawn from."""
    return [j.model_dump(exclude_unset=True) for j in judgements]
