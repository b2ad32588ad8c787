"""The generated blocks of README.md and docs/, written from files the pipeline wrote (never typed).

    python -m replication readme                # rewrite every block between its markers (PAGES)
    python -m replication readme --check        # exit 1 if a page is out of date

Each block sits between `<!-- NAME:begin -->` and `<!-- NAME:end -->` in the page PAGES names for it:
in README.md the studies' answers (reports/claims.json, the counts of reports/summary.json) and the
cost of a full regeneration (reports/stage_times.json, reports/repro_timing.json); in docs/ the
measured figures, the pipeline diagram (`dvc dag`, grouped by study), the benchmark table
(reports/benchmarks/*.json, written by `make bench`) and the rule tables (judge/verdicts.py). A page
that lacks a block's markers is refused in one line, and nothing is written.
"""
import datetime
import glob
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from replication.committed import FileError, read_json, read_stage_times, read_training
from replication.io import WriteError, atomic_path, require_inside
from replication.judge.record import CLAIMS, RecordError, as_dicts, read_claims
from replication.report.claims_view import counts_text, lore, ours, published_text, verdict_words
from replication.report.headroom import headroom
from replication.report.deviations import REFERENCE_ARM
from replication.report.markdown import cell
from .check import INSIDE
from .timing import RECORD as TIMING, TRAINING


def _load(path):
    return read_json(path) if Path(path).exists() else None


def measured(record, path):
    """True when the record's date is a real date, today or earlier; else False, said in one line on
    stderr: a future or malformed date never reaches README."""
    try:
        date = datetime.date.fromisoformat(str(record.get("date")))
    except ValueError:
        date = None
    if date is None or date > datetime.date.today():
        print(f"warning: {path}: date {record.get('date')!r} is {'in the future' if date else 'not a date'}; its "
              "figure is left out of README (`make repro-all` measures it again)", file=sys.stderr)
        return False
    return True


def _per_cpu(measured_on, figure):
    """`figure` of the values measured on each CPU, CPU by CPU ("461 s on AMD EPYC; ..."): times taken
    on two machines are never pooled."""
    by_cpu = {}
    for cpu, value in measured_on:
        by_cpu.setdefault(cpu, []).append(value)
    return "; ".join(f"{figure(values)} on {cpu}" for cpu, values in sorted(by_cpu.items()))


def _probe_line(evaluated, probe):
    """One probe on h over the runs' seeds at their budget, with the same encoders untrained, titled in
    the words of the records' own protocol (probes.probe_title)."""
    from replication.judge.probes import probe_title
    trained = [e["eval"]["h"][probe] for e in evaluated]
    control = [e["control"]["h"][probe] for e in evaluated if probe in e["control"]["h"]]
    protocol = next(iter(evaluated[0]["at"].values()))["protocol"]
    untrained = f"; untrained, BatchNorm calibrated: {100 * np.mean(control):.1f}%" if control else ""
    return (f"probe on h ({probe_title(probe, protocol)}) {100 * np.mean(trained):.1f}% (seeds: "
            f"{100 * min(trained):.1f}-{100 * max(trained):.1f}%, n = {len(trained)}{untrained})")


def _latest_run(every):
    """(run, its stages that are timed, the times) of the latest run in reports/stage_times.json (a stage
    timed in an earlier run is left out), or None while nothing is timed."""
    by_stage = read_stage_times()
    if not by_stage:
        return None
    run = max((r.get("run") or 0 for r in by_stage.values()), default=0)
    return run, [name for name in every if name in by_stage and (by_stage[name].get("run") or 0) == run], by_stage


