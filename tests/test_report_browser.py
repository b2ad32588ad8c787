"""The committed report, opened in headless Chromium (no network) at 1,366 x 768 px as a reader would:
the summary and the five studies on the first screen, at most 20 screens with every <details> closed,
every figure an SVG with alt text, no NaN, every claim id once as an anchor, the table of contents
always in view; and reports/claims.md, rendered as GitHub renders Markdown, without a horizontal
scroll in GitHub's 890-px column."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from replication.report.claims_view import slug
from helpers import judged_claims

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "reports" / "report.html"
WIDTH, HEIGHT = 1366, 768
STUDIES = ["simclr-temperature", "moco-momentum-long", "simclr-h-beats-z", "rotation-predictable-from-h",
           "supcon-out-beats-in"]        # the five studies the repository exists for (issue 41)

MEASURE = """<script>window.addEventListener('load', () => {
  document.querySelectorAll('script').forEach(s => s.remove());     // measure the page, not this script
  const bottom = s => { const e = document.querySelector(s); return e ? e.getBoundingClientRect().bottom : null; };
  const figures = [...document.querySelectorAll('figure')];
  const words = t => t.split(/\\s+/).filter(w => w).length;
  const nav = document.querySelector('nav.toc');
  document.body.insertAdjacentHTML('beforeend', '<pre id="measured">' + JSON.stringify({
    height: document.documentElement.scrollHeight, inner: window.innerHeight, summary: bottom('p.summary'), counts: bottom('ul.counts'),
    scale: bottom('p.scale'), levels: bottom('table.levels-first'),
    levels_rows: [...document.querySelectorAll('table.levels-first tr')].slice(1)
      .map(r => r.querySelector('td b').textContent),
    wide: document.documentElement.scrollWidth > window.innerWidth,
    first_screen: [...document.querySelectorAll('table.lore a')].filter(a => {
      const r = a.getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight; })
      .map(a => a.textContent),
    figures: figures.length,
    svg_with_alt: figures.filter(f => { const s = f.querySelector('svg');
                                        return s && (s.getAttribute('aria-label') || '').trim(); }).length,
    raster: document.querySelectorAll('img').length,
    anchors: [...document.querySelectorAll('[id^="claim-"]')].map(e => e.id),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    nav: nav ? getComputedStyle(nav).position : null,
    visible_words: words(document.body.innerText), all_words: words(document.body.textContent),
    nan: /\\bnan\\b|\\binf\\b/.test(document.body.textContent)
         || [...document.querySelectorAll('td, th')].some(c => /\\bnan\\b/i.test(c.textContent))}) + '</pre>');
});</script>"""


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def flags(profile):
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
            "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",     # no network at all
            f"--window-size={WIDTH},{HEIGHT}"]


def measure(report, folder):
    """The page's measurements, taken by a script appended to a copy of it (the report has none)."""
    page = Path(folder) / "measured.html"
    page.write_text(Path(report).read_text().replace("</body>", MEASURE + "</body>"))
    dom = subprocess.run([chromium(), *flags(Path(folder) / "profile"), "--virtual-time-budget=10000", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    return json.loads(re.findall(r'<pre id="measured">(\{.*?)</pre>', dom, re.S)[-1])


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    if not chromium():
        pytest.skip("Debian's chromium is not installed (make browser)")
    return measure(REPORT, tmp_path_factory.mktemp("browser"))


def test_the_first_screen_holds_the_summary_and_the_five_studies(measured):
    assert measured["summary"] < HEIGHT
    assert set(STUDIES) <= set(measured["first_screen"]), measured["first_screen"]


def test_the_first_two_screens_hold_the_scale_line_and_the_levels_table(measured):
    """Absolute levels where verdicts are read (issue 57): the untrained encoder, the methods and the
    supervised reference, with the scale line above, all within two screens and no sideways scroll."""
    screen = measured["inner"]            # the window's height less what the browser itself shows
    assert measured["scale"] < screen and measured["levels"] < 2 * screen, measured
    rows = measured["levels_rows"]
    assert rows[0].startswith("untrained") and "SimCLR (NT-Xent)" in rows and any("supervised" in r for r in rows), rows
    assert not measured["wide"]


def test_the_page_is_at_most_20_screens(measured):
    assert measured["height"] / HEIGHT <= 20, measured["height"]


def test_every_figure_is_an_svg_with_alt_text(measured):
    assert measured["figures"] >= 10 and measured["svg_with_alt"] == measured["figures"]
    assert measured["raster"] == 0


def test_no_nan_is_shown(measured):
    """No value prints as nan or inf anywhere, nor NaN in a table (the word may occur in prose)."""
    assert not measured["nan"]


def test_every_claim_id_is_one_anchor_and_no_id_repeats(measured):
    ids = [slug(c["id"]) for c in judged_claims(ROOT)]
    assert sorted(measured["anchors"]) == sorted(f"claim-{i}" for i in ids)
    assert len(measured["ids"]) == len(set(measured["ids"]))


def test_the_table_of_contents_stays_in_view(measured):
    assert measured["nav"] in ("fixed", "sticky")


WORDS_BEFORE = 24_260    # words a reader saw on the report of commit bf1ea85 (innerText, measured like this)


def test_a_reader_sees_at_most_a_third_of_the_words_of_the_old_report(measured):
    """Words shown with every <details> folded; the folded details hold the rest."""
    assert measured["visible_words"] <= WORDS_BEFORE / 3, measured["visible_words"]


GITHUB = """<style>body { margin: 0; } .markdown-body { width: 890px; font: 16px/1.5 -apple-system, 'Segoe UI',
  'Noto Sans', Helvetica, Arial, sans-serif; } .markdown-body table { display: block; width: max-content;
  max-width: 100%; overflow: auto; border-spacing: 0; border-collapse: collapse; }
  .markdown-body td, .markdown-body th { padding: 6px 13px; border: 1px solid #d0d7de; }
  .markdown-body code { font: 85% ui-monospace, SFMono-Regular, Menlo, monospace; padding: .2em .4em; }</style>"""
# GitHub's own rules for a Markdown file's column and its tables (github-markdown-css)

WIDE = """<script>window.addEventListener('load', () => {
  document.querySelectorAll('script').forEach(s => s.remove());
  const tables = [...document.querySelectorAll('table')];
  document.body.insertAdjacentHTML('beforeend', '<pre id="measured">' + JSON.stringify({tables: tables.length,
    scrolling: tables.filter(t => t.scrollWidth > t.clientWidth + 1).map(t => t.querySelector('tr').textContent)})
    + '</pre>');
});</script>"""


def test_claims_md_fits_githubs_column_without_a_horizontal_scroll(tmp_path):
    """claims.md rendered by a CommonMark library with GitHub's tables, in an 890-px column with GitHub's
    table rules: no table scrolls sideways."""
    if not chromium():
        pytest.skip("Debian's chromium is not installed (make browser)")
    from markdown_it import MarkdownIt
    body = MarkdownIt("commonmark").enable("table").render((ROOT / "reports" / "claims.md").read_text())
    page = tmp_path / "claims.html"
    page.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'>{GITHUB}</head><body>"
                    f"<article class='markdown-body'>{body}</article>{WIDE}</body></html>")
    dom = subprocess.run([chromium(), *flags(tmp_path / "profile"), "--virtual-time-budget=10000", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    found = json.loads(re.findall(r'<pre id="measured">(\{.*?)</pre>', dom, re.S)[-1])
    assert found["tables"] >= 3 and found["scrolling"] == [], found
