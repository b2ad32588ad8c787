"""What the report says about each claim, read from reports/claims.json: its origin, labels, effect
in the claim's own unit beside the published one, the count of seeds or realisations, a one-line
reason, the verdict under the original rules, and the registered rule that picks the key findings.

Fields that claims.json does not carry yet (origin, labels, robustness, primary, realisations) are
read when present; otherwise each function says how it falls back. No function here writes HTML.
"""
import hashlib
import math
import re
from collections import Counter

from ..judge.verdicts import DECIDED, JUDGED, MAGNITUDES, NOT_JUDGED, interval_reason, rank

KEY_FINDINGS_RULE = (
    "Key findings are chosen by one fixed rule (render_claims.key_findings): claims of the literature (not the "
    "documents' own examples) whose verdict is reproduced, contradicted or no meaningful effect, with a paired "
    "effect, labelled robust (where claims.json carries robustness labels), neither unstable nor calibrated; the "
    "largest |effect| first, measured in multiples of the claim's own margin (the one unit all claims share), at "
    "most six. A finding that is post hoc or not converged says so.")
DOUBTS = {"unstable", "calibrated"}        # keep a claim out of the key findings
CAVEATS = ("post hoc", "not converged")    # shown beside a key finding


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


def is_robust(claim):
    """Robust by its label; a claim without a robustness label (claims.json has none yet) is not
    ruled out by it."""
    return robustness(claim) in (None, "robust")


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
    return {"mean": scale * mean, "lo": times(lo), "hi": times(hi), "margin": times(margin), "unit": unit}


def published_effect(claim, i=0):
    """The published effect of the claim's i-th contrast in the claim's unit: published_effect_value
    (a number, or one per contrast) times the claim's scale when claims.json holds it; else, for an
    effect in points, the first "<number> points" of the published_effect text (the first
    contrast's); else None."""
    scale, unit = scale_unit(claim)
    value = claim.get("published_effect_value")
    if isinstance(value, list):
        value = value[i] if i < len(value) else None
    elif i > 0:
        value = None
    if number(value) is not None:
        return scale * value
    found = re.search(r"([+-]?\d+(?:\.\d+)?) points", str(claim.get("published_effect") or ""))
    return float(found.group(1)) if found and unit.strip() == "points" and i == 0 else None


def in_margins(claim):
    """The primary effect in multiples of its margin (the one unit every claim shares), or None."""
    c = claim.get("contrast") or {}
    mean, margin = number(c.get("diff_mean")), number(c.get("margin"))
    return mean / margin if mean is not None and margin else None


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
    """Whether a rule of this claim changed after registration (amended[].post_registration, or the
    label)."""
    return "post hoc" in labels(claim) or any(a.get("post_registration") for a in amendments(claim))


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
    """One line on why the verdict is what it is."""
    effect = our_effect(claim)
    v = claim["verdict"]
    if effect and effect["lo"] is not None and effect["margin"] and v in JUDGED:
        args = (effect["lo"], effect["hi"], effect["margin"], effect["unit"], claim["contrast"].get("direction"))
        if v in DECIDED:
            return interval_reason(v, *args)
        return claim["contrast"].get("reason") or interval_reason(v, *args)
    if claim.get("decided_by"):
        return claim["decided_by"]
    return first_sentence(claim.get("note")) or "–"


def key_findings(claims, most=6):
    """The registered rule (KEY_FINDINGS_RULE): robust literature verdicts with a paired effect,
    largest |effect in margins| first, at most `most`."""
    eligible = [c for c in claims if origin(c) == "literature" and c["verdict"] in DECIDED
                and is_robust(c) and not DOUBTS & set(labels(c)) and in_margins(c) is not None]
    return sorted(eligible, key=lambda c: -abs(in_margins(c)))[:most]


def caveats(claim):
    """The labels a key finding carries beside it."""
    return [label for label in CAVEATS if label in labels(claim) or (label == "post hoc" and post_hoc(claim))]


def is_calibrated(claim):
    return "calibrated" in labels(claim)