def figures_block():
    lines = []
    timing = _load(TIMING)
    every = _stage_names()
    if timing and measured(timing, TIMING):
        stages = len(timing["stages_run"])
        lines.append(f"- Every stage from scratch in one go (`{timing['command']}`, {timing['profile']} profile, "
                     f"{stages} stages): {timing['seconds'] / 60:.1f} minutes on {timing['cpu']}, measured "
                     f"{timing['date']}{_earlier(timing, every)}.")
    latest = _latest_run(every)
    if latest:
        run, done, by_stage = latest
        cpus = _per_cpu([(by_stage[n]["cpu"], by_stage[n]["seconds"] / 60) for n in done],
                        lambda m: f"{sum(m):.1f} minutes (n = {len(m)})")
        precisions = ", ".join(sorted({by_stage[n]["precision"] for n in done if n.partition("@")[0] in TRAINING}))
        minutes = sum(by_stage[n]["seconds"] for n in done) / 60
        longest = max(done, key=lambda n: by_stage[n]["seconds"])
        which = f"registered run {run}" if run else "every stage from scratch"
        lines.append(f"- {which[0].upper() + which[1:]}, one stage at a time (`make repro-stage`): {minutes:.1f} minutes "
                     f"summed over {len(done)} of {len(every)} stages ({cpus}; training in {precisions}; "
                     f"{sum(by_stage[n]['seconds_in_dvc'] for n in done) / 60:.1f} minutes of it in DVC); the "
                     f"longest stage, {longest}, {by_stage[longest]['seconds'] / 60:.1f} minutes.")
    runs = [read_training(p) for p in sorted(glob.glob("results/pretrain/*/simclr/seed_*.json"))]
    evals = [read_json(p) for p in sorted(glob.glob("results/evaluate/*/simclr/seed_*.json"))]
    ok = [e for e in evals if e["status"] == "ok"]
    if ok and runs:
        config = runs[0]["config"]
        probes = [p for p in ("linear_full", "linear") if all(p in e["eval"]["h"] for e in ok)]
        lines.append(f"- Plain SimCLR on `{config['dataset']}` at the default budget (tau {config['tau']}, "
                     f"{config['head']} head, {config['steps']} steps of {config['batch']} images): "
                     + "; ".join(_probe_line(ok, probe) for probe in probes) + ".")
    if runs:
        config = runs[0]["config"]
        walls = _per_cpu([(r.get("cpu", "CPU not recorded"), r["wall_s"]) for r in runs],
                         lambda w: f"{np.mean(w):.0f} s (mean, n = {len(w)})")
        last_rung = (config.get("ladder") or [config["steps"]])[-1]
        lines.append(f"- One such run (pretraining on to its last rung, {last_rung} steps, one torch thread): {walls}.")
        dataset = config["dataset"]
        verdict = {True: "holds", False: "fails", None: "not measured"}
        lines.append(f"- Headroom of `{dataset}` (the design targets of replication.report.headroom, read from the run's "
                     "records): " + "; ".join(f"{target}: {measured} ({verdict[ok]})" for target, measured, ok
                                               in headroom(".", dataset, (REFERENCE_ARM[0].split("/")[-1], REFERENCE_ARM[1]))) + ".")
    tiny = _load("results/examples/tiny_simclr.json")
    if tiny:
        by = ", ".join(f"{r['threads']} thread(s) {r['wall_s']:.0f} s" for r in tiny["by_threads"])
        lines.append(f"- The article's tiny SimCLR, one run: {by}.")
    return "\n".join(lines) or "- No results yet: run `make repro`."


def _earlier(timing, every):
    """' (the pipeline of that day; ...)' when a one-go timing ran other stages than today's pipeline has."""
    if set(timing["stages_run"]) == set(every):
        return ""
    return f" (the pipeline of that day; today's has {len(every)} stages, the scale ladder among them)"


def _cores(cpu):
    """The core counts that the benchmark records (reports/benchmarks/*.json: 'AMD EPYC, 2 cores') name
    for machines with this CPU model; the timing files do not record them."""
    found = set()
    for path in sorted(glob.glob("reports/benchmarks/*.json")):
        record = read_json(path)
        rows = [r for r in record.get("rows") or [] if isinstance(r, dict)]
        for machine in filter(None, [record.get("machine")] + [r.get("machine") for r in rows]):
            named = re.fullmatch(r"(.+), (\d+) cores", str(machine))
            if named and (named[1] == cpu or named[1].startswith(cpu + " @")):
                found.add(int(named[2]))
    return found


def _machine(cpu):
    """'AMD EPYC (2 cores)': the CPU model with the cores the benchmarks recorded on it."""
    cores = _cores(cpu)
    return f"{cpu} ({' or '.join(map(str, sorted(cores)))} cores)" if cores else f"{cpu} (cores not recorded)"


