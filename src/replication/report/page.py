"""The report's HTML pieces: the first screen (the replication summary, the lore table and the
counts), the legend of terms, the claim index, the verdicts under the original rules, each claim's details with its
amendments, and the bibliography. Every string that comes from a file is escaped here (`esc`),
in text and in attributes; anchors use `slug`.
"""
import html
from collections import Counter

from . import claims_view as rc
from .claims_view import slug
from ..judge.registration import amends, path_of
from ..judge.verdicts import (CLASS, DOCUMENT_VERDICTS, JUDGED, MAGNITUDES, NO_EFFECT, RULED_OUT, SHAPE, TREND_RULES,
                              doubling_text, level_label, rank, verdict_rules)
from ..judge.sequential import level_text, level_texts

DOCUMENTS = [   # the three source documents, by their titles
    ("E", "Contrastive Learning", "an encyclopedia article with two runnable examples (NT-Xent in NumPy, a tiny "
                                  "SimCLR in PyTorch)"),
    ("B", "Contrastive Learning Intuition: InfoNCE, Temperature, Alignment and Uniformity",
     "a blog post with a NumPy experiment on the unit circle"),
    ("N", "Contrastive Learning", "a short note on InfoNCE"),
]
PAPERS = [   # (short name as the registry's sources cite it, reference, link)
    ("SimCLR", "Chen, Kornblith, Norouzi, Hinton (2020). A simple framework for contrastive learning of visual "
               "representations", "https://arxiv.org/abs/2002.05709"),
    ("MoCo", "He, Fan, Wu, Xie, Girshick (2020). Momentum contrast for unsupervised visual representation learning",
     "https://arxiv.org/abs/1911.05722"),
    ("MoCo v2", "Chen, Fan, Girshick, He (2020). Improved baselines with momentum contrastive learning",
     "https://arxiv.org/abs/2003.04297"),
    ("SupCon", "Khosla et al. (2020). Supervised contrastive learning", "https://arxiv.org/abs/2004.11362"),
    ("Wang & Isola", "Wang, Isola (2020). Understanding contrastive representation learning through alignment and "
                     "uniformity on the hypersphere", "https://arxiv.org/abs/2005.10242"),
    ("Wang & Liu", "Wang, Liu (2021). Understanding the behaviour of contrastive loss",
     "https://arxiv.org/abs/2012.09740"),
    ("SigLIP", "Zhai, Mustafa, Kolesnikov, Beyer (2023). Sigmoid loss for language image pre-training",
     "https://arxiv.org/abs/2303.15343"),
    ("CLIP", "Radford et al. (2021). Learning transferable visual models from natural language supervision",
     "https://arxiv.org/abs/2103.00020"),
    ("Wu et al.", "Wu, Xiong, Yu, Lin (2018). Unsupervised feature learning via non-parametric instance "
                  "discrimination", "https://arxiv.org/abs/1805.01978"),
    ("CPC", "van den Oord, Li, Vinyals (2018). Representation learning with contrastive predictive coding",
     "https://arxiv.org/abs/1807.03748"),
    ("FaceNet", "Schroff, Kalenichenko, Philbin (2015). FaceNet: a unified embedding for face recognition and "
                "clustering", "https://arxiv.org/abs/1503.03832"),
    ("Hadsell et al.", "Hadsell, Chopra, LeCun (2006). Dimensionality reduction by learning an invariant mapping. "
                       "CVPR 2006", "https://doi.org/10.1109/CVPR.2006.100"),
    ("N-pair", "Sohn (2016). Improved deep metric learning with multi-class N-pair loss objective. NeurIPS 2016",
     "https://papers.nips.cc/paper/2016/hash/6b180037e76c8e7a27d6b3d52e1d5dc8-Abstract.html"),
    ("Poole et al.", "Poole, Ozair, van den Oord, Alemi, Tucker (2019). On variational bounds of mutual information",
     "https://arxiv.org/abs/1905.06922"),
    ("Debiased", "Chuang, Robinson, Lin, Torralba, Jegelka (2020). Debiased contrastive learning",
     "https://arxiv.org/abs/2007.00224"),
]

