"""Mail the pipeline reads but never turns into issues: spam and bulk.

Check only, no side effect: :func:`screened` names why a mail is to be ignored, or
returns ``None``.

* ``spam``: the receiving server's filter marked it — ``X-Spam-Flag: YES`` or an
  ``X-Spam-Status`` that starts with ``Yes`` (SpamAssassin, rspamd's SpamAssassin
  compatibility, most hosted filters).
* ``bulk``: ``Precedence: bulk`` or ``junk`` on mail that is neither mailing-list mail
  (``List-Id``, ``List-Post``, ``Mailing-List``, ...: lists send their members' mail as
  bulk, and that is people writing) nor part of a thread (In-Reply-To or References) —
  newsletters, marketing and notifications.
"""

from __future__ import annotations

from collections.abc import Collection

from tickethub.mail.parse import ParsedMail

KINDS = ("spam", "bulk")
_LIST_HEADERS = ("list-id", "list-post", "mailing-list", "x-mailing-list", "x-beenthere")


def is_spam(mail: ParsedMail) -> bool:
    flag = mail.headers.get("x-spam-flag", "").strip().lower()
    status = mail.headers.get("x-spam-status", "").strip().lower()
    return flag.startswith("yes") or status.startswith("yes")


def is_bulk(mail: ParsedMail) -> bool:
    precedence = mail.headers.get("precedence", "").strip().lower()
    if precedence not in ("bulk", "junk"):
        return False
    if any(mail.headers.get(name) for name in _LIST_HEADERS):
        return False
    return not mail.parent_ids


def screened(mail: ParsedMail, ignore: Collection[str]) -> str | None:
    """``"spam"`` or ``"bulk"`` when ``mail`` is of a kind in ``ignore``, else ``None``."""
    if "spam" in ignore and is_spam(mail):
        return "spam"
    if "bulk" in ignore and is_bulk(mail):
        return "bulk"
    return None


def is_screened(mail: ParsedMail, ignore: Collection[str]) -> bool:
    """Whether :func:`screened` ignores ``mail`` (reads its headers only: it can be asked
    before the body is read, ``parse_mail``'s ``skip_body``)."""
    return screened(mail, ignore) is not None
