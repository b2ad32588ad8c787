"""The confidence level has one source, rules.alpha (analysis/rules.yaml): with another alpha, every
interval the judging writes and every page, table and rule that names the level follows, and no
module types the registered level."""
from pathlib import Path

import pytest

from replication.judge import judge as judging, sequential, verdicts
from replication.judge.results import Results
from replication.report import claims_view as rc, markdown, page
from replication.cli import readme

from test_claims import RULES, claim as registry_claim, results  # noqa: F401  (results: a fixture)
from test_judging import BASE, arm, records, up
from test_render import SECTIONS, claim

ROOT = Path(__file__).resolve().parents[1]
NINETY = {**RULES, "alpha": 0.05}                # each one-sided test at 5%: 90% intervals
REGISTERED = verdicts.level_label(RULES)


def test_the_labels_are_read_off_alpha():
    assert (verdicts.level_label(NINETY), verdicts.one_sided_label(NINETY)) == ("90%", "5%")
    assert verdicts.level_label({"alpha": 0.005}) == "99%" and verdicts.one_sided_label({"alpha": 0.005}) == "0.5%"


def test_every_rendered_level_follows_alpha(results, tmp_path):  # noqa: F811
    """The rule tables (README's and the legend's), the notes the judging writes, the reasons, the
    report's tables and claims.md, all at alpha = 0.05."""
    records(tmp_path, "a", {300: up(BASE, 0.05)})
    records(tmp_path, "b", {300: BASE})
    loaded = Results.load(tmp_path, ".")          # `results` (a fixture) wrote into tmp_path too
    paired = judging.judge(registry_claim(kind="paired", a="a", b="b", margin=0.02,
                                          arms={"a": arm("a"), "b": arm("b")}), loaded, NINETY)
    ratio = {"file": "r/ex.json", "select": "runs", "where": {"tau": 0.1}, "ratio": ["before", "after"]}
    interval = judging.judge(registry_claim(kind="interval", range=[26, 40], arms={"0.1": ratio}), loaded, NINETY)
    single = judging.judge(registry_claim(kind="single_run", published=0.93, realisations={
        "file": "r/ex.json", "select": "runs", "where": {"tau": 0.1}, "key": "acc"}), loaded, NINETY)
    literature = claim("one", "inconclusive", 0.06)
    literature["contrast"]["level"] = paired["contrast"]["level"]          # as the judging writes it at this alpha
    documents = {**claim("doc", "exact match", 0.0, section="toy2d"), "contrast": None}
    shown = {
        "rule table": " ".join(rule for _, rule in verdicts.verdict_rules(*sequential.level_texts(NINETY))),
        "paired note": paired["note"], "interval note": interval["note"], "single-run note": single["note"],
        "reason": rc.reason(paired),
        "legend": page.legend(NINETY),
        "first screen": page.first_screen([literature, documents], "title", "summary", NINETY),
        "index": page.folded_index("Literature claims", [literature], NINETY),
        "claims.md": markdown.claims_markdown([literature, documents], SECTIONS, "summary", NINETY),
        "README's verdicts": readme.verdicts_block(NINETY), "README's trends": readme.trends_block(NINETY),
    }
    assert "at 5%" in shown["rule table"]
    assert {what for what, text in shown.items() if "90%" not in text} == set()
    assert {what for what, text in shown.items() if "95%" in text or "2.5%" in text} == set()


SOURCES = [path for folder in ("src", "tools", "experiments") for path in sorted(ROOT.glob(f"{folder}/**/*.py"))
           if path.name != "verdicts.py"] + [ROOT / "analysis" / "report.py"]


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_module_but_verdicts_py_types_the_level(path):
    assert REGISTERED not in path.read_text(), f"{path.relative_to(ROOT)}: derive it from verdicts.level_label(rules)"
