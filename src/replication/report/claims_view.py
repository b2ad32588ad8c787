"""What the report says about each claim, read from reports/claims.json: its origin, labels, effect
in the claim's own unit beside the published one, the count of seeds or realisations, a one-line
reason, the verdict under the original rules; the lore rows (the studies the repository exists
for), the counts (one function for every page) and the replication summary.

Fields that claims.json does not carry yet (origin, labels, robustness, primary, realisations) are
read when present; otherwise each function says how it falls back. No function here writes HTML.
"""
import hashlib
import json
import math
import re
from pathlib import Path

from ..judge.judge import summary
from ..judge.measure import in_path_form
from ..judge.record import as_dicts, read_claims
from ..judge.verdicts import (CONTRADICTED, DECIDED, INCONCLUSIVE, JUDGED, MAGNITUDES, NO_EFFECT, NOT_TESTABLE,
                              NOT_TESTED, ORIGINS, REPRODUCED, VERDICTS, interval_reason, level_label, percent,
                              rank)

LORE = [   # (claim id, study): the questions the repository exists for, in the order the first screen asks them
    ("simclr-temperature", "SimCLR temperature"),
    ("moco-momentum-long", "MoCo momentum (long run)"),
    ("moco-momentum-short", "MoCo momentum (short run)"),
    ("simclr-h-beats-z", "Projection head: h against z"),
    ("rotation-predictable-from-h", "Rotation probe on h and z"),
    ("supcon-out-beats-in", "SupCon: outside against inside"),
    ("mocov2-beats-simclr", "MoCo v2 against SimCLR"),
    ("supervised-beats-simclr", "The supervised gap"),
    ("more-negatives-help", "Batch size and negatives"),
    ("align-uniform-beats-contrastive", "Alignment and uniformity"),
]


def origin(claim):
    """'literature' (a published paper's result) or 'document' (the documents' own printed examples
    and analytic facts), as the analysis derived it from the claim's section."""
    return claim["origin"]


def slug(claim_id):
    """The claim's id for an HTML anchor: itself when it uses only letters, digits, '-' and '_',
    else a digest of it (so no id can break out of an attribute)."""
    text = str(claim_id)
    if re.fullmatch(r"[A-Za-z0-9_-]{1,100}", text):
        return text
    return "id-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def contrasts(claim):
    """Every contrast of a claim, the primary one first."""
    return claim.get("contrasts") or ([claim["contrast"]] if claim.get("contrast") else [])


def labels(claim):
    """The claim's labels from claims.json; while it has none, 'unstable' and 'realisation' are the
    only ones that can be read off the claim."""
    if claim.get("labels") is not None:
        return list(claim["labels"])
    derived = []
    if claim.get("unstable") or any(c.get("unstable") for c in contrasts(claim)):
        derived.append("unstable")
    if "realisations" in (claim.get("arms") or {}):
        derived.append("realisation")
    return derived


def robustness(claim):
    """The robustness label ('robust', 'depends on: ...'), or None where claims.json has none."""
    return (claim.get("robustness") or {}).get("label") or next(
        (label for label in labels(claim) if label == "robust" or label.startswith("depends on")), None)


def number(x):
    """x as a finite float, or None (missing, NaN, infinite or not a number)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def scale_unit(claim):
    """The factor and unit the claim's effects are shown in (points for accuracies)."""
    return number(claim.get("effect_scale")) or 1.0, claim.get("effect_unit") or ""


def our_effect(claim):
    """The primary contrast's effect in the claim's unit: {mean, lo, hi, margin, unit}, or None."""
    return effect_of(claim, claim.get("contrast") or {})


def effect_of(claim, c):
    """The effect of one of the claim's contrasts, or of an alternative analysis of it, in the
    claim's unit: {mean, lo, hi, margin, unit}, or None."""
    mean, ci = number(c.get("diff_mean")), c.get("diff_ci95") or [None, None]
    if mean is None:
        return None
    scale, unit = scale_unit(claim)
    lo, hi, margin = (number(v) for v in (*ci, c.get("margin")))
    times = lambda v: None if v is None else scale * v
    return {"mean": scale * mean, "lo": times(lo), "hi": times(hi), "margin": times(margin), "unit": unit,
            "level": number(c.get("level"))}


