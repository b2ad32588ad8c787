"""reports/claims.json through its one reader and writer (judge/record.py): the committed file reads
and writes back byte for byte, and a file with a missing, extra or mistyped field is refused with
one line naming the claim and the field, before anything is written."""
import json
import math
import os
import subprocess
import sys

import pytest

from helpers import ROOT
from replication.judge.record import RecordError, as_dicts, claims_text, read_claims, rounded, write_claims

COMMITTED = ROOT / "reports" / "claims.json"


def test_the_committed_claims_read_and_write_back_byte_for_byte():
    judged = read_claims(COMMITTED)
    assert len(judged) > 100 and all(j.verdict for j in judged)
    assert claims_text(judged) == COMMITTED.read_text()
    assert claims_text(as_dicts(judged)) == COMMITTED.read_text()


def _one_claim():
    return json.loads(COMMITTED.read_text())[0]


@pytest.mark.parametrize("change, named", [
    (lambda c: c.pop("verdict"), "verdict: Field required"),
    (lambda c: c.update(verdcit="reproduced"), "verdcit: unknown key"),
    (lambda c: c.update(verdict="sort of"), "verdict: must be"),
    (lambda c: c["arms"][next(iter(c["arms"]))].update(n="five"), ".n: "),
])
def test_a_misshapen_claim_is_refused_naming_claim_and_field(tmp_path, change, named):
    claim = _one_claim()
    change(claim)
    path = tmp_path / "claims.json"
    path.write_text(json.dumps([claim]))
    with pytest.raises(RecordError) as refused:
        read_claims(path)
    message = str(refused.value)
    assert "\n" not in message and f"claim {claim['id']}" in message and named in message


def test_the_writer_refuses_before_writing(tmp_path):
    path = tmp_path / "claims.json"
    path.write_text("old")
    claim = {**_one_claim(), "extra": 1}
    with pytest.raises(RecordError, match="extra: unknown key"):
        write_claims([claim], path)
    assert path.read_text() == "old"


def test_unreadable_files_are_one_line(tmp_path):
    with pytest.raises(RecordError, match="missing"):
        read_claims(tmp_path / "absent.json")
    (tmp_path / "cut.json").write_text(COMMITTED.read_text()[:200])
    with pytest.raises(RecordError, match="not readable JSON"):
        read_claims(tmp_path / "cut.json")
    (tmp_path / "object.json").write_text("{}")
    with pytest.raises(RecordError, match="a list of judged claims"):
        read_claims(tmp_path / "object.json")


def _above_avx2():
    """numpy's dispatch targets above AVX2 (x86-64-v3) that this CPU has: the ones an AVX2-only CPU lacks."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    return [t for t in __cpu_dispatch__ if t not in ("X86_V2", "X86_V3") and __cpu_features__.get(t)]


def judged_tree(tmp_path):
    """The repository as it judged the committed reports/claims.json: the root itself, or, while a
    registered run is under way (its results mixed with the previous run's), the commit that last
    wrote reports/claims.json, unpacked into tmp_path (code, registry and records of that run)."""
    from replication.cli.repro import registered_run_in_progress
    if not registered_run_in_progress(ROOT):
        return ROOT
    commit = subprocess.run(["git", "log", "-1", "--format=%H", "--", "reports/claims.json"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.strip()
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive, check=True)
    return tmp_path


def test_a_cpu_without_avx512_judges_the_committed_results_to_the_same_bytes(tmp_path):
    """numpy as on an AVX2-only CPU (its AVX-512 kernels switched off) judges the committed results
    to the committed reports/claims.json: figures are written rounded (record.SIGNIFICANT), so the
    last binary digit that vectorised log and exp round differently never reaches the file. One kind
    of figure does differ: an exact zero computed as the rounding error of a sum (a trend's slope over
    a constant series, 6.4e-16 on one CPU, 3.9e-16 on another), which no count of significant digits
    absorbs; those compare as zero (same_judgement)."""
    disabled = _above_avx2()
    if not disabled:
        pytest.skip("this CPU has no numpy kernel above AVX2 to switch off")
    tree = judged_tree(tmp_path)
    script = ("import sys; from replication.judge.judge import judge_registry; "
              "from replication.judge.record import claims_text; from replication.run.config import read_resolved; "
              "sys.stdout.write(claims_text(judge_registry(read_resolved('conditions'))[0]))")
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(disabled),
           "PYTHONPATH": os.pathsep.join([str(tree / "src"), str(tree)])}
    judged = subprocess.run([sys.executable, "-c", script], cwd=tree, env=env, capture_output=True, text=True,
                            timeout=600)
    assert judged.returncode == 0, judged.stderr[-2000:]
    assert same_judgement(json.loads(judged.stdout), json.loads((tree / "reports" / "claims.json").read_text()))


ROUNDING_ZERO = 1e-12       # below this a figure is the rounding error of an exact zero (float64: ~1e-16 x terms)


def same_judgement(a, b):
    """Two claims.json documents equal field by field, figures to the digit, except figures both
    below ROUNDING_ZERO in size, which are equal as zero."""
    if isinstance(a, float) and isinstance(b, float) and abs(a) < ROUNDING_ZERO and abs(b) < ROUNDING_ZERO:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_judgement(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_judgement(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def test_judgements_differ_by_any_figure_but_the_rounding_error_of_a_zero():
    assert same_judgement({"slopes": [6.43127555846e-16, 0.05]}, {"slopes": [3.88179475723e-16, 0.05]})
    assert not same_judgement({"slopes": [0.0, 0.05]}, {"slopes": [0.0, 0.0500000000001]})
    assert not same_judgement({"slopes": [1e-9]}, {"slopes": [2e-9]})
    assert not same_judgement({"verdict": "reproduced"}, {"verdict": "contradicted"})
    assert not same_judgement([1, 2], [1, 2, 3]) and not same_judgement({"a": 1}, {"b": 1})


def test_figures_are_rounded_to_the_same_digits_whatever_their_last_binary_digit():
    x = 1.8190931665172159
    assert rounded(x) == rounded(math.nextafter(x, 2)) == rounded(math.nextafter(x, 0)) == 1.81909316652
    assert rounded({"a": [x, 3, True, "w"]}) == {"a": [1.81909316652, 3, True, "w"]}
    assert rounded(rounded(x)) == rounded(x)