MAGNITUDE_TERM = "published inside ours / ours larger / ours smaller than published"    # verdicts.MAGNITUDES' phrases
TERMS = [   # terms the page uses besides the verdicts and trends, defined once; {level}: a paired effect's (sequential.level_text),
            # named once at the head of the key and of the legend, not in every term
    ("effect", "the paired per-seed difference between the claim's two arms, signed so that positive supports the "
               "claim, in the claim's unit (points of accuracy, nats, ...), with its t-interval ({level})"),
    ("margin", "the smallest effect the registry counts as meaningful, in the claim's unit, fixed per claim in "
               "analysis/claims.yaml before the run"),
    ("at", "the training length (steps) at which the figure is read; the scale ladder's top rung for ladder claims"),
    ("n", "how many independent runs stand behind a figure: seeds, or thread-count realisations of one seed "
          "(the same seed run at several thread counts, which differ only in float summation order)"),
    ("literature / document / addition", "a claim about a published paper's result; one of the documents' own "
                                         "claims, printed examples and analytic facts; or a claim this study "
                                         "added (each counted apart)"),
    ("trend", "how a ladder claim's effect moves with training length: the slope of the effect against "
              "log10(steps), labelled by the rules below"),
    ("unstable", "the verdict would change if the interval moved by half a standard error (or by the shift a "
                 "second float realisation showed)"),
    ("amended", "a verdict rule changed after results were seen; shown with what changed, why, and the verdict "
                "before → after"),
    ("post hoc", "a rule amended after the registration moved the verdict on the same results (the registered "
                 "rule's verdict beside it)"),
    ("calibrated", "a setting fixed against the figure under test; such a figure is not counted as judged"),
    ("robust", "the verdict holds under every registered alternative analysis (other probes, rungs, compute bases)"),
    ("depends on: …", "the verdict weakens under the named alternative (probe, rung or basis)"),
    ("reverses on …", "a registered alternative probe decides the claim the other way (reproduced on one, "
                      "contradicted on the other); its effect and interval beside it"),
    ("contradicted on …", "the registered probe leaves the claim undecided and this alternative probe "
                          "contradicts it; the effect and interval of the contrast that decided"),
    ("reproduced on …", "the registered probe leaves the claim undecided and this alternative probe "
                        "reproduces it; the effect and interval of the contrast that decided"),
    (RULED_OUT, "the verdict is inconclusive, but the interval excludes the published effect: it is smaller or "
                "larger than published, whichever way the effect turns out against the margin"),
    ("read on …", "the claim's registered probe was not evaluated at the rungs it reads (run 2: the all-label "
                  "probe at the budget only), so its stand-in was read"),
    (MAGNITUDE_TERM, "where the published effect lies "
     "against our interval: inside it, below it (ours larger) or above it (ours smaller)"),
    ("realisation", "the figure rests on realisations of one seed rather than on independent seeds"),
    ("not converged", "one more doubling of steps at the last one's pace would change the verdict (a decided one "
                      "is held)"),
    ("q (BH)", "Benjamini-Hochberg q-value over the registry: shown as a screen, decides nothing"),
    ("–", "a value that does not exist for this claim (never measured, or not applicable)"),
]

def esc(text):
    """Any value as HTML text, safe in element content and in quoted attributes."""
    return html.escape("–" if text is None else str(text), quote=True)


def badge(verdict):
    """A verdict with its shape and colour (the shape is the cue that survives grey print)."""
    return f"<span class='v {CLASS.get(verdict, 'grey')}'>{SHAPE.get(verdict, '·')} {esc(verdict)}</span>"


def verdict_badge(claim):
    """A claim's verdict as badge() draws it, except a null that holds (claims_view.null_reading):
    the shape and colour of no effect, with what held."""
    if not rc.null_reading(claim):
        return badge(claim.get("verdict"))
    return f"<span class='v {CLASS[NO_EFFECT]}'>{SHAPE[NO_EFFECT]} {esc(rc.verdict_words(claim))}</span>"


