"""No string from the pipeline's files reaches the report as live HTML. The report stage runs in a
temporary copy whose claims.json has a payload (a <script> tag, an onerror= attribute, and a quote
that breaks out of an attribute) appended to every string, arm names included, and whose results and
resolved configuration carry it in the strings the page prints (CPU, failure reasons, condition
labels, profile), as do every string of the setup table (analysis/deviations.yaml), a registration
record and the stage times. The page must then hold no script, no event-handler attribute and no
injected element; claims.md no raw tag."""
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAYLOAD = "<script>alert(1)</script><img src=x onerror=alert(2)>'\"><b onmouseover=alert(3) x='"
INPUTS = ["analysis/report.py", "analysis/claims.yaml", "analysis/rules.yaml", "analysis/cifar10_reference.yaml",
          "analysis/deviations.yaml", "analysis/levels.yaml", "experiments/render_report.py",
          "experiments/_interpreter.py", "resolved", "results", "reports/claims.json",
          "reports/summary.json", "reports/stage_times.json"]


VOCABULARY = ("verdict", "frozen_verdict", "previous_verdict", "origin", "held", "verdict_now", "verdict_ahead",
              "before", "after")   # words claims.json's reader checks


def poison(value, keys=False):
    """Every string inside `value` with the payload appended; mapping keys too when `keys`; not the
    verdict words, which the reader of claims.json refuses outside their vocabulary."""
    if isinstance(value, str):
        return value + PAYLOAD
    if isinstance(value, list):
        return [poison(v, keys) for v in value]
    if isinstance(value, dict):
        return {(poison(k) if keys else k): (v if k in VOCABULARY else poison(v, keys)) for k, v in value.items()}
    return value


def poison_claim(claim):
    """A claim with the payload in every string, its arms' names included (in every rung); not in
    `origin`, which the analysis derives from the section (no input reaches it)."""
    out = poison(claim)
    for holder in [out, *(out.get("ladder") or [])]:
        if isinstance(holder.get("arms"), dict):
            holder["arms"] = {poison(k): v for k, v in holder["arms"].items()}
    return out


def poison_fields(path, fields):
    """The named string fields of a JSON file, wherever they occur, with the payload appended."""
    def walk(value):
        if isinstance(value, dict):
            return {k: (v + PAYLOAD if k in fields and isinstance(v, str) else walk(v)) for k, v in value.items()}
        return [walk(v) for v in value] if isinstance(value, list) else value
    path.write_text(json.dumps(walk(json.loads(path.read_text()))))


def report_inputs(folder):
    """The report stage's inputs in `folder`; the datasets linked, not copied."""
    for name in INPUTS:
        source, target = ROOT / name, folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    (folder / "data").mkdir()
    for path in (ROOT / "data").glob("*.*"):       # hard links: a symlink out of the copy is refused
        os.link(path, folder / "data" / path.name)
    stub_new_claims(folder / "reports" / "claims.json")


def stub_new_claims(path):
    """Each registered claim that the committed claims.json does not judge yet (while a registered run
    is under way it is the previous run's) gets a stub there, a copy of a judged claim under its id,
    so that the setup table's claim ids resolve as they will once the run is judged."""
    claims = json.loads(path.read_text())
    judged = {c["id"] for c in claims}
    registered = [c["id"] for c in yaml.safe_load((ROOT / "analysis" / "claims.yaml").read_text())["claims"]]
    template = next(c for c in claims if c.get("kind") == "paired")
    path.write_text(json.dumps(claims + [{**template, "id": cid} for cid in registered if cid not in judged]))


def poison_deviations(path):
    """Every string of the setup table poisoned: the claim ids as claims.json's are; `ours` with the
    payload's numbers spelt out (a typed number is refused there)."""
    raw = yaml.safe_load(path.read_text())
    for entry in raw["deviations"]:
        entry.update({key: value + PAYLOAD for key, value in entry.items() if key not in ("ours", "claims")})
        entry["ours"] += re.sub(r"\d", "x", PAYLOAD)
        if isinstance(entry["claims"], list):
            entry["claims"] = [poison(c) for c in entry["claims"]]
    path.write_text(yaml.safe_dump(raw))