def published_effect(claim, i=0):
    """The published effect of the claim's i-th contrast in the claim's unit (published_effect_value,
    a number or one per contrast, times the claim's scale), or None where it is not a number: the
    value the magnitude comparison read."""
    value = claim.get("published_effect_value")
    if isinstance(value, list):
        value = value[i] if i < len(value) else None
    elif i > 0:
        value = None
    return None if number(value) is None else scale_unit(claim)[0] * value


def named_rung(claim, rungs):
    """The step of the rung a claim's key names by index ('at.{rung:0}.h.linear': the first trained
    rung), from `rungs` (condition -> its rungs, resolved/conditions.json), when its arms agree; else
    None. The primary analysis records the arms' budget for such a claim, not this rung."""
    key = (claim.get("contrast") or {}).get("metric_key") or ""
    by_index = re.match(r"at\.\{rung:(\d+)\}\.", key)
    if not by_index or not rungs:
        return None
    index = int(by_index.group(1))
    trained = [[r for r in rungs[name] if r > 0] for name in arm_conditions(claim) if name in rungs]
    named = {steps[index] for steps in trained if index < len(steps)}
    return named.pop() if len(named) == 1 else None


def rung(claim):
    """The training length (steps) the claim's figure is read at, or None."""
    primary = number((claim.get("primary") or {}).get("rung"))
    if primary is not None:
        return int(primary)
    key = (claim.get("contrast") or {}).get("metric_key") or ""
    found = re.match(r"at\.(\d+)\.", key) or re.search(r"\.(\d+)$", key)
    if found:
        return int(found.group(1))
    if claim.get("ladder"):
        return claim["ladder"][-1].get("step")
    return number(claim.get("step")) and int(claim["step"])


def basis(claim):
    """The compute basis of the primary analysis ('equal steps', 'equal images', ...), or None."""
    return (claim.get("primary") or {}).get("basis") or (claim.get("contrast") or {}).get("basis")


def realisations(claim):
    """(count, kind): how many independent runs stand behind the figure, named for what they are."""
    if claim.get("n_realisations") is not None:
        return claim["n_realisations"], claim.get("realisation_kind") or "seeds"
    arms = claim.get("arms") or {}
    if "realisations" in arms:
        kind = "thread-count realisations of one seed" if claim.get("realisation") else "seeds"
        return arms["realisations"].get("n"), kind
    seeds = (claim.get("contrast") or {}).get("seeds")
    if seeds:
        return len(seeds), "seeds"
    counts = [arm.get("n") for arm in arms.values() if isinstance(arm, dict) and isinstance(arm.get("n"), int)]
    if counts and claim.get("kind") == "correlation":      # runs pooled over arms and seeds
        return max(counts), "runs"
    if counts:
        return max(counts), "seeds" if max(counts) > 1 else "run"
    return None, None


def amendments(claim):
    """A claim's amendments, oldest first (one may be stored as a mapping)."""
    amended = claim.get("amended") or []
    return amended if isinstance(amended, list) else [amended]


def original_verdict(claim):
    """The verdict under the rules registered first: the first amendment's previous verdict."""
    history = amendments(claim)
    return history[0].get("previous_verdict") or claim["verdict"] if history else claim["verdict"]


def post_hoc(claim):
    """Whether a rule of this claim changed after the current registration: the judge's label
    (which counts only the current run's amendments); while claims.json has no labels, any
    amendment marked post_registration."""
    if claim.get("labels") is not None:
        return "post hoc" in claim["labels"]
    return any(a.get("post_registration") for a in amendments(claim))


def first_sentence(text, words=30):
    """The first sentence of a note, cut at `words` words."""
    sentence = re.split(r"(?<=\.)\s", (text or "").strip(), maxsplit=1)[0]
    cut = sentence.split()
    return " ".join(cut[:words]) + (" …" if len(cut) > words else "")


def note_without_effect(note):
    """A note less its sentence restating the effect ('Effect in the claimed direction ...'), which
    the report shows beside it in numbers."""
    return re.sub(r"\s*Effect in the claimed direction \(positive supports the claim\):[^.]*(\.\d[^.]*)*\.?", "",
                  note or "").strip()


def magnitude_text(claim):
    """Where the published effect lies against our interval, in words, or None."""
    return MAGNITUDES.get(claim.get("magnitude"))


