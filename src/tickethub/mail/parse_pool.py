"""Parsing a bulk run's mails in worker processes, ahead of the writer.

Parsing is about a third of a mail's cost and needs nothing but the raw bytes, so a bulk
``mail ingest`` hands chunks of raw mail to a process pool and applies the parsed mails
in order while the next chunks are parsed (``PARSE_AHEAD`` chunks in flight).

Contract: :func:`parsed_ahead` yields ``(raw mail, parse result)`` for every mail of the
source, in the source's order; the result is the :class:`ParsedMail` or the exception to
treat as the parse's — :class:`UnreadableMail` with the reason the pipeline would have
quarantined it under (``parser crashed: ...`` for a parser bug), so the decisions and the
quarantine are the same as parsing in the pipeline. A pool that cannot start or breaks (a
worker killed) falls back to parsing in this process, from the chunk that broke.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Collection, Iterable, Iterator
from concurrent.futures import Future
from functools import partial
from itertools import islice

from tickethub.mail.parse import ParsedMail, UnreadableMail, parse_mail
from tickethub.mail.screening import is_screened
from tickethub.mail.sources import RawMail
from tickethub.process_pools import spawn_pool

log = logging.getLogger(__name__)

CHUNK = 64
"""Mails per task: enough to pay for the trip to the worker and back."""
PARSE_AHEAD = 4
"""Chunks in flight per worker."""
MIN_MAILS = 300
"""Below this a pool costs more to start than it saves; parse in the pipeline."""

Parsed = ParsedMail | UnreadableMail


def workers_for(count: int | None) -> int:
    """How many worker processes a run of ``count`` mails gets: 0 (parse in the
    pipeline) for a small or unknown-size source or a one-core machine, else one per
    core, at most 4 — the writer mostly waits for parsed mail (spam, HTML, a re-run
    where every mail is skipped), so it does not need a core of its own."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    if count is None or count < MIN_MAILS or cores < 2:
        return 0
    return min(cores, 4)


def parse_one(raw: bytes, max_bytes: int, ignore: frozenset[str] = frozenset()) -> Parsed:
    """Parse ``raw`` as the pipeline does, the failure as an :class:`UnreadableMail`;
    mail of a kind in ``ignore`` (``mail.screening``) without its body, as the pipeline
    only records it."""
    try:
        return parse_mail(raw, max_bytes=max_bytes,
                          skip_body=partial(is_screened, ignore=ignore) if ignore else None)
    except UnreadableMail as exc:
        return UnreadableMail(exc.reason)
    except Exception as exc:  # a parser bug: the reason the pipeline would give
        return UnreadableMail(f"parser crashed: {type(exc).__name__}: {str(exc)[:500]}")


def parse_chunk(raws: list[bytes], max_bytes: int,
                ignore: frozenset[str] = frozenset()) -> list[Parsed]:
    return [parse_one(raw, max_bytes, ignore) for raw in raws]


def parsed_ahead(mails: Iterable[RawMail], *, max_bytes: int, workers: int,
                 chunk: int = CHUNK, ignore: Collection[str] = ()
                 ) -> Iterator[tuple[RawMail, Parsed]]:
    """See the module contract. ``workers`` 0 parses in this process. ``ignore``: the
    pipeline's screening kinds (its ``ignore``); such mail comes without its body."""
    kinds = frozenset(ignore)
    source = iter(mails)
    if workers <= 0:
        for mail in source:
            yield mail, parse_one(mail.raw, max_bytes, kinds)
        return
    try:
        # spawned, not forked: the hub's threads and connections stay out of the workers
        pool = spawn_pool(workers)
    except (OSError, ValueError) as exc:
        log.warning("no parse workers (%s); parsing in this process", exc)
        yield from parsed_ahead(source, max_bytes=max_bytes, workers=0, ignore=kinds)
        return
    pending: deque[tuple[list[RawMail], Future[list[Parsed]]]] = deque()
    try:
        while True:
            while len(pending) < workers * PARSE_AHEAD:
                batch = list(islice(source, chunk))
                if not batch:
                    break
                pending.append((batch, pool.submit(
                    parse_chunk, [m.raw for m in batch], max_bytes, kinds)))
            if not pending:
                return
            batch, future = pending.popleft()
            try:
                results = future.result()
            except Exception as exc:  # the pool broke (a worker died): go on here
                log.warning("parse workers failed (%s); parsing in this process", exc)
                rest = [m for b, _ in pending for m in b]
                pending.clear()
                for mail in (*batch, *rest):
                    yield mail, parse_one(mail.raw, max_bytes, kinds)
                yield from parsed_ahead(source, max_bytes=max_bytes, workers=0, ignore=kinds)
                return
            yield from zip(batch, results, strict=True)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
