"""The report's "Setup and deviations" table: each design choice in which this study differs from
the papers where the difference could decide an outcome, the paper's value beside ours.

analysis/deviations.yaml lists the entries. Each has the setting; the paper's value and where the
paper gives it; OUR value as a template; why we differ; and the claims it can affect (ids of
reports/claims.json, or `all trained`: every claim judged on a trained encoder).

Our side is never typed: each placeholder {file:key.path} of the template is read at render time
from resolved/<file>.json (key.path: keys separated by dots), and {derived:name} from the facts in
`derived_facts`, computed from the resolved files and the pipeline's run records. The text around
the placeholders may hold no number, so none on our side can drift from the configuration that
ran. A bad file, a path that resolves to nothing or an unknown claim id is one DeviationError line
that names the entry.
"""
import json
import re
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..io import load_yaml
from .claims_view import slug
from .page import esc
from .markdown import cell, code

DEVIATIONS = Path("analysis/deviations.yaml")
PLACEHOLDER = re.compile(r"\{([^{}:]+):([^{}]+)\}")
TYPED_NUMBER = re.compile(r"(?<!\w)\d[\d.,]*")     # a number, not the digits of a name (MoCo v2, fp32)
REFERENCE_ARM = ("pretrain/simclr_mocov2", "simclr")    # the default arm: resolved file and condition
ALL_TRAINED = "all trained"
MISSING = object()                                      # a key path that leads nowhere


class DeviationError(Exception):
    """analysis/deviations.yaml cannot be shown; str(e) is the one line to print."""


def _read_never_typed(template):
    if not PLACEHOLDER.search(template):
        raise ValueError("needs at least one {file:key.path} placeholder: our value is read, never typed")
    typed = TYPED_NUMBER.findall(PLACEHOLDER.sub("", template))
    if typed:
        raise ValueError(f"holds the typed number {typed[0]!r} outside a placeholder; read it from the "
                         "resolved configuration instead")
    return template


Text = Annotated[str, Field(min_length=1)]