def link(claim):
    return f"<a href='#claim-{slug(claim['id'])}'><code>{esc(claim['id'])}</code></a>"


def ours_text(claim):
    """Our effect in the claim's unit with its interval, or our value for a claim without one."""
    effect = rc.our_effect(claim)
    return rc.effect_text(effect) if effect else rc.our_value(claim)


def runs_text(claim):
    count, kind = rc.realisations(claim)
    return "–" if count is None else f"{count} {kind}"


def at_text(claim):
    return claim.get("read_at") or rc.read_at(claim, {})


def counts_list(claims):
    """The counts (claims_view.counts_text, the one source of every count on every page)."""
    return "<ul class='counts'>" + "".join(f"<li>{esc(line)}</li>" for line in rc.counts_text(claims)) + "</ul>"


def lore_table(claims, rules):
    """The studies the repository exists for (claims_view.LORE), one row each: the published effect
    with its paper and setting, ours with its interval (at the level of the registry's `rules`), rung
    and runs, the verdict with the magnitude comparison, and the labels."""
    head = ("<tr><th>study</th><th>published (paper: setting)</th><th>ours [interval], at, n, level</th>"
            "<th>verdict</th><th>labels</th></tr>")
    level = lambda c: f", {rc.looks_level(c)}" if rc.looks_level(c) else ""
    rows = "".join(
        f"<tr><td><b>{esc(study)}</b><br>{link(c)}</td><td>{esc(rc.published_text(c))}<br><small>"
        f"{esc(rc.published_setting(c))}</small></td><td>{esc(rc.ours(c, with_level=not rc.looks_level(c)))}<br><small>"
        f"{esc(at_text(c))}, {esc(runs_text(c))}{esc(level(c))}</small></td><td>{verdict_badge(c)}"
        + (f"<br><small>{esc(rc.magnitude_text(c))}</small>" if rc.magnitude_text(c) else "")
        + f"</td><td><small>{esc(', '.join(rc.tags(c)) or '–')}</small></td></tr>" for study, c in rc.lore(claims))
    return f"<table class='lore'>{head}{rows}</table>"


def first_screen(claims, title, summary, rules, scale="", levels=None):
    """Title, the replication summary, the scale line, the lore table with the key to its words, the
    levels table (levels.method_levels), the counts and how many verdicts changed since the first
    registration: what the first two screens hold."""
    return (f"<h1>{esc(title)}</h1><p class='summary'>{esc(summary)}</p>"
            + (f"<p class='scale'><b>Scale.</b> {esc(scale)}</p>" if scale else "")
            + f"<h2 id='sec-lore' class='lore'>The studies the repository exists for</h2>{lore_table(claims, rules)}"
            + lore_key(claims, rules)
            + (levels_table(levels, rules) if levels is not None and len(levels) else "") + counts_list(claims)
            + f"<p class='scale'>{esc(changed_since_first(claims))}</p>")


def term_of(word):
    """The TERMS entry that defines a label as the page prints it ('reverses on wknn: ...' is defined
    by 'reverses on …'), or None."""
    for term, text in TERMS:
        stem = term.removesuffix("…").rstrip(": ")
        if word == term or (term.endswith("…") and word.startswith(stem)) or \
                (term == MAGNITUDE_TERM and word in MAGNITUDES.values()):
            return term, text
    return None


def lore_key(claims, rules):
    """The words of the lore table, each defined where the reader first meets them (printed, not on
    hover): its verdicts, the magnitude phrase and every label it shows."""
    level = level_text(rules)                 # the paired contrasts' intervals
    rows = [c for _, c in rc.lore(claims)]
    verdicts = {c["verdict"] for c in rows}
    pairs = [(badge(v), esc(rule)) for v, rule in verdict_rules(*level_texts(rules), brief=True) if v in verdicts]
    words = [rc.magnitude_text(c) for c in rows if rc.magnitude_text(c)] + [t for c in rows for t in rc.tags(c)]
    defined = dict.fromkeys(filter(None, map(term_of, words)))
    pairs += [(f"<i>{esc(term)}</i>", esc(text.format(level=level))) for term, text in defined]
    return (f"<p class='key'><b>Key</b> (an effect's interval: {esc(level)}, named in its row). "
            + "; ".join(f"{term}: {text}" for term, text in pairs)
            + ". Every rule in full: <a href='#sec-legend'>Legend</a>.</p>")