def reason(claim):
    """One line on why the verdict is what it is (an interval at the level its look decided at, in
    words read off its figures), with what the interval says of the published effect; a verdict the
    convergence rule held says so first; a claim with several legs (contrasts) gives each leg's
    verdict and reason."""
    legs = contrasts(claim)
    conv = claim.get("convergence") or {}
    before = f"held by the convergence rule: its interval gives {conv['held']}, but {conv['reason']}" \
        if conv.get("held") else None
    if len(legs) > 1 and claim["verdict"] in JUDGED:
        return "; ".join(filter(None, [before, *(f"against {c['b']}: {c['verdict']}, {_why(claim, c)}"
                                                 for c in legs)]))
    return "; ".join(filter(None, [before, _why(claim, claim.get("contrast") or {})]))


def _why(claim, c):
    """The reason of one contrast `c`, with its published answer (verdicts.py): where its interval
    lies (decided by it), or its own reason where the interval did not decide it."""
    effect = effect_of(claim, c)
    if effect and effect["lo"] is not None and effect["margin"] and c.get("verdict") in JUDGED:
        where = interval_reason(effect["lo"], effect["hi"], effect["margin"], c["level"], effect["unit"])
        why = where if c["verdict"] in DECIDED else c.get("reason") or where
        return "; ".join(filter(None, [why, c.get("published_answer")]))
    if c.get("reason") and c is not claim.get("contrast"):
        return c["reason"]
    if claim.get("decided_by"):
        return claim["decided_by"]
    return first_sentence(claim.get("note")) or "–"


def is_calibrated(claim):
    return "calibrated" in labels(claim)


VERDICT_OF = {v.replace(" ", "_"): v for v in VERDICTS}    # summary.json's keys back to the verdict words


def counts(claims):
    """The counts every page prints, from judge.judge.summary (the function that writes
    reports/summary.json, which README reads): per origin the claims, the
    judged ('not tested' and calibrated figures outside) and each verdict among them, in
    verdicts.VERDICTS order; the labels."""
    found = summary(claims)
    for group in ORIGINS:
        part = found[group]
        part["verdicts"] = dict(sorted(((VERDICT_OF.get(k, k), n) for k, n in part["verdicts"].items()),
                                       key=lambda item: rank(item[0])))
    return found


def counts_text(claims):
    """The counts in words, one line per origin and one for the labels, as every page prints them."""
    found = counts(claims)
    lines = []
    for group, title in ORIGINS.items():
        part = found[group]
        calibrated = part["claims"] - part["judged"] - part["not_tested"]
        verdicts = ", ".join(f"{n} {v}" for v, n in part["verdicts"].items())
        lines.append(f"{part['claims']} {title}: {part['judged']} judged ({verdicts or 'none'}); "
                     f"{part['not_tested']} not tested" + (f"; {calibrated} calibrated" if calibrated else "") + ".")
    labels = found["labels"]
    lines.append("Labels: " + ", ".join(f"{labels[key]} {words}" for key, words in LABEL_COUNTS.items()) + ".")
    return lines


# every label summary.json counts (judge.judge.summary's keys), in the words each page prints
LABEL_COUNTS = {"robust": "robust", "depends_on": "depending on a choice", "reversed": "reversed by a probe",
                "decided_on": "undecided on the primary probe but decided on another",
                "ruled_out": "undecided with the published size ruled out", "stand_in": "read on a stand-in probe",
                "post_hoc": "post hoc", "calibrated": "calibrated (never counted as judged)",
                "not_converged": "not converged",
                "convergence_not_measured": "decided with convergence not measured (no rung where the last doubling starts)",
                "unstable": "unstable",
                "realisation": "judged against realisations of one seed", "underdetermined": "underdetermined"}


def cpu_minutes(records):
    """CPU-minutes of run records: each run's wall time times its torch threads."""
    return sum((r.get("wall_s") or 0) * (r.get("threads") or 1) for r in records) / 60


def compute(root="."):
    """What the run cost, from its own records: CPU-minutes of pretraining and of evaluation (each
    run's wall time times its torch threads), the runs, the CPUs they ran on, and the wall minutes
    of every stage run one at a time in the latest run (reports/stage_times.json: a stage's entry
    from an earlier run, such as this report's own until it finishes, is left out), or None where a
    file is missing."""
    spent, runs, cpus = {}, 0, set()
    for kind in ("pretrain", "evaluate"):
        records = [json.loads(p.read_text()) for p in sorted(Path(root, "results", kind).glob("*/*/seed_*.json"))]
        spent[kind] = cpu_minutes(records)
        runs = max(runs, len(records))
        cpus |= {r["cpu"] for r in records if r.get("cpu")}
    stages = Path(root, "reports", "stage_times.json")
    timed = json.loads(stages.read_text()) if stages.exists() else {}
    latest = max((r.get("run") or 0 for r in timed.values()), default=0)
    timed = {name: r for name, r in timed.items() if (r.get("run") or 0) == latest}
    return {**spent, "runs": runs, "cpus": sorted(cpus | {r["cpu"] for r in timed.values() if r.get("cpu")}),
            "stages": len(timed), "stage_minutes": sum(r["seconds"] for r in timed.values()) / 60 if timed else None}


