"""The extractor interface and the context it reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from tickethub.mail.operations import Operation
from tickethub.mail.parse import ParsedMail


@dataclass(frozen=True, slots=True)
class IssueView:
    """An issue as an extractor sees it."""

    id: int
    kind: str
    status: str
    title: str
    raised_by: str
    source_message_id: str | None
    parent_id: int | None
    depth: int = 0


@dataclass(frozen=True, slots=True)
class MailContext:
    """What an extractor knows besides the mail.

    ``thread_issues``: the issues of this mail's thread, oldest first. ``chain``: ids of the
    issues raised by the mail's ancestors in the reply chain, nearest first (the likeliest
    target of an answer). ``open_elsewhere``: open issues of other threads (capped).
    ``new_topic``: the mail replies into a thread under a different subject (a hijack)."""

    thread_root: str
    root_issue: int | None
    thread_issues: tuple[IssueView, ...] = ()
    chain: tuple[int, ...] = ()
    open_elsewhere: tuple[IssueView, ...] = ()
    new_topic: bool = False
    is_reply: bool = False
    ancestors: tuple[IssueView, ...] = field(default=())

    def issue(self, issue_id: int) -> IssueView | None:
        for issue in (*self.thread_issues, *self.open_elsewhere, *self.ancestors):
            if issue.id == issue_id:
                return issue
        return None

    @property
    def known_ids(self) -> set[int]:
        ids = {i.id for i in (*self.thread_issues, *self.open_elsewhere, *self.ancestors)}
        if self.root_issue is not None:
            ids.add(self.root_issue)
        return ids


class ExtractionFailed(Exception):
    """The extractor could not produce valid operations (e.g. a model that keeps replying
    off-schema, or is unreachable); the mail is quarantined with this reason."""


class Extractor(Protocol):
    """Turns one mail into operations. Must not change anything itself."""

    name: str

    async def extract(self, mail: ParsedMail, context: MailContext) -> list[Operation]: ...