def changed_since_first(claims):
    """How many judged verdicts differ from the verdict the first registered rules gave."""
    judged = [c for c in claims if c.get("verdict") in JUDGED]
    moved = sum(rc.original_verdict(c) != c["verdict"] for c in judged)
    return (f"{moved} of {len(judged)} judged verdicts differ from the verdict the first registered rules gave (each "
            "claim's amendments list what changed and why).")


def levels_table(levels, rules):
    """What each method reached at its budget, benchmark style (levels.method_levels): one row per
    method, one line each where the published figure allows (its arm on hover and in the section
    'What each arm reached'), every cell escaped."""
    columns = [c for c in levels.columns if c not in ("method", "arm")]
    head = "<tr><th>method</th>" + "".join(f"<th>{esc(c)}</th>" for c in columns) + "</tr>"
    rows = "".join(f"<tr><td title='{esc(row['arm'])}'><b>{esc(row['method'])}</b></td>"
                   + "".join(f"<td>{esc(str(row[c]))}</td>" for c in columns) + "</tr>" for _, row in levels.iterrows())
    return (f"<h2 id='sec-levels-first' class='lore'>What each method reached</h2><p class='scale'>Accuracy on h, % "
            f"(mean over seeds [{esc(level_label(rules))} interval]) at each method's budget; CPU-min: the arm's whole "
            "run; published: ImageNet top-1 of a ResNet-50 in the paper's setting, unless noted.</p>"
            f"<table class='levels-first'>{head}{rows}</table>")


def definition_list(pairs, verdicts=False):
    items = "".join(f"<dt>{badge(term) if verdicts else esc(term)}</dt><dd>{esc(rule)}</dd>" for term, rule in pairs)
    return f"<dl class='legend'>{items}</dl>"


def legend(rules):
    """Every term of the page, defined once, near the top, folded; intervals at the level of the
    registry's `rules`."""
    level = level_text(rules)                 # the paired contrasts' intervals
    return ("<h2 id='sec-legend'>Legend</h2><details class='legend'><summary>Every verdict, trend and term of the "
            "page, defined</summary><p>Verdicts of the literature's claims (m: the claim's margin; lo, hi: the "
            f"interval of the effect, {level}):</p>"
            + definition_list(verdict_rules(*level_texts(rules)), verdicts=True)
            + "<p>Verdicts of the documents' printed examples and analytic facts:</p>"
            + definition_list(DOCUMENT_VERDICTS, verdicts=True)
            + "<p>Trends along the scale ladder (b: the slope per decade of steps):</p>"
            + definition_list(TREND_RULES) + f"<p>Other terms (an effect's interval: {level}):</p>"
            + definition_list([(term, text.format(level=level)) for term, text in TERMS]) + "</details>")


def index_table(claims, rules):
    """One line per claim: verdict (and the original one when it changed), published and our effect
    in one unit (its interval at the level of the registry's `rules`), the rung, the runs and the
    robustness label."""
    head = (f"<tr><th>claim</th><th>verdict</th><th>published</th><th>{esc(rc.ours_heading(rules))}</th><th>at</th>"
            "<th>n</th><th>labels</th></tr>")
    rows = []
    for c in claims:
        was = rc.original_verdict(c)
        before = f" <small>(was {esc(was)})</small>" if was != c["verdict"] else ""
        before += f"<br><small>{esc(rc.magnitude_text(c))}</small>" if rc.magnitude_text(c) else ""
        rows.append(f"<tr><td>{link(c)}</td><td>{verdict_badge(c)}{before}</td><td>{esc(rc.published_text(c))}</td>"
                    f"<td>{esc(ours_text(c))}</td><td>{esc(at_text(c))}</td><td>{esc(runs_text(c))}</td>"
                    f"<td>{esc(', '.join(rc.tags(c)) or '–')}</td></tr>")
    return f"<table class='index'>{head}{''.join(rows)}</table>"