def replication_summary(claims, scale, cost):
    """The one-paragraph summary in the manner of an ML Reproducibility Challenge report: scope, what
    reproduced and what did not (the lore rows by verdict), the compute (`cost`: compute()) and what
    was hard, every number counted from `claims` and `cost`."""
    found = counts(claims)["literature"]
    rows = lore(claims)
    named = lambda *verdicts: ", ".join(study for study, c in rows if c["verdict"] in verdicts) or "none"
    untestable = found["verdicts"].get(NOT_TESTABLE, 0)
    stages = (f"; the {cost['stages']} stages, run one at a time, took {cost['stage_minutes']:.0f} minutes of wall "
              "time" if cost.get("stage_minutes") is not None else "")
    return (f"Scope: {found['claims']} published claims about contrastive learning, {len(rows)} of them central "
            f"(the table), tested {scale}. Reproduced: {named(REPRODUCED)}. Not reproduced: {CONTRADICTED} "
            f"{named(CONTRADICTED)}; {NO_EFFECT} {named(NO_EFFECT)}; {INCONCLUSIVE} {named(INCONCLUSIVE)}; "
            f"{NOT_TESTABLE} {named(NOT_TESTABLE, NOT_TESTED)}. Compute: "
            f"{cost['pretrain']:,.0f} CPU-minutes of pretraining and {cost['evaluate']:,.0f} of evaluation over "
            f"{cost['runs']} runs on {', '.join(cost['cpus']) or 'an unrecorded CPU'}{stages}. Hard: {untestable} "
            f"claims could not be tested because an arm they need did not train in miniature, "
            f"{found['intervals_across_margin']} intervals still reach across their margin, and "
            f"{found['not_converged']} verdicts were read before their effect settled.")


def by_verdict(claims):
    """Claims sorted by verdict (in verdicts.VERDICTS order), in their own order within a verdict."""
    return sorted(claims, key=lambda c: rank(c["verdict"]))


def by_section(claims, sections):
    """[(section, its claims)] in the registry's order (`sections`: analysis/rules.yaml's), then any
    section the registry does not define, so that no claim is dropped."""
    order = [s["id"] for s in sections] + sorted({c["section"] for c in claims} - {s["id"] for s in sections})
    titled = {s["id"]: s for s in sections}
    grouped = [(titled.get(name, {"id": name, "title": name}), [c for c in claims if c["section"] == name])
               for name in order]
    return [(section, members) for section, members in grouped if members]


def null_reading(claim):
    """What held, for a reproduced claim of no difference (a paired claim with direction `equal`) or
    of a failure (kind `failure`): shown beside the verdict, in the colour of no effect, so that a
    null that holds is not read as an effect; None for every other claim."""
    if claim.get("verdict") != REPRODUCED:
        return None
    if claim.get("kind") == "failure":
        return "the arm fails, as claimed"
    return "no difference, as claimed" if (claim.get("contrast") or {}).get("direction") == "equal" else None


def verdict_words(claim):
    """The verdict as every page prints it: with null_reading where a null holds."""
    return f"{claim['verdict']}: {null_reading(claim)}" if null_reading(claim) else claim["verdict"]


def lore(claims):
    """The lore rows present in `claims`, in LORE's order: [(study, claim)]."""
    by_id = {c["id"]: c for c in claims}
    return [(study, by_id[cid]) for cid, study in LORE if cid in by_id]


def sig(x, digits=4):
    """A number at `digits` significant figures, '–' when there is none."""
    x = number(x)
    return "–" if x is None else f"{x:.{digits}g}"


def effect_text(effect, with_level=True):
    """'+6.47 points [+5.29, +7.65] (97.7%)' for an effect of our_effect, its interval at the level of
    the look that decided it where the contrast records one (`with_level`: named here); '–' for None."""
    if not effect:
        return "–"
    interval = (f" [{effect['lo']:+.3g}, {effect['hi']:+.3g}]" if effect["lo"] is not None and effect["hi"] is not None
                else "")
    named = f" ({percent(effect['level'])})" if with_level and interval and effect.get("level") else ""
    return f"{effect['mean']:+.3g}{effect['unit']}{interval}{named}"