def poisoned_copy(folder):
    """The report stage's inputs in `folder`, poisoned, with a registration record under which the
    poisoned claims were judged, one of them amended after it."""
    report_inputs(folder)
    claims = folder / "reports" / "claims.json"
    poisoned = [poison_claim(c) for c in json.loads(claims.read_text())]
    poisoned[0].update(frozen_verdict="reproduced", amended=[{"date": "2026-12-03" + PAYLOAD, "what": PAYLOAD,
                                                              "why": PAYLOAD, "previous_verdict": "inconclusive",
                                                              "post_registration": True}])
    claims.write_text(json.dumps(poisoned))
    digest = "a1" * 32            # the record's dates and digests are schema-checked; its paths and texts are not
    record = {"date": "2026-12-02", "sha256": {"params.yaml" + PAYLOAD: digest},
              "rules_sha256": digest, "rules": {}, "claims": {}}
    (folder / "analysis" / "registration.json").write_text(json.dumps(record))
    amendment = {"date": "2026-12-02", "registration": "2026-12-02", "what": "moved" + PAYLOAD, "why": PAYLOAD,
                 "verdicts_identical": True, "claims_json_sha256": digest, "sha256": {"io.py" + PAYLOAD: digest}}
    (folder / "analysis" / "registration_amendments.json").write_text(json.dumps([amendment]))
    summary = folder / "reports" / "summary.json"
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "registered_on": record["date"]}))
    stage_times = folder / "reports" / "stage_times.json"
    stage_times.write_text(json.dumps({name: {**r, "cpu": r["cpu"] + PAYLOAD, "precision": PAYLOAD}
                                       for name, r in json.loads(stage_times.read_text()).items()}))
    poison_deviations(folder / "analysis" / "deviations.yaml")
    methods = folder / "analysis" / "levels.yaml"
    methods.write_text(yaml.safe_dump({"methods": [{k: (v if k == "arm" else v + PAYLOAD) for k, v in row.items()}
                                                   for row in yaml.safe_load(methods.read_text())["methods"]]}))
    for path in (folder / "results").rglob("*.json"):
        poison_fields(path, {"cpu", "reason", "condition"} if "determinism" in path.name else {"cpu", "reason"})
    poison_fields(folder / "resolved" / "conditions.json", {"label"})
    poison_fields(folder / "resolved" / "report.json", {"profile"})


class Live(HTMLParser):
    """Collects what would run or render as injected markup: script elements, on* attributes, and
    the payload's own elements (an <img src=x>, a <b x=...>)."""
    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        names = {name for name, _ in attrs}
        if tag == "script" or any(name.startswith("on") for name in names):
            self.found.append((tag, attrs))
        if (tag == "img" and ("src", "x") in attrs) or (tag == "b" and "x" in names):
            self.found.append((tag, attrs))


def live_markup(page):
    parser = Live()
    parser.feed(page)
    return parser.found


def render(folder, src=ROOT / "src"):
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run([sys.executable, "experiments/render_report.py"], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory):
    folder = tmp_path_factory.mktemp("poisoned")
    poisoned_copy(folder)
    result = render(folder)
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


def test_the_payload_reaches_the_page_only_as_text(poisoned):
    page = (poisoned / "reports" / "report.html").read_text()
    assert live_markup(page) == []
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page        # it is there, escaped: the test reached it
    for reached in ("<code>params.yaml&lt;script&gt;", "moved&lt;script&gt;", "<code>io.py&lt;script&gt;",
                    "&lt;script&gt;alert(x)&lt;/script&gt;"):    # the registration, its amendment, the setup table
        assert reached in page


def test_claims_md_holds_no_raw_tag_and_no_entity(poisoned):
    """Rendered as GitHub renders Markdown, the payload is text; the source escapes it for Markdown,
    not with HTML entities."""
    from markdown_it import MarkdownIt
    text = (poisoned / "reports" / "claims.md").read_text()
    rendered = MarkdownIt("commonmark").enable("table").render(text)
    assert live_markup(rendered) == [] and "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered
    assert "&lt;" not in text and "&#x27;" not in text and "\\<script>" in text


def test_the_checker_finds_live_markup():
    assert live_markup(f"<td>{PAYLOAD}</td>") != []
    assert live_markup(f"<a title='{PAYLOAD}'>x</a>") != []
