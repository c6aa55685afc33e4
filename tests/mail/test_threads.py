"""JWZ threading: placeholders for missing parents, loop protection, subject merge."""

from __future__ import annotations

from dataclasses import dataclass

from tickethub.mail.threads import ThreadIndex, base_subject, is_reply_subject, thread


@dataclass(frozen=True)
class M:
    message_id: str
    subject: str = "topic"
    parent_ids: tuple[str, ...] = ()


def ids(container: object) -> list[str]:
    return [c.id for c in container.walk()]  # type: ignore[attr-defined]


def test_replies_to_a_missing_mail_share_a_placeholder_parent() -> None:
    b = M("<b>", "Re: topic", ("<a>",))
    c = M("<c>", "Re: topic", ("<a>",))
    roots = thread([b, c])
    assert len(roots) == 1
    root = roots[0]
    assert root.is_placeholder and root.id == "<a>"
    assert sorted(ids(root)[1:]) == ["<b>", "<c>"]


def test_single_child_placeholder_root_is_pruned() -> None:
    roots = thread([M("<b>", "Re: topic", ("<a>",))])
    assert [r.id for r in roots] == ["<b>"]


def test_reference_chain_builds_depth() -> None:
    a, b, c = M("<a>"), M("<b>", "Re: topic", ("<a>",)), M("<c>", "Re: topic", ("<a>", "<b>"))
    (root,) = thread([c, a, b])  # order of arrival does not matter
    assert root.id == "<a>"
    assert root.children[0].id == "<b>" and root.children[0].children[0].id == "<c>"


def test_reply_loops_do_not_loop() -> None:
    a = M("<a>", "x", ("<b>",))
    b = M("<b>", "Re: x", ("<a>",))
    selfref = M("<s>", "y", ("<s>",))
    roots = thread([a, b, selfref])
    seen = [cid for r in roots for cid in ids(r)]
    assert sorted(seen) == ["<a>", "<b>", "<s>"]
    index: ThreadIndex[M] = ThreadIndex()
    for m in (a, b, selfref):
        index.add(m)
    assert index.root_of("<a>") is index.root_of("<b>")


def test_duplicate_message_id_keeps_the_first_mail() -> None:
    first, second = M("<d>", "one"), M("<d>", "two")
    (root,) = thread([first, second])
    assert root.message is first


def test_subject_merge_of_a_reply_that_lost_its_references() -> None:
    roots = thread([M("<a>", "Xine dependencies"), M("<z>", "Re: Xine Dependencies")])
    assert len(roots) == 1 and ids(roots[0]) == ["<a>", "<z>"]
    # a new mail that merely has the same subject is not a reply
    assert len(thread([M("<a>", "Hello"), M("<b>", "Hello")])) == 2


def test_subjects() -> None:
    assert base_subject("Re: [ILUG] RE: AW: sysctl.conf") == "sysctl.conf"
    assert base_subject("回复\uff1a你好") == "你好"
    assert is_reply_subject("[SAtalk] Re: x") and not is_reply_subject("[SAtalk] x")