def folded_index(title, claims, rules):
    """index_table folded under its title (a reader unfolds it when wanted)."""
    return (f"<details class='index-fold'><summary><b>{esc(title)} ({len(claims)})</b></summary>"
            f"{index_table(rc.by_verdict(claims), rules)}</details>")


def original_vs_current(claims):
    """A cross table: verdicts under the rules registered first (rows) against the current ones."""
    pairs = Counter((rc.original_verdict(c), c["verdict"]) for c in claims)
    before = sorted({b for b, _ in pairs}, key=rank)
    now = sorted({a for _, a in pairs}, key=rank)
    head = "<tr><th>original rules ↓ / now →</th>" + "".join(f"<th>{badge(v)}</th>" for v in now) + "<th>total</th></tr>"
    body = "".join(f"<tr><th>{badge(b)}</th>" + "".join(
        f"<td class='{'same' if a == b else ''}'>{pairs.get((b, a), '') or ''}</td>" for a in now)
        + f"<td>{sum(pairs.get((b, a), 0) for a in now)}</td></tr>" for b in before)
    return f"<table class='crosstab'>{head}{body}</table>"


def shared_amendments(claims):
    """Amendments that several claims share, numbered once: {(date, what, why): 'A1', ...}."""
    seen = Counter((a.get("date"), a.get("what"), a.get("why")) for c in claims for a in rc.amendments(c))
    shared = [key for key, n in seen.items() if n > 1]
    return {key: f"A{i + 1}" for i, key in enumerate(shared)}


def amendment_list(claim, shared):
    """Each amendment of a claim inline: date, verdict before → after, what and why (a shared
    amendment's text is printed once, in the Amendments section, and linked)."""
    history = rc.amendments(claim)
    after = [a.get("previous_verdict") for a in history[1:]] + [claim["verdict"]]
    items = []
    for a, now in zip(history, after):
        key = (a.get("date"), a.get("what"), a.get("why"))
        flag = " (post-registration)" if a.get("post_registration") else ""
        head = f"{esc(a.get('date'))}{flag}: {esc(a.get('previous_verdict'))} → {esc(now)}"
        if key in shared:
            body = f"What and why: <a href='#amend-{shared[key]}'>{shared[key]}</a> (shared with other claims)"
        else:
            body = f"<b>what</b>: {esc(a.get('what'))} <b>why</b>: {esc(a.get('why'))}"
        items.append(f"<li>{head}. {body}</li>")
    return f"<details class='amend'><summary>amended {len(history)}×</summary><ul>{''.join(items)}</ul></details>" \
        if items else ""


def amendments_section(claims, shared):
    """The shared amendments' full text, each once, with the claims it changed."""
    items = []
    for key, name in shared.items():
        date, what, why = key
        members = [c for c in claims if key in {(a.get("date"), a.get("what"), a.get("why")) for a in rc.amendments(c)}]
        items.append(f"<li id='amend-{name}'><b>{name}</b> ({esc(date)}, {len(members)} claims: "
                     f"{', '.join(link(c) for c in members)}). <b>what</b>: {esc(what)} <b>why</b>: {esc(why)}</li>")
    return (f"<details class='shared'><summary>The {len(items)} amendments shared by several claims: what "
            f"changed and why</summary><ol class='amendments'>{''.join(items)}</ol></details>")