def arm_text(arm):
    """One arm in words: 'mean [lo, hi], n runs' over seeds, or the value of a single run."""
    values = arm.get("values") or []
    if number(arm.get("mean")) is not None and (arm.get("n") or 0) > 1:
        lo, hi = (arm.get("ci95") or [None, None])[:2]
        return f"{sig(arm['mean'])} [{sig(lo)}, {sig(hi)}], n = {arm['n']}"
    if len(values) == 1:
        return sig(values[0], 6) if number(values[0]) is not None else str(values[0])
    return "–"


def our_value(claim):
    """Our figure for a claim without a paired effect: failed runs, or each arm's value."""
    arms = claim.get("arms") or {}
    if claim.get("kind") == "failure" and "runs" in arms:
        runs = arms["runs"]
        return f"{len(runs.get('failed') or [])} of {runs.get('n', '–')} runs failed"
    shown = {name: arm for name, arm in arms.items() if name not in ("x", "y") and isinstance(arm, dict)}
    if len(shown) == 1:
        return arm_text(next(iter(shown.values())))
    return "; ".join(f"{name}: {arm_text(arm)}" for name, arm in shown.items()) or "–"


def published_text(claim):
    """The published figure: the effect of each contrast in the claim's unit when known ('+4.7 / +6.4
    points'), else the text as printed."""
    effects = [published_effect(claim, i) for i in range(max(1, len(contrasts(claim))))]
    if effects[0] is not None:
        return " / ".join(f"{e:+.3g}" for e in effects if e is not None) + scale_unit(claim)[1]
    value = claim.get("published_effect") or claim.get("published")
    if value is None or value == "":
        return "–"
    return sig(value, 6) if number(value) is not None else str(value)


def paper(claim):
    """The paper and table a published figure comes from: the last parenthesis of the claim's source
    ('Chen et al. 2020, Table 5'), else the source."""
    found = re.findall(r"\(([^()]*)\)", claim.get("source") or "")
    return found[-1] if found else claim.get("source") or "–"


def published_setting(claim):
    """Where the published figure comes from: its paper and, where it differs from the effect shown,
    the figures as printed ('Chen et al. 2020, Table 5: 64.4% at tau 0.1; ...')."""
    printed = claim.get("published")
    return paper(claim) + (f": {printed}" if printed and printed != published_text(claim) else "")


def ours_heading(rules):
    """The title of the column that shows ours; each interval names its own level (ours): under a
    sequential design each look decides at its own."""
    return "ours [interval (its look's level)]" if rules.get("sequential") else f"ours [{level_label(rules)} interval]"


def shown_effects(claim):
    """The effects shown for a claim: the deciding contrast's first, then its other contrasts'."""
    others = [c for c in contrasts(claim) if c is not claim.get("contrast") and c != claim.get("contrast")]
    return [("", our_effect(claim))] + [(f"{c['b']}: ", effect_of(claim, c)) for c in others if effect_of(claim, c)]


def ours(claim, with_level=True):
    """Our effect in the claim's unit with its interval; every contrast of a claim that has several,
    the deciding one first; the level of their looks once where they share it (`with_level`: named here);
    our value for a claim without a paired effect."""
    effects = shown_effects(claim)
    if not effects[0][1]:
        return our_value(claim)
    shared = {e.get("level") for _, e in effects}
    text = "; ".join(name + effect_text(e, with_level and len(shared) > 1) for name, e in effects)
    return text + (f" ({percent(shared.pop())})" if with_level and len(shared) == 1 and None not in shared else "")


def looks_level(claim):
    """The one level of the intervals ours shows for a claim ('97.7%'), or None where they differ or none has one."""
    effects = shown_effects(claim)
    shared = {e.get("level") for _, e in effects if e}
    return percent(shared.pop()) if len(shared) == 1 and None not in shared else None


def tags(claim):
    """The robustness label first, then the claim's other labels."""
    first = [robustness(claim)] if robustness(claim) else []
    return first + [t for t in labels(claim) if t not in first and t != "robust" and not t.startswith("depends on")]


def arm_conditions(claim):
    """The conditions behind a claim's arms, as named by each arm's untrained control."""
    arms = (claim.get("arms") or {}).values()
    return [name for arm in arms if isinstance(arm, dict) for name in (arm.get("control") or {})]