class Deviation(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    setting: Text
    paper: Text                                # the paper's value
    source: Text                               # where the paper gives it: "SimCLR, Sec. 2.3"
    ours: Annotated[str, AfterValidator(_read_never_typed)]
    rule: Text | None = None                   # how a horizon-type setting crosses from the paper's run to ours
    why: Text
    claims: Annotated[list[Text], Field(min_length=1)] | Literal["all trained"]   # ALL_TRAINED


class DeviationsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    deviations: Annotated[list[Deviation], Field(min_length=1)]

    @field_validator("deviations")
    @classmethod
    def _settings_unique(cls, entries):
        settings = [e.setting for e in entries]
        repeated = sorted({s for s in settings if settings.count(s) > 1})
        if repeated:
            raise ValueError(f"setting {repeated[0]!r} is listed twice")
        return entries


def _where(loc, raw):
    """An error location as words: "entry 3 ('batch sizes'): ours"."""
    if len(loc) >= 2 and loc[0] == "deviations" and isinstance(loc[1], int):
        entries = raw.get("deviations") if isinstance(raw, dict) else None
        entry = entries[loc[1]] if isinstance(entries, list) and loc[1] < len(entries) else None
        name = f" ({entry.get('setting')!r})" if isinstance(entry, dict) and entry.get("setting") else ""
        field = ".".join(str(p) for p in loc[2:3])
        return f"entry {loc[1] + 1}{name}" + (f": {field}" if field else "")
    return ".".join(str(p) for p in loc) or "the file"


def load_deviations(path=DEVIATIONS):
    """The validated entries of analysis/deviations.yaml (DeviationError: one line)."""
    path = Path(path)
    try:
        raw = load_yaml(path.read_text())
    except OSError:
        raise DeviationError(f"{path}: missing; the report's setup table is read from it") from None
    except yaml.YAMLError as e:                           # a key given twice included
        raise DeviationError(f"{path}: not valid YAML ({' '.join(str(e).split())})") from None
    try:
        return DeviationsFile.model_validate(raw).deviations
    except ValidationError as e:
        first = e.errors()[0]
        message = first["msg"].removeprefix("Value error, ")
        raise DeviationError(f"{path}: {_where(first['loc'], raw)}: {message}") from None


def show(value):
    """A configuration value as the table prints it."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return " / ".join(show(v) for v in value) or "none"
    return "none" if value is None else str(value)


def lookup(data, dotted):
    """data[k1][k2]... for dotted = "k1.k2...", or MISSING where a key is absent."""
    for key in dotted.split("."):
        if not isinstance(data, dict) or key not in data:
            return MISSING
        data = data[key]
    return data


def fill(template, resolved_root, derived):
    """The template with every placeholder read; a placeholder that resolves to nothing (or to a
    whole mapping) raises ValueError naming it."""
    def value(match):
        file, dotted = match.groups()
        if file == "derived":
            found = derived.get(dotted, MISSING)
            where = "the derived facts (deviations.derived_facts)"
        else:
            path = Path(resolved_root, f"{file}.json")
            found = lookup(json.loads(path.read_text()), dotted) if path.is_file() else MISSING
            where = str(path) if path.is_file() else f"{path} (no such file)"
        if found is MISSING or isinstance(found, dict):
            raise ValueError(f"{match.group(0)} resolves to {'nothing' if found is MISSING else 'a mapping'} "
                             f"in {where}")
        return show(found)
    return PLACEHOLDER.sub(value, template)


def resolve_deviations(entries, claim_ids, resolved_root="resolved", derived=None, path=DEVIATIONS):
    """Rows to show: each entry as a dict with `ours` read from the configuration. DeviationError
    names the entry whose placeholder resolves to nothing or whose claim id is unknown."""
    rows = []
    for i, entry in enumerate(entries):
        name = f"{path}: entry {i + 1} ({entry.setting!r})"
        try:
            ours = fill(entry.ours, resolved_root, derived or {})
        except ValueError as e:
            raise DeviationError(f"{name}: ours: {e}") from None
        unknown = [c for c in entry.claims if c not in claim_ids] if entry.claims != ALL_TRAINED else []
        if unknown:
            raise DeviationError(f"{name}: claims: {unknown[0]!r} is not a claim of reports/claims.json")
        rows.append({**entry.model_dump(), "ours": ours})
    return rows


def derived_facts(results_root="results", resolved_root="resolved"):
    """Facts of the run that no single resolved value holds, for {derived:name} placeholders:
    precision: every pretraining run's arithmetic, as its record says (fp32 where a record predates
    the field: the first registered run trained in fp32 only);
    learning_rates: each method's learning rates as its runs recorded them (learning_rates);
    train_images, classes: the reference arm's training set (from its run records);
    epochs: the reference arm's top rung in passes over that set (steps x batch / train_images);
    and MoCo's horizons (horizon_facts). A fact the files cannot give is left out (a placeholder
    naming it is then an error)."""
    file, condition = REFERENCE_ARM
    facts = horizon_facts(resolved_root)
    trained = [json.loads(path.read_text()) for path in Path(results_root, "pretrain").glob("*/*/seed_*.json")]
    precisions = {r.get("precision", "fp32") for r in trained}
    if precisions:
        facts["precision"] = " and ".join(sorted(precisions))
    rates = learning_rates(trained)
    if rates:
        facts["learning_rates"] = rates
    records = sorted(Path(results_root, file, condition).glob("seed_*.json"))
    if records:
        record = json.loads(records[0].read_text())
        cfg = record["config"]
        facts.update(train_images=record["n_data"], classes=record["n_classes"],
                     epochs=round(max([cfg["steps"], *cfg.get("ladder", [])]) * cfg["batch"] / record["n_data"], 1))
    return facts


def learning_rates(trained):
    """Each method's learning rates as its pretraining records say they trained (lr_used: the tuned
    rate, scaled where a batch study scales it), a method with another loss named with it:
    'moco 0.0003 / 0.000707; simclr 0.00267 / 0.00534; simclr with logistic 0.003'."""
    rates = {}
    for record in trained:
        cfg = record.get("config") or {}
        if record.get("lr_used") is None or "method" not in cfg:
            continue
        loss = cfg.get("loss") or "nt_xent"
        name = cfg["method"] + ("" if loss == "nt_xent" else f" with {loss}")
        rates.setdefault(name, set()).add(float(f"{record['lr_used']:.3g}"))
    return "; ".join(f"{name} {' / '.join(f'{v:g}' for v in sorted(values))}" for name, values in sorted(rates.items()))


HORIZON_ARMS = {"moco": ("pretrain/moco_momentum", "moco_m0999"), "mocov2": ("pretrain/simclr_mocov2", "mocov2")}


def horizon_facts(resolved_root="resolved"):
    """MoCo's horizons in the resolved configuration, for each arm of HORIZON_ARMS (its name as the
    prefix): `_span`, the steps the queue spans (K / batch); `_horizon`, the steps the key encoder
    averages over at its momentum (1 / (1 - m)); `_share`, that horizon as a share of the arm's run
    (its last rung), in %. moco_span_max: the longest span among the momentum study's MoCo arms."""
    facts = {}
    for name, (file, condition) in HORIZON_ARMS.items():
        path = Path(resolved_root, f"{file}.json")
        if not path.exists():
            continue
        conditions = json.loads(path.read_text())["conditions"]
        cfg = conditions[condition]
        horizon = 1 / (1 - cfg["momentum"]) if cfg["momentum"] < 1 else float("inf")
        facts.update({f"{name}_span": round(cfg["queue"] / cfg["batch"], 1), f"{name}_horizon": round(horizon),
                      f"{name}_share": round(100 * horizon / max([cfg["steps"], *cfg.get("ladder", [])]))})
        if name == "moco":
            facts["moco_span_max"] = max(round(c["queue"] / c["batch"], 1) for c in conditions.values()
                                         if c["method"] == "moco")
    return facts