def contrast_lines(claim):
    """Every contrast of a claim: arms, effect in the claim's unit, margin, verdict and q, and what
    its interval says of the published effect."""
    lines = []
    for c in rc.contrasts(claim):
        effect = rc.effect_of(claim, c)
        if effect is None:
            lines.append(f"{esc(c.get('a'))} − {esc(c.get('b'))}: {esc(c.get('reason') or '–')}")
            continue
        margin_text = f", margin ±{effect['margin']:.3g}{effect['unit']}" if effect["margin"] is not None else ""
        extra = f", basis: {esc(c['basis'])}" if c.get("basis") else ""
        flag = ", unstable" if c.get("unstable") else ""
        answer = f"; {esc(c['published_answer'])}" if c.get("published_answer") else ""
        lines.append(f"{esc(c.get('a'))} − {esc(c.get('b'))}: {esc(rc.effect_text(effect))}"
                     f"{esc(margin_text)}{extra}: {badge(c.get('verdict'))}{flag}{answer}")
    return lines


def robustness_table(claim):
    """The registered alternatives with their verdicts and effects (in the claim's unit, with their
    interval), when claims.json has them."""
    alternatives = (claim.get("robustness") or {}).get("alternatives") or []
    if not alternatives:
        return ""
    rows = "".join(f"<tr><td>{esc(a.get('dimension'))}</td><td>{esc(a.get('choice'))}</td>"
                   f"<td>{badge(a.get('verdict'))}</td><td>{esc(rc.effect_text(rc.effect_of(claim, a)))}</td></tr>"
                   for a in alternatives)
    return ("<table class='small'><tr><th>alternative</th><th>choice</th><th>verdict</th><th>effect</th></tr>"
            f"{rows}</table>")


def convergence_text(claim):
    """The convergence rule's reading: each deciding contrast over its last doubling and one more on,
    then each arm's own move (descriptive)."""
    conv = claim.get("convergence") or {}
    scale, unit = rc.scale_unit(claim)
    parts = [f"against {m['b']}: {doubling_text(m, scale, unit)}" for m in conv.get("contrasts") or []]
    parts += [f"{name} {a['moved']}" for name, a in (conv.get("arms") or {}).items()]
    if not parts:
        return esc(conv.get("reason")) if conv.get("reason") else None
    held = f"held: its interval gives {conv['held']}; " if conv.get("held") else ""
    return esc(held + "; ".join(parts))


def rung_steps(rung):
    step = rc.number(rung.get("step"))
    return "–" if step is None else f"{int(step):,} steps"


def claim_details(claim, shared):
    """A claim in full, folded: statement, source, published and ours, the analysis, the note and
    the amendments. Its anchor (#claim-<id>) is the only one on the page."""
    rows = [("source", esc(claim.get("source"))), ("published", esc(claim.get("published"))),
            ("published effect", esc(claim.get("published_effect"))), ("measured", esc(claim.get("metric")))]
    lines = contrast_lines(claim)
    rows.append(("ours", "<br>".join(lines) if lines else esc(rc.our_value(claim))))
    primary = claim.get("primary") or {}
    if primary and claim.get("named_rung") is not None:
        primary = {**primary, "rung": claim["named_rung"]}
    if primary:
        rows.append(("primary analysis", esc(", ".join(f"{k} {v}" for k, v in primary.items()))))
    if claim.get("ladder"):
        steps = ", ".join(f"{esc(rung_steps(r))}: {badge(r.get('verdict'))}" for r in claim["ladder"])
        context = primary.get("ladder_probe")          # the ladder read on another probe than the primary's
        rows.append(("along the ladder" + (f" (on {esc(context)}, as context)" if context else ""),
                     f"{steps}; trend: {esc(claim.get('trend'))}"))
    if rc.number(claim.get("q_bh")) is not None:
        rows.append(("q (BH)", esc(rc.sig(claim["q_bh"], 2))))
    if convergence_text(claim):
        rows.append(("convergence", convergence_text(claim)))
    rows.append(("note", esc(rc.note_without_effect(claim.get("note")) or "–")))
    table = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return (f"<details class='claim' id='claim-{slug(claim['id'])}'><summary><code>{esc(claim['id'])}</code> "
            f"{verdict_badge(claim)} {esc(claim['statement'])}</summary><table class='detail'>{table}</table>"
            f"{robustness_table(claim)}{amendment_list(claim, shared)}</details>")