def cost_block():
    """What regenerating everything costs, from the committed timing files: the latest run's stages
    summed (reports/stage_times.json), CPU by CPU, with the stages last timed in an earlier run, and
    the last run of every stage in one go (reports/repro_timing.json, `make repro-all`); each CPU
    with the cores the benchmarks recorded on it."""
    lines, every = [], _stage_names()
    latest = _latest_run(every)
    if latest:
        run, done, by_stage = latest
        earlier = [n for n in every if n in by_stage and n not in done]
        minutes = sum(by_stage[n]["seconds"] for n in done) / 60
        before = sum(by_stage[n]["seconds"] for n in earlier) / 60
        cpus = _per_cpu([(_machine(by_stage[n]["cpu"]), by_stage[n]["seconds"] / 60) for n in done],
                        lambda m: f"{sum(m):.0f} minutes")
        bound = "about" if len(done) + len(earlier) == len(every) else "at least"
        which = f"Registered run {run}" if run else "The last run"
        lines.append(f"- Everything from scratch: {bound} {(minutes + before) / 60:.0f} hours of wall time. "
                     f"{which} ran {len(done)} of the {len(every)} stages one at a time: {cpus}."
                     + (f" The other {len(earlier)} took {before:.0f} minutes when last timed, in an earlier run."
                        if earlier else ""))
    timing = _load(TIMING)
    if timing and measured(timing, TIMING):
        lines.append(f"- `make repro-all` in one go was last timed on {timing['date']}: {timing['seconds'] / 60:.0f} "
                     f"minutes on {_machine(timing['cpu'])}, for {len(timing['stages_run'])} stages"
                     f"{_earlier(timing, every)}.")
    return "\n".join(lines) or "- No timings yet: `make repro-all` records them."


def answers_block():
    """The studies the repository exists for, as the report's first screen asks them (claims_view.lore):
    each one's verdict, our effect with its interval and level, and the published effect, as
    reports/claims.json records them; then the counts every page prints (claims_view.counts_text, the
    numbers of reports/summary.json) and the scale ladder's trends."""
    claims = as_dicts(read_claims()) if Path(CLAIMS).exists() else []
    if not claims:
        return "- No results yet: run `make repro`."
    lines = [f"- **{cell(study)}**: {cell(verdict_words(claim))}; ours {cell(ours(claim))}; published "
             f"{cell(published_text(claim))}." for study, claim in lore(claims)]
    lines += [""] + [f"- {line}" for line in counts_text(claims)]         # as claims.md and the report
    ladder = [c for c in claims if c.get("ladder")]
    if ladder:
        trends = {}
        for c in ladder:
            trends[c.get("trend") or "none"] = trends.get(c.get("trend") or "none", 0) + 1
        lines.append(f"- On the scale ladder: {len(ladder)} claims; trends: "
                     + ", ".join(f"{n} {t}" for t, n in sorted(trends.items())) + ".")
    return "\n".join(lines)


