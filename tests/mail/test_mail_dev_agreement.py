"""``tests/fixtures/mail_dev/agreement.py``: one labeller scored as a predictor of another
with the product's scorer, plus kappa and the confusion of main ops."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.mail_dev.agreement import agreement, main


def _label(mid: str, op: str, kind: str | None = None, target: str | None = None,
           status: str | None = None) -> dict[str, Any]:
    new_status = {"answer": "answered", "complete": "done"}.get(op, status)
    return {"message_id": mid, "thread": "<m1>", "op": op, "kind": kind, "target": target,
            "new_status": new_status, "evidence": "x", "title": None}


A = [_label("<m1>", "add", "question"), _label("<m2>", "answer", target="<m1>"),
     _label("<m3>", "complete", target="<m1>"), _label("<m4>", "ignore"),
     _label("<m5>", "add", "task"), _label("<m6>", "status", target="<m5>", status="deferred")]
# B disagrees on three mails: misses the answer, adds an issue on a mail A ignores, and
# closes the task A only deferred.
B = [A[0], _label("<m2>", "ignore"), A[2], _label("<m4>", "add", "question"), A[4],
     _label("<m6>", "complete", target="<m5>")]


def test_identical_labels_agree_fully() -> None:
    result = agreement(A, A)
    for key in ("op_accuracy", "target_accuracy", "closing_precision", "closing_recall",
                "closing_pair_precision", "closing_pair_recall", "main_op_agreement",
                "kappa_op", "kappa_op_fine"):
        assert result[key] == 1.0, key
    assert result["duplicate_rate"] == 0.0
    assert result["wrong"] == []


def test_known_disagreement_gives_exact_numbers() -> None:
    result = agreement(A, B)
    assert result["op_accuracy"] == 0.5  # m2, m4, m6 wrong
    assert result["target_accuracy"] == pytest.approx(0.3333)  # only m3 → m1 of 3 targets
    assert (result["closing_precision"], result["closing_recall"]) == (0.5, 0.5)
    assert result["duplicate_rate"] == pytest.approx(0.3333)  # m4 of B's 3 adds
    # observed 3/6, chance (2·3 + 1·2 + 1·1) / 36 = 0.25 → (0.5 - 0.25) / 0.75
    assert result["kappa_op"] == pytest.approx(0.3333)
    assert result["confusion"]["answer"] == {"ignore": 1}
    assert result["confusion"]["add"] == {"add": 2}
    assert result["confusion_fine"]["status:deferred"] == {"complete": 1}
    assert result["confusion_fine"]["ignore"] == {"add:question": 1}


def test_swapping_the_labellers_swaps_the_direction() -> None:
    result = agreement(B, A)
    assert result["op_accuracy"] == 0.5
    assert result["target_accuracy"] == 0.5  # B's m3 → m1 and m6 → m5; A has only m3's
    assert result["duplicate_rate"] == 0.0  # both of A's adds are adds of B too
    assert result["kappa_op"] == pytest.approx(0.3333)  # kappa is symmetric


def test_script_reads_label_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.json").write_text(json.dumps(A))
    (tmp_path / "b.json").write_text(json.dumps(B))
    main([str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json"])
    assert json.loads(capsys.readouterr().out)["op_accuracy"] == 0.5