def claim_list(claims, shared):
    return "".join(claim_details(c, shared) for c in claims)


def registration_section(record, judged_under, commit, claims, amendments=()):
    """The latest registration on the page: its run, date and path, the sha256 of every registered
    file, whether the verdicts were judged under it (`judged_under`: the registration date the
    analysis ran under, reports/summary.json's registered_on; the analysis stops when a registered
    file differs, so a match means the judged files matched), the commit that added the record, the
    previous run's record and commit, and each amendment made after it with the verdict under the
    rule as registered. `record` None: not registered yet."""
    if record is None:
        return ("<p><b>Not registered.</b> No analysis/registration.json: the verdicts on this page are not yet "
                "judged by registered rules (tools/register.py writes the record before a full run).</p>")
    date, run = record.get("date"), record.get("run", 1)
    if judged_under == date:
        match = ("yes: before judging, the analysis compared the sha256 of every registered file with the record "
                 "and judged under this registration")
    elif judged_under is None:
        match = "no: reports/claims.json was judged before this registration (rerun the analysis)"
    else:
        match = f"no: reports/claims.json was judged under the registration of {esc(judged_under)}"
    sha, day = commit
    previous = record.get("previous")
    before = (f"<p>Run {run - 1} was registered by {esc(previous.get('record'))} on {esc(previous.get('date'))}; "
              f"its verdicts are those of the report committed at <code>{esc(previous.get('commit'))}</code>.</p>"
              if previous else "")
    files = "".join(f"<tr><td><code>{esc(path)}</code></td><td><code>{esc(digest)}</code></td></tr>"
                    for path, digest in sorted((record.get("sha256") or {}).items()))
    files += f"<tr><td>the registry's rules</td><td><code>{esc(record.get('rules_sha256'))}</code></td></tr>"
    return (f"<p><b>Rules registered on {esc(date)}</b> for registered run {run} ({path_of(run)}, added by commit "
            f"<code>{esc(sha)}</code>{f' of {esc(day)}' if day else ''}). Judged files match the registration: "
            f"{match}.</p>{before}<details><summary>The registered sha256 of {len(record.get('sha256') or {})} files "
            f"and of the rules</summary><table class='registered'><tr><th>file</th><th>sha256 at registration</th>"
            f"</tr>{files}</table></details>{code_amendments(amendments)}{post_registration_table(claims, run)}")


def code_amendments(amendments):
    """Judging code that moved after the registration without moving a verdict: each amendment's
    date, what and why, the claims.json it reproduced byte for byte, and the files it froze."""
    if not amendments:
        return ""
    items = []
    for a in amendments:
        files = "".join(f"<tr><td><code>{esc(path)}</code></td><td><code>{esc(digest)}</code></td></tr>"
                        for path, digest in sorted(a.get("sha256", {}).items()))
        if a.get("frozen_verdicts"):
            head = (f"<b>{esc(a.get('date'))}: rules changed after the registration.</b> {esc(a.get('what'))} "
                    f"({esc(a.get('why'))}). The verdicts the frozen code gave are kept (from reports/claims.json, "
                    f"sha256 <code>{esc(a.get('claims_json_sha256'))}</code>); every verdict this change moved is "
                    "labelled post hoc and shown beside the frozen one below.")
        else:
            head = (f"<b>{esc(a.get('date'))}: code moved, verdicts identical.</b> {esc(a.get('what'))} "
                    f"({esc(a.get('why'))}). The moved code judged the committed results to the same "
                    f"reports/claims.json (sha256 <code>{esc(a.get('claims_json_sha256'))}</code>), so the "
                    "registered run keeps its verdicts.")
        items.append(f"<li>{head} From then on the judged files are checked against these hashes.<details><summary>"
                     f"The {len(a.get('sha256', {}))} judged files as amended</summary><table class='registered'>"
                     f"<tr><th>file</th><th>sha256</th></tr>{files}</table></details></li>")
    moved = sum(bool(a.get("frozen_verdicts")) for a in amendments)
    return (f"<details class='deviations'><summary>{len(amendments)} amendment(s) of the registration's code "
            f"(analysis/registration_amendments.json): {len(amendments) - moved} moved code without moving a "
            f"verdict, {moved} changed rules</summary><ul>{''.join(items)}</ul></details>")