def miniature(resolved_root="resolved", data_root="data"):
    """The scale the study runs at, in words, read from the resolved configuration and the datasets'
    manifests: image size, the datasets the studies train on and their classes, the reference arm's
    budget, the ladder's top rungs."""
    file, condition = REFERENCE_ARM
    default = json.loads(Path(resolved_root, f"{file}.json").read_text())["conditions"][condition]
    size = json.loads(Path(resolved_root, "data.json").read_text())["image_size"]
    trained = [json.loads(p.read_text())["conditions"].values() for p in Path(resolved_root, "pretrain").glob("*.json")]
    datasets = sorted({c["dataset"] for study in trained for c in study}, key=lambda d: d != default["dataset"])
    classes = {d: len(json.loads(Path(data_root, f"{d}.json").read_text())["classes"]) for d in datasets}
    conditions = json.loads(Path(resolved_root, "conditions.json").read_text())["conditions"].values()
    top = max(c["rungs"][-1] for c in conditions)
    return (f"synthetic {size}x{size} images "
            f"({'; '.join(f'{d}, {n} classes' for d, n in classes.items())}), a three-layer CNN, "
            f"{default['steps']:,} steps of {default['batch']} images, ladder claims up to {top:,} steps")


SCALE_SETTINGS = ("dataset and image size", "encoder", "training length", "the probe")   # the papers' scale


def scale_line(entries, ours):
    """One line of scale and protocol: `ours` (miniature() and the primary probe) against the papers'
    values of the SCALE_SETTINGS entries of analysis/deviations.yaml (the first clause of each; the
    setup table gives them whole)."""
    papers = {e.setting: re.split(r"[:;]", e.paper)[0].strip() for e in entries}     # each value's first clause
    return f"Ours, on a CPU: {ours}. The papers: " + "; ".join(papers[s] for s in SCALE_SETTINGS if s in papers) + "."


def claim_links(entry, link):
    """The claims an entry can affect, each written by `link(id)`; `all trained` in words."""
    if entry["claims"] == ALL_TRAINED:
        return "every claim judged on a trained encoder"
    return ", ".join(link(c) for c in entry["claims"])


def _with_rule(row, escape):
    """Our value, after the rule that maps the paper's value to it where the entry states one."""
    return (f"rule: {escape(row['rule'])}; ours: " if row.get("rule") else "") + escape(row["ours"])


def deviations_html(rows):
    """The setup table as HTML, folded under a summary that names every setting (the page keeps its
    visible words few): the setting, the papers' value beside ours, why we differ, and the claims it
    can affect, linked to their details. Every string escaped."""
    head = "<tr><th>setting</th><th>the papers</th><th>ours</th><th>why</th><th>claims it can affect</th></tr>"
    body = []
    for r in rows:
        claims = claim_links(r, lambda c: f"<a href='#claim-{slug(c)}'><code>{esc(c)}</code></a>")
        body.append(f"<tr><th>{esc(r['setting'])}</th><td>{esc(r['paper'])} <small>({esc(r['source'])})</small></td>"
                    f"<td>{_with_rule(r, esc)}</td><td>{esc(r['why'])}</td><td>{claims}</td></tr>")
    settings = "; ".join(esc(r["setting"]) for r in rows)
    return (f"<details class='deviations'><summary>The {len(rows)} settings in which the study differs from the "
            f"papers, the papers' values beside ours: {settings}</summary><table class='deviations'>{head}"
            f"{''.join(body)}</table></details>")


def deviations_markdown(rows):
    """The setup table as a Markdown section of reports/claims.md, every cell escaped."""
    lines = ["| setting | the papers | ours | why | claims it can affect |", "|---|---|---|---|---|"]
    for r in rows:
        claims = claim_links(r, code)
        lines.append(f"| {cell(r['setting'])} | {cell(r['paper'])} ({cell(r['source'])}) | {_with_rule(r, cell)} | "
                     f"{cell(r['why'])} | {claims} |")
    return ("## Setup: where this study differs from the papers\n\n"
            "Our values are read from the resolved configuration (resolved/) when the report is rendered; the "
            "papers' values with where they give them.\n\n" + "\n".join(lines) + "\n")
