"""Threading by Message-ID, References and In-Reply-To: the JWZ algorithm
(https://www.jwz.org/doc/threading.html).

* Every Message-ID seen gets a :class:`Container`; an ID only referenced (its mail is not
  in the mailbox) is a *placeholder* container, so replies to a missing mail still share
  a thread.
* Links never create a loop: a link that would make a container its own ancestor is
  skipped (reply loops, forged or broken References).
* :class:`ThreadIndex` is the incremental form the pipeline uses, one mail at a time;
  :func:`thread` is the batch form (with empty-container pruning and the subject merge of
  replies that lost their references) used for whole mailboxes and the benchmark.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

_REPLY_PREFIX = re.compile(
    r"^\s*((re|aw|sv|vs|antw|fwd?|wg|tr|回复|答复|转发)\s*(\[\d+\])?\s*[:\uff1a]\s*"
    r"|\[[^\]]{1,40}\]\s*)+", re.IGNORECASE)


class Threadable(Protocol):
    @property
    def message_id(self) -> str: ...
    @property
    def subject(self) -> str: ...
    @property
    def parent_ids(self) -> tuple[str, ...]: ...


M = TypeVar("M", bound=Threadable)


def base_subject(subject: str) -> str:
    """The subject without reply/forward prefixes and list tags, lower-cased."""
    return " ".join(_REPLY_PREFIX.sub("", subject or "").split()).lower()


_REPLY_MARK = re.compile(
    r"^\s*(\[[^\]]{1,40}\]\s*)*(re|aw|sv|vs|antw|回复|答复)\s*(\[\d+\])?\s*[:\uff1a]",
    re.IGNORECASE)


def is_reply_subject(subject: str) -> bool:
    """True for "Re: ...", "[list] Re: ...", "AW: ...", "回复: ..." and the like."""
    return bool(_REPLY_MARK.match(subject or ""))


@dataclass(eq=False)
class Container(Generic[M]):
    id: str
    message: M | None = None
    parent: Container[M] | None = None
    children: list[Container[M]] = field(default_factory=list)

    @property
    def is_placeholder(self) -> bool:
        return self.message is None

    def has_ancestor(self, other: Container[M]) -> bool:
        node = self.parent
        steps = 0
        while node is not None and steps < 10_000:
            if node is other:
                return True
            node, steps = node.parent, steps + 1
        return False

    def root(self) -> Container[M]:
        node = self
        steps = 0
        while node.parent is not None and steps < 10_000:
            node, steps = node.parent, steps + 1
        return node

    def walk(self) -> Iterable[Container[M]]:
        """This container and its descendants, depth first, each once."""
        stack: list[Container[M]] = [self]
        seen: set[int] = set()
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            yield node
            stack.extend(reversed(node.children))


class ThreadIndex(Generic[M]):
    """JWZ step 1, incrementally: add mails one at a time, ask for a mail's thread root."""

    def __init__(self) -> None:
        self.table: dict[str, Container[M]] = {}

    def container(self, message_id: str) -> Container[M]:
        found = self.table.get(message_id)
        if found is None:
            found = self.table[message_id] = Container(message_id)
        return found

    def add(self, message: M) -> Container[M]:
        """Link ``message`` under its references; returns its container. A repeated
        Message-ID keeps the first mail (the repeat is a duplicate, not a new node)."""
        this = self.container(message.message_id)
        if this.message is None:
            this.message = message
        chain = [self.container(mid) for mid in message.parent_ids]
        for parent, child in itertools.pairwise(chain):
            self._link(parent, child, replace=False)
        if chain:
            self._link(chain[-1], this, replace=True)
        return this

    def link_known(self, parent_id: str, child_id: str) -> None:
        """Record a parent link learned elsewhere (e.g. from an earlier run)."""
        self._link(self.container(parent_id), self.container(child_id), replace=False)

    @staticmethod
    def _link(parent: Container[M], child: Container[M], *, replace: bool) -> None:
        if parent is child or parent.has_ancestor(child):
            return  # would make a loop
        if child.parent is not None:
            if child.parent is parent or not replace:
                return
            child.parent.children.remove(child)
        child.parent = parent
        parent.children.append(child)

    def root_of(self, message_id: str) -> Container[M]:
        return self.container(message_id).root()


def thread(messages: Sequence[M]) -> list[Container[M]]:
    """Batch JWZ: the root containers of ``messages``' threads, in first-seen order.

    Empty placeholders are pruned (a placeholder root with one child is replaced by that
    child; placeholders inside a thread hand their children up), then roots whose base
    subject equals an earlier root's are merged when they are replies (the merge JWZ does
    for mail that lost its references)."""
    index: ThreadIndex[M] = ThreadIndex()
    for message in messages:
        index.add(message)
    roots = [c for c in index.table.values() if c.parent is None]
    pruned: list[Container[M]] = []
    for root in roots:
        _prune(root)
        if root.is_placeholder and len(root.children) == 1:
            only = root.children[0]
            only.parent = None
            pruned.append(only)
        elif root.is_placeholder and not root.children:
            continue
        else:
            pruned.append(root)
    by_subject: dict[str, Container[M]] = {}
    result: list[Container[M]] = []
    for root in pruned:
        subject = _subject_of(root)
        first = by_subject.get(subject) if subject else None
        if first is not None and _replyish(root) and first is not root:
            root.parent = first
            first.children.append(root)
            continue
        if subject and subject not in by_subject:
            by_subject[subject] = root
        result.append(root)
    return result


def _prune(container: Container[M]) -> None:
    stack = [container]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        kids: list[Container[M]] = []
        for child in node.children:
            if child.is_placeholder and not child.children:
                continue
            if (child.is_placeholder and node.parent is not None) or (
                    child.is_placeholder and len(child.children) == 1):
                for grandchild in child.children:
                    grandchild.parent = node
                    kids.append(grandchild)
                continue
            kids.append(child)
        node.children = kids
        stack.extend(kids)


def _subject_of(root: Container[M]) -> str:
    for node in root.walk():
        if node.message is not None:
            return base_subject(node.message.subject)
    return ""


def _replyish(root: Container[M]) -> bool:
    return root.message is None or is_reply_subject(root.message.subject)
