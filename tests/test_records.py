"""reports/claims.json through its one reader and writer (judge/record.py): the committed file reads
and writes back byte for byte, and a file with a missing, extra or mistyped field is refused with
one line naming the claim and the field, before anything is written."""
import json

import pytest

from helpers import ROOT
from replication.judge.record import RecordError, as_dicts, claims_text, read_claims, write_claims

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