def post_registration_table(claims, run=1):
    """Every claim amended after registered run `run`'s record: the amendment, the verdict now and
    the verdict under its rule as registered (claims.json's frozen_verdict; a claim new since has none)."""
    rows = []
    for c in claims:
        late = [a for a in rc.amendments(c) if amends(a, run)]
        late += [{"date": change["date"], "what": f"the registry-wide rule change above: {change['what']}",
                  "why": "a rule of the registration replaced after results were seen"}
                 for change in c.get("rules_amended") or []]
        late += [{"date": "", "what": f"moved by the data, not a rule: {move['before']} → {move['after']} with "
                  f"{move['by']}", "why": "registered before the run"} for move in c.get("moved_by_data") or []]
        if not late and "frozen_verdict" not in c:
            continue
        frozen = badge(c["frozen_verdict"]) if c.get("frozen_verdict") else "– (not registered: a claim new since)"
        what = "<br>".join(f"{esc(a.get('date'))}: <b>what</b>: {esc(a.get('what'))} <b>why</b>: {esc(a.get('why'))}"
                           for a in late) or "–"
        rows.append(f"<tr><td>{link(c)}</td><td>{what}</td><td>{verdict_badge(c)}</td><td>{frozen}</td></tr>")
    if not rows:
        return "<p>No rule has been amended since the registration.</p>"
    moved = rc.counts(claims)["labels"]["post_hoc"]          # a rule moved them on the same results
    return (f"<details class='deviations'><summary>{len(rows)} claims amended after the registration, or moved since "
            f"it, each judged by its current rule and by the rule as registered; {moved} verdicts differ (post hoc)"
            "</summary>"
            "<table class='post-registration'><tr><th>claim</th><th>amendment</th>"
            "<th>verdict now</th><th>verdict under the registered rule</th></tr>" + "".join(rows) + "</table></details>")


def stage_table(stage_times):
    """reports/stage_times.json as a table: each stage's wall time, its share in DVC, the CPU and
    the precision it ran at (records written before precision was recorded say so), the date."""
    head = ("<tr><th>stage</th><th>seconds</th><th>of which in DVC</th><th>CPU</th><th>precision</th>"
            "<th>date</th></tr>")
    rows = "".join(f"<tr><td>{esc(name)}</td><td>{esc(r.get('seconds'))}</td><td>{esc(r.get('seconds_in_dvc'))}</td>"
                   f"<td>{esc(r.get('cpu'))}</td><td>{esc(r.get('precision') or 'not recorded')}</td>"
                   f"<td>{esc(r.get('date'))}</td></tr>" for name, r in sorted(stage_times.items()))
    return f"<table class='stages'>{head}{rows}</table>"


def toc(entries):
    """The table of contents, kept in view beside the page."""
    items = "".join(f"<li><a href='#sec-{esc(name)}'>{esc(title)}</a></li>" for name, title in entries)
    return f"<nav class='toc'><b>Contents</b><ul>{items}</ul></nav>"


def bibliography():
    """The three source documents by title, and every paper the registry cites, with links."""
    documents = "".join(f"<li>[{key}] “{esc(title)}”: {esc(what)}.</li>" for key, title, what in DOCUMENTS)
    papers = "".join(f"<li>{esc(name)}: {esc(ref)}. <a href='{esc(url)}'>{esc(url.split('//')[1])}</a></li>"
                     for name, ref, url in PAPERS)
    return f"<p>Source documents:</p><ul>{documents}</ul><p>Papers they cite, tested here:</p><ul>{papers}</ul>"