def benchmarks_block():
    """One table row per measured ratio, each with the machine and date it was measured on."""
    rows = []
    t = _load("reports/benchmarks/throughput.json")
    if t:
        by = {r["contender"]: r for r in t["rows"]}
        base = by["script as written"]
        for name in ("script, 2 x 1 thread", "ours, NCHW, 2 x 1 thread", "ours, NHWC, 2 x 1 thread"):
            rows.append((f"tiny SimCLR, {t['seeds']} seeds x {t['steps']} steps x {t['batch']} images: {name} "
                         "vs the article's script as written", f"{by[name]['images_per_s']:.0f} vs "
                         f"{base['images_per_s']:.0f} images/s", f"{by[name]['vs_script']:.2f}x", t))
    a = _load("reports/benchmarks/augment.json")
    for r in (a or {}).get("rows", []):
        rows.append((f"two augmented views of {r['batch']} images, {a['threads']} thread: kornia / ours",
                     f"{r['kornia ms']:.1f} vs {r['ours ms']:.1f} ms", f"{r['kornia / ours']:.2f}x", a))
        rows.append((f"the same: torchvision v2 per image / ours", f"{r['tv2 loop ms']:.1f} vs {r['ours ms']:.1f} ms",
                     f"{r['tv2 loop / ours']:.2f}x", a))
    f = _load("reports/benchmarks/flops.json")
    for r in (f or {}).get("rows", []):
        rows.append((f"SimCLR step, batch {f['batch']}, {r['layout']}, {f['threads']} thread: GFLOP/s of the "
                     f"{r['peak']} matmul peak", f"{r['gflops']:.1f} of {r['peak_gflops']:.1f} GFLOP/s",
                     f"{r['fraction_of_peak']:.0%}", f))
    lo = _load("reports/benchmarks/losses.json")
    for r in (lo or {}).get("rows", []):
        rows.append((f"{r['loss']} forward+backward, N = {r['batch']}: straightforward / ours, time and peak memory",
                     f"{r['plain_ms']:.1f} vs {r['ours_ms']:.1f} ms; {r['plain_mb']:.0f} vs {r['ours_mb']:.0f} MB",
                     f"{r['plain_ms'] / r['ours_ms']:.2f}x; {r['plain_mb'] / max(r['ours_mb'], 1):.2f}x", lo))
    b = _load("reports/benchmarks/bf16.json")
    if b:
        native = "yes" if b["capabilities"]["native_bf16"] else "no: emulated, refused for runs"
        rows.append((f"the default arm's training step, batch {b['batch']}, {b['threads']} thread: bfloat16 autocast / "
                     f"float32 speed (native bf16: {native})", f"{b['bf16_ms']:.0f} vs {b['float32_ms']:.0f} ms",
                     f"{b['speedup']:.2f}x", b))
    e = _load("reports/benchmarks/evaluation_cost.json")
    if e:
        parts = e["parts_s"]
        rows.append((f"one run's evaluation (checkpoints at steps {', '.join(map(str, e['steps']))}), 1 thread: cheap "
                     f"(bf16 forward passes, {e['images_per_forward_pass']['cheap']:,} images at a time, but float32 for the "
                     "rotation probes; bf16 linear probes; tolerances from class sums) / float32 (run 2, "
                     f"{e['images_per_forward_pass']['float32']:,} at a time)",
                     f"{e['cheap_s']:.1f} vs {e['float32_s']:.1f} s (forward passes "
                     f"{parts['cheap']['forward passes']:.1f} vs {parts['float32']['forward passes']:.1f} s, probe "
                     f"fitting {parts['cheap']['probe fitting']:.1f} vs {parts['float32']['probe fitting']:.1f} s)",
                     f"{e['cheap_s'] / e['float32_s']:.2f}x (pairs {min(e['pair_ratios']):.2f}-"
                     f"{max(e['pair_ratios']):.2f})", e))          # the ratio of the seconds shown
    p = _load("reports/benchmarks/pipeline.json")
    for r in (p or {}).get("rows", []):
        share = f"{r['seconds_in_dvc'] / r['seconds']:.1%} in DVC" if r["seconds_in_dvc"] is not None else "n/a"
        # a row read from an older timing record names its own machine and date (its torch is not recorded)
        src = {"machine": r["machine"], "date": r["date"], "torch": None} if "machine" in r else p
        rows.append((f"{r['run']}, {r['stages']} stages", f"{r['seconds']:.1f} s", share, src))
    if not rows:
        return "No benchmarks recorded yet: run `make bench`."
    table = ["| benchmark | measured | ratio | machine, date |", "|---|---|---|---|"]
    table += [f"| {what} | {measured} | {ratio} | {src['machine']}, "
              f"{'torch ' + src['torch'] + ', ' if src['torch'] else ''}{src['date']} |"
              for what, measured, ratio, src in rows]
    return "\n".join(table)


def verdicts_block(rules):
    """The verdict table at the registry's level, from the one list the analysis applies
    (src/replication/judge/verdicts.py)."""
    from replication.judge.sequential import level_text, level_texts
    from replication.judge.verdicts import verdict_rules
    rows = [f"| verdict | rule (d: paired per-seed effect in the claimed direction, [lo, hi] its interval "
            f"({level_text(rules)}), m the margin) |", "|---|---|"]
    return "\n".join(rows + [f"| {verdict} | {rule} |" for verdict, rule in verdict_rules(*level_texts(rules))])


def steps_block():
    """How a verdict is reached, step by step, from the verdict module (src/replication/judge/verdicts.py)."""
    from replication.judge.verdicts import STEPS
    return "\n".join(["| step | rule | code |", "|---|---|---|"] +
                     [f"| {step} | {rule} | {code} |" for step, rule, code in STEPS])


def trends_block(rules):
    """The ladder's trend labels, from the one list the analysis applies (src/replication/judge/verdicts.py)."""
    from replication.judge.verdicts import TREND_RULES, level_label
    rows = [f"| trend | rule (b: slope of the effect against log10(steps), [b_lo, b_hi] its {level_label(rules)} "
            "interval, m the margin) |", "|---|---|"]
    return "\n".join(rows + [f"| {label} | {rule} |" for label, rule in TREND_RULES])