def read_at(claim, budgets, rungs=None):
    """The training length a claim's figure is read at, in words: the rung its key names by index, else
    each arm's budget when the arms of a claim off the ladder train for different lengths (`budgets`:
    condition -> steps), else its primary rung, else the one budget of its arms, else '–'."""
    named = named_rung(claim, rungs)
    if named is not None:
        return f"{named:,} steps"
    steps = sorted({budgets[name] for name in arm_conditions(claim) if name in budgets})
    step = rung(claim)
    if step is not None and (claim.get("ladder") or len(steps) < 2):
        return f"{step:,} steps"
    return " / ".join(f"{s:,}" for s in steps) + " steps" if steps else "–"


def load_claims(path, conditions="resolved/conditions.json"):
    """reports/claims.json as the report shows it, with `read_at` (the training length of each figure)
    and `named_rung` added from the conditions' budgets and rungs."""
    known = json.loads(Path(conditions).read_text())["conditions"] if Path(conditions).exists() else {}
    budgets = {name: c["steps"] for name, c in known.items()}
    rungs = {name: c["rungs"] for name, c in known.items()}
    return [{**c, "read_at": read_at(c, budgets, rungs), "named_rung": named_rung(c, rungs)}
            for c in as_dicts(read_claims(path))]


RECORD = re.compile(r"results/(?:evaluate|pretrain)/[^/]+/([^/*]+)/seed_")     # in a claim in path form (in_path_form)


def section_conditions(judged, registered):
    """The conditions a section's claims read, in the order the registry names them."""
    found = [c for claim in judged for c in RECORD.findall(repr(in_path_form(registered.get(claim["id"], {}))))]
    return list(dict.fromkeys(found))


def _figure_and_step(key):
    """('h.linear', 2400) from 'at.2400.h.linear', ('h.linear', None) from 'eval.h.linear' (the
    budget); None for a key read at a rung named by index or for no key."""
    fields = (key or "").split(".")
    if len(fields) > 2 and fields[0] == "at" and fields[1].isdigit():
        return ".".join(fields[2:]), int(fields[1])
    if len(fields) > 1 and fields[0] == "eval":
        return ".".join(fields[1:]), None
    return None


def _arm_source(claim, name, registered):
    """(condition, figure, step) of a claim's arm read from a single condition (step None: the
    budget), or None for an arm pooled over conditions or read at a rung named by index."""
    spec = in_path_form(((registered.get(claim["id"]) or {}).get("arms") or {}).get(name) or {})
    where = _figure_and_step(((claim.get("arms") or {}).get(name) or {}).get("key"))
    named = RECORD.findall(repr(spec))
    if where is None or not isinstance(spec.get("files"), str) or len(set(named)) != 1:
        return None
    return (named[0], *where)


def section_arms(judged, registered):
    """One row per seed of every arm a section's claims read from a single condition, as judged (at
    the verdict's rung), in the claim's unit (accuracies in %): {condition, figure, step, seed, value,
    unit}; each condition and figure once."""
    rows, seen = [], set()
    for claim in judged:
        scale, unit = scale_unit(claim)
        for name, arm in (claim.get("arms") or {}).items():
            source = _arm_source(claim, name, registered)
            if source is None or source in seen or not all(number(v) is not None for v in arm.get("values", [])):
                continue
            seen.add(source)
            rows += [{"condition": source[0], "figure": source[1], "step": source[2], "seed": seed,
                      "value": scale * value, "unit": unit.strip()}
                     for seed, value in zip(arm.get("seeds") or [], arm["values"])]
    return rows


def published_marks(judged, registered):
    """Where each published effect puts a contrast's first arm: the second arm's mean plus the
    published effect, in the claim's unit, on the panel and column of the first arm (claims whose
    arms are each read from a single condition and whose effect is a - b): {condition, figure, step,
    value, claim}."""
    marks = []
    for claim in judged:
        scale, _ = scale_unit(claim)
        for i, c in enumerate(contrasts(claim)):
            effect, arms = published_effect(claim, i), claim.get("arms") or {}
            a, b = (_arm_source(claim, c.get(side), registered) if c.get(side) in arms else None for side in "ab")
            if effect is None or a is None or b is None or c.get("direction") != "greater" or \
                    number(arms[c["b"]].get("mean")) is None:
                continue
            marks.append({"condition": a[0], "figure": a[1], "step": a[2], "claim": claim["id"],
                          "value": scale * arms[c["b"]]["mean"] + effect})
    return marks
