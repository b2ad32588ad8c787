"""What each method reached: every condition's probes on h at every rung, read from the evaluation
records (results/evaluate/<study>/<condition>/seed_<k>.json, `at`: {step: metrics}; step 0 is the
untrained control; the linear probe on every label only at the budget), beside the published
figures of the claims that read the condition."""
import json
from pathlib import Path

from typing import Annotated

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import claims_view as rc
from ..judge.measure import record_paths
from ..judge.probes import probe_title
from ..judge.results import Results, study_of
from ..judge.stats import t_interval
from ..io import load_yaml
from ..schema import one_line

SHOWN = ("linear", "linear_full", "knn")     # the probes on h the table shows, in its order


def probe_names(protocol):
    """{metric key on h: column title} in the words of the record's own protocol."""
    return {probe: probe_title(probe, protocol) for probe in SHOWN}


def levels(root="."):
    """One row per study, condition and rung: the mean over seeds of each probe on h, in %, and the
    seeds behind it (stage 2's among them); the columns in the order of probe_names."""
    rows, names, studies = [], {}, study_of(root)
    for path in sorted(Path(root, "results", "evaluate").glob("*/*/seed_*.json")):
        record = json.loads(path.read_text())
        for step, metrics in (record.get("at") or {}).items():
            names = names or probe_names(metrics["protocol"])
            rows.append({"study": studies.get(path.parts[-2], path.parts[-3]), "condition": path.parts[-2],
                         "step": int(step),
                         **{title: 100 * metrics["h"][key] for key, title in probe_names(metrics["protocol"]).items()
                            if rc.number(metrics["h"].get(key)) is not None}})
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(rows).groupby(["study", "condition", "step"], sort=True)
    return table.mean().join(table.size().rename("seeds"))[[*names.values(), "seeds"]].reset_index()


def published_figures(claims):
    """{condition: 'claim: the published figures as printed; ...'} for the claims that read the
    condition and print a level in %."""
    found = {}
    for claim in claims:
        if "%" in str(claim.get("published") or ""):
            for condition in dict.fromkeys(rc.arm_conditions(claim)):
                found.setdefault(condition, []).append(f"{claim['id']}: {claim['published']}")
    return {condition: "; ".join(texts) for condition, texts in found.items()}


METHODS = Path("analysis/levels.yaml")
CONTROL = "untrained encoder (step 0)"


class LevelsError(Exception):
    """analysis/levels.yaml cannot be read; str(e) is the one line to print."""

LEVEL_PROBES = ("linear_full", "linear", "knn")     # the primary probe on h first


class Method(BaseModel):
    """One row of analysis/levels.yaml."""
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    method: Annotated[str, Field(min_length=1)]
    arm: Annotated[str, Field(pattern=r"^[\w-]+/[\w-]+$")]       # study/condition
    published: str | None = None
    source: str | None = None


def load_methods(path=METHODS):
    """The rows of analysis/levels.yaml; LevelsError (one line naming the file and key) when malformed."""
    try:
        raw = load_yaml(Path(path).read_text())
    except OSError:
        raise LevelsError(f"{path}: missing; the report's levels table is read from it") from None
    except yaml.YAMLError as e:                           # a key given twice included
        raise LevelsError(f"{path}: not valid YAML ({' '.join(str(e).split())})") from None
    try:
        if not isinstance(raw, dict) or not isinstance(raw.get("methods"), list):
            raise LevelsError(f"{path}: expected `methods:`, a list of {{method, arm, published, source}}")
        return [Method(**row) if isinstance(row, dict) else Method(method=row) for row in raw["methods"]]
    except ValidationError as e:
        raise LevelsError(one_line(e, str(path))) from None


def primary_probe(root="."):
    """The primary probe's title (the linear probe on every label, LEVEL_PROBES[0]) in the words of
    the evaluation records' protocol, or None without records."""
    for path in sorted(Path(root, "results", "evaluate").glob("*/*/seed_*.json")):
        return probe_title(LEVEL_PROBES[0], json.loads(path.read_text())["eval"]["protocol"])
    return None