def _stage_names():
    beside = Path(sys.executable).parent / "dvc"
    out = subprocess.run([str(beside) if beside.exists() else "dvc", "stage", "list", "--name-only"],
                         capture_output=True, text=True)
    return out.stdout.split()


def dag_block():
    """The pipeline as a Mermaid diagram that fits a screen: the stages DVC repeats for each study
    (pretrain@<study>, evaluate@<study>, ...) drawn once, inside a box that names the studies."""
    beside = Path(sys.executable).parent / "dvc"            # the virtual environment's dvc
    out = subprocess.run([str(beside) if beside.exists() else "dvc", "dag", "--dot"], capture_output=True, text=True)
    if out.returncode:
        return "(run `dvc dag`)"
    edges = re.findall(r'"([^"]+)" -> "([^"]+)"', out.stdout)
    studies = sorted({name.split("@", 1)[1] for edge in edges for name in edge if "@" in name})
    group = lambda name: name.split("@")[0] + "@study" if "@" in name else name
    grouped = sorted({(group(a), group(b)) for a, b in edges})
    nodes = sorted({name for edge in grouped for name in edge})
    node_id = {name: name.replace("@", "_") for name in nodes}
    lines = ["```mermaid", "flowchart LR"]
    lines += [f'\t{node_id[n]}["{n}"]' for n in nodes if "@" not in n]
    lines.append(f'\tsubgraph per_study["for each of {len(studies)} studies: {", ".join(studies)}"]')
    lines += [f'\t\t{node_id[n]}["{n}"]' for n in nodes if "@" in n]
    lines.append("\tend")
    lines += [f"\t{node_id[a]}-->{node_id[b]}" for a, b in grouped]
    return "\n".join(lines + ["```"])


BLOCKS = {"answers": answers_block, "cost": cost_block, "figures": figures_block, "dag": dag_block,
          "benchmarks": benchmarks_block, "verdicts": verdicts_block, "steps": steps_block, "trends": trends_block}
PAGES = {"README.md": ("answers", "cost"), "docs/organisation.md": ("dag",),
         "docs/verdicts.md": ("verdicts", "trends", "steps"), "docs/benchmarks.md": ("figures", "benchmarks")}
RULED = {"verdicts", "trends"}          # the blocks written at the registry's level (rules)


class PageError(Exception):
    """A page that lacks a block's markers; str(e) is one line."""


def render(text, names, page="README.md"):
    """`text` with each block in `names` rewritten between its markers; PageError when a pair is missing."""
    from replication.judge.registry import load_registry
    rules = load_registry("analysis/claims.yaml").rules if RULED & set(names) else None
    for name in names:
        pattern = rf"(<!-- {name}:begin -->\n).*?(<!-- {name}:end -->)"
        if len(re.findall(pattern, text, flags=re.S)) != 1:
            raise PageError(f"{page}: expected one <!-- {name}:begin --> ... <!-- {name}:end --> pair for the "
                            f"generated {name} block; restore the page with `git checkout {page}`")
        block = BLOCKS[name](rules) if name in RULED else BLOCKS[name]()
        text = re.sub(pattern, lambda m: m.group(1) + block + "\n" + m.group(2), text, flags=re.S)
    return text


def add_arguments(parser):
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is out of date")


def run(args):
    try:
        return write_pages(args.check)
    except (RecordError, FileError, WriteError, PageError) as e:
        raise SystemExit(f"error: {e}") from None


def write_pages(check):
    require_inside(INSIDE)
    pages = {}
    for page, names in PAGES.items():
        path = Path(page)
        if not path.is_file():
            raise PageError(f"{page}: missing; it holds the generated {', '.join(names)} block(s): restore it with "
                            f"`git checkout {page}`")
        current = path.read_text()
        pages[path] = (current, render(current, names, page))
    stale = [str(path) for path, (current, updated) in pages.items() if updated != current]
    if check:
        if stale:
            print(f"{', '.join(stale)} out of date with the pipeline's files: run `make readme`", file=sys.stderr)
            return 1
        return 0
    for path, (current, updated) in pages.items():    # every page rendered before any is written
        if updated != current:
            with atomic_path(path) as tmp:      # never through a link: inside() refuses one out of the repository
                tmp.write_text(updated)
    return 0