def counts(claims):
    """{origin: {'judged': Counter, 'not judged': Counter, 'calibrated': n}}: 'not tested', 'not
    testable here' and calibrated figures are kept outside 'judged'."""
    out = {}
    for group in ("literature", "document"):
        members = [c for c in claims if origin(c) == group]
        calibrated = [c for c in members if is_calibrated(c)]
        rest = [c for c in members if not is_calibrated(c)]
        out[group] = {"total": len(members), "calibrated": len(calibrated),
                      "judged": Counter(c["verdict"] for c in rest if c["verdict"] not in NOT_JUDGED),
                      "not judged": Counter(c["verdict"] for c in rest if c["verdict"] in NOT_JUDGED)}
    return out


def by_verdict(claims):
    """Claims sorted by verdict (in verdicts.VERDICTS order), then by |effect in margins|, largest first."""
    return sorted(claims, key=lambda c: (rank(c["verdict"]), -abs(in_margins(c) or 0)))


def sig(x, digits=4):
    """A number at `digits` significant figures, '–' when there is none."""
    x = number(x)
    return "–" if x is None else f"{x:.{digits}g}"


def effect_text(effect):
    """'+6.47 points [+5.29, +7.65]' for an effect of our_effect, '–' for None."""
    if not effect:
        return "–"
    interval = (f" [{effect['lo']:+.3g}, {effect['hi']:+.3g}]" if effect["lo"] is not None and effect["hi"] is not None
                else "")
    return f"{effect['mean']:+.3g}{effect['unit']}{interval}"


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
    """The published figure: the effect in the claim's unit when known, else the text as printed."""
    effect = published_effect(claim)
    if effect is not None:
        return f"{effect:+.3g}{scale_unit(claim)[1]}"
    value = claim.get("published_effect") or claim.get("published")
    if value is None or value == "":
        return "–"
    return sig(value, 6) if number(value) is not None else str(value)


def arm_conditions(claim):
    """The conditions behind a claim's arms, as named by each arm's untrained control."""
    arms = (claim.get("arms") or {}).values()
    return [name for arm in arms if isinstance(arm, dict) for name in (arm.get("control") or {})]


def read_at(claim, budgets):
    """The training length a claim's figure is read at, in words: each arm's budget when the arms of
    a claim off the ladder train for different lengths (`budgets`: condition -> steps), else its
    primary rung, else the one budget of its arms, else '–'."""
    steps = sorted({budgets[name] for name in arm_conditions(claim) if name in budgets})
    step = rung(claim)
    if step is not None and (claim.get("ladder") or len(steps) < 2):
        return f"{step:,} steps"
    return " / ".join(f"{s:,}" for s in steps) + " steps" if steps else "–"


def load_claims(path, conditions="resolved/conditions.json"):
    """reports/claims.json as the report shows it, with `read_at` (the training
    length of each figure) added from the conditions' budgets."""
    import json
    from pathlib import Path
    budgets = {name: c["steps"] for name, c in json.loads(Path(conditions).read_text())["conditions"].items()} \
        if Path(conditions).exists() else {}
    return [{**c, "read_at": read_at(c, budgets)}
            for c in json.loads(Path(path).read_text())]


RECORD = re.compile(r"results/(?:evaluate|pretrain)/[^/]+/([^/*]+)/seed_")


def section_conditions(judged, registered):
    """The conditions a section's claims read, in the order the registry names them."""
    found = [c for claim in judged for c in RECORD.findall(repr(registered.get(claim["id"], {})))]
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


def section_arms(judged, registered):
    """One row per seed of every arm a section's claims read from a single condition, as judged (at
    the verdict's rung): {condition, figure, step, seed, value}; each condition and figure once."""
    rows, seen = [], set()
    for claim in judged:
        specs = (registered.get(claim["id"]) or {}).get("arms") or {}
        for name, arm in (claim.get("arms") or {}).items():
            spec, where = specs.get(name) or {}, _figure_and_step(arm.get("key"))
            named = RECORD.findall(repr(spec))
            if where is None or not isinstance(spec.get("files"), str) or len(set(named)) != 1:
                continue
            if (named[0], *where) in seen or not all(number(v) is not None for v in arm.get("values", [])):
                continue
            seen.add((named[0], *where))
            rows += [{"condition": named[0], "figure": where[0], "step": where[1], "seed": seed, "value": value}
                     for seed, value in zip(arm.get("seeds") or [], arm["values"])]
    return rows
