"""The held-out parts of the mail development set (test4 … test8) stay whole and in
step with ``labels.txt`` and share no thread with the other parts. Nothing here scores
them (see ``tests/fixtures/mail_dev/README.md``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DEV = Path(__file__).resolve().parents[1] / "fixtures" / "mail_dev"


HELD_OUT = ("test4", "test5", "test6", "test7", "test8")


@pytest.mark.parametrize("part", HELD_OUT)
def test_held_out_part_is_complete_and_written(part: str) -> None:
    from tests.fixtures.mail_dev.build_labels import build

    out, problems = build()
    assert problems == []
    threads = [t for t in json.loads((DEV / "threads.json").read_text())["threads"]
               if t["split"] == part]
    mails = {m["message_id"] for t in threads for m in t["messages"]}
    assert len(threads) >= 40 and len(mails) >= 150
    assert {x["message_id"] for x in out[part]} == mails  # every mail labelled
    written = {json.dumps(x, sort_keys=True)
               for x in json.loads((DEV / f"{part}.labels.json").read_text())}
    assert written == {json.dumps(x, sort_keys=True) for x in out[part]}


def test_held_out_parts_share_no_thread_with_the_others() -> None:
    threads = json.loads((DEV / "threads.json").read_text())["threads"]
    by_part: dict[str, set[str]] = {}
    for t in threads:
        by_part.setdefault(t["split"], set()).update(m["message_id"] for m in t["messages"])
    for part in HELD_OUT:
        rest = set().union(*(ids for other, ids in by_part.items() if other != part))
        assert by_part[part] and not by_part[part] & rest, part