def _mean_interval(values, level):
    """(mean, low, high) in % of per-seed fractions, the t-interval at `level`; None for none."""
    if not values:
        return None
    low, high = t_interval(values, level)
    return 100 * sum(values) / len(values), 100 * low, 100 * high


def _interval(values, level):
    """'51.4 [49.0, 53.8]' in %, for per-seed fractions; '–' for none."""
    found = _mean_interval(values, level)
    return "–" if found is None else "{:.1f} [{:.1f}, {:.1f}]".format(*found)


def _seeds(results, kind, condition):
    """A condition's records of one kind, every seed in seed order, stage 2's among them."""
    return [results.record(p) for p in record_paths(condition, kind, results)]


def _probe(evaluated, at, key):
    """One probe's per-seed figures at `at` (eval: the budget; control: the untrained encoder)."""
    return [r[at]["h"][key] for r in evaluated if rc.number(r[at]["h"].get(key)) is not None]


def _arms(methods, root):
    """(method, its training records, its evaluation records) for each method whose records exist."""
    results = Results.load(root)
    for method in methods:
        condition = method.arm.split("/")[1]
        trained, evaluated = _seeds(results, "training", condition), _seeds(results, "evaluation", condition)
        if trained and evaluated:
            yield method, trained, evaluated


def level_points(methods, level, root="."):
    """The levels table as plot data (reports/levels.csv, which `dvc plots show` draws): one row per
    method and probe on h, the untrained encoder first, with the mean accuracy and its t-interval at
    `level` over the seeds, in %."""
    rows = []
    for method, _, evaluated in _arms(methods, root):
        protocol = evaluated[0]["eval"]["protocol"]
        for name, at in ([(CONTROL, "control")] if not rows else []) + [(method.method, "eval")]:
            for key in LEVEL_PROBES:
                if found := _mean_interval(_probe(evaluated, at, key), level):
                    rows.append(dict(zip(("method", "probe", "accuracy", "ci_low", "ci_high"),
                                         (name, probe_title(key, protocol), *found))))
    return pd.DataFrame(rows, columns=["method", "probe", "accuracy", "ci_low", "ci_high"])


def method_levels(methods, level, root="."):
    """The benchmark table: one row per method (load_methods) at its reference arm's budget, with
    the published figure of the paper's own setting, and first the untrained encoder (the step-0
    control of the first method's arm, where run 2 fitted no all-label probe): training
    length (steps, epochs, batch), each probe on h in % with its t-interval at `level` over the
    seeds, the seeds, and the CPU-minutes of pretraining and evaluation (wall time x threads, all
    seeds). A method whose records are missing is left out."""
    rows = []
    for method, trained, evaluated in _arms(methods, root):
        config = trained[0]["config"]
        if not rows:
            protocol = evaluated[0]["eval"]["protocol"]
            titles = {key: probe_title(key, protocol) for key in LEVEL_PROBES}
            rows.append({"method": CONTROL, "arm": method.arm, "steps (epochs)": "0", "batch": "–",
                         **{titles[key]: _interval(_probe(evaluated, "control", key), level) for key in LEVEL_PROBES},
                         "seeds": len(evaluated), "CPU-min": "–", "published": "–"})
        epochs = config["steps"] * config["batch"] / trained[0]["n_data"]
        minutes = rc.cpu_minutes(trained + evaluated)
        rows.append({"method": method.method, "arm": method.arm,
                     "steps (epochs)": f"{config['steps']:,} ({epochs:.2g})", "batch": str(config["batch"]),
                     **{titles[key]: _interval(_probe(evaluated, "eval", key), level) for key in LEVEL_PROBES},
                     "seeds": len(evaluated), "CPU-min": f"{minutes:.0f}",
                     "published": f"{method.published} ({method.source})" if method.published else "–"})
    return pd.DataFrame(rows)
