"""README.md is the front door and docs/ holds the rest (issue 71, items 5 and 6): README fits 150
lines, every page it links exists, and its generated blocks (the studies' answers, the cost of a full
regeneration) are what src/replication/cli/readme.py writes from the committed files, so they cannot be edited by
hand. Every generated block lives on one page, and the prose keeps its sentences short."""
import re
from pathlib import Path

import pytest

from replication.cli import readme

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")          # a Markdown link's target, its anchor cut
LONGEST_SENTENCE = 40                                       # words


def block(text, name):
    found = re.findall(rf"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", text, flags=re.S)
    assert len(found) == 1, name
    return found[0].removesuffix("\n")


def test_readme_fits_150_lines():
    assert len(README.read_text().splitlines()) <= 150


def test_every_page_readme_links_exists_and_every_docs_page_is_linked():
    linked = LINK.findall(README.read_text())
    assert [target for target in linked if not (ROOT / target).exists()] == []
    assert {ROOT / target for target in linked if target.startswith("docs/")} == set(PAGES) and PAGES
    for page in PAGES:           # the pages' own links, relative to docs/
        assert [t for t in LINK.findall(page.read_text()) if not (page.parent / t).exists()] == [], page.name


@pytest.mark.parametrize("name", ["answers", "cost"])
def test_readmes_generated_blocks_are_what_the_committed_files_give(name, monkeypatch):
    """The studies' answers (reports/claims.json, the counts of reports/summary.json) and the cost of
    a full regeneration (reports/stage_times.json, reports/repro_timing.json) as src/replication/cli/readme.py
    writes them: a hand edit fails here."""
    monkeypatch.chdir(ROOT)
    assert block(README.read_text(), name) == readme.BLOCKS[name]()


def test_the_answers_name_each_study_with_its_verdict_and_effect(monkeypatch):
    """One line per study of the report's first screen (claims_view.lore), with the verdict words
    and our effect as claims.json records them (claims_view.ours: the interval and its level)."""
    from replication.judge.record import as_dicts, read_claims
    from replication.report import claims_view as rc
    monkeypatch.chdir(ROOT)
    claims = as_dicts(read_claims())
    lines = block(README.read_text(), "answers").splitlines()
    rows = rc.lore(claims)
    assert rows
    for (study, claim), line in zip(rows, lines):
        assert line.startswith(f"- **{study}**: {rc.verdict_words(claim)}; ours "), line
        assert rc.ours(claim) in line and re.search(r"\(\d+(\.\d+)?%\)", line), line


def test_every_generated_block_lives_on_one_page():
    names = [name for names in readme.PAGES.values() for name in names]
    assert sorted(names) == sorted(readme.BLOCKS) and len(set(names)) == len(names)
    for page, names in readme.PAGES.items():
        text = (ROOT / page).read_text()
        for name in names:
            block(text, name)


def test_a_page_without_a_blocks_markers_is_refused_in_one_line():
    with pytest.raises(readme.PageError) as raised:
        readme.render("# A page\n\nno markers\n", ("steps",), "docs/verdicts.md")
    said = str(raised.value)
    assert "\n" not in said and said.startswith("docs/verdicts.md: expected one <!-- steps:begin -->")


def prose(text):
    """The paragraphs of a Markdown page outside code, tables, headings and generated blocks, each
    list item its own paragraph; a code span counts as one word."""
    text = re.sub(r"<!-- (\w+):begin -->.*?<!-- \1:end -->", "", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    paragraphs, current = [], []
    for line in text.splitlines() + [""]:
        if not line.strip() or line.startswith(("|", "#")) or line.lstrip().startswith("- "):
            paragraphs.append(" ".join(current))
            current = [line.lstrip()[2:]] if line.lstrip().startswith("- ") else []
        else:
            current.append(line.strip())
    return [re.sub(r"`[^`]*`", "CODE", p) for p in paragraphs if p.strip()]


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.name)
def test_sentences_are_short(page):
    sentences = [s for p in prose(page.read_text()) for s in re.split(r"(?<=[.!?])\s+(?=[A-Z(`\[*])", p)]
    long = [s for s in sentences if len(s.split()) > LONGEST_SENTENCE]
    assert long == [], long
