"""``tickethub mail ...``: mailbox → issue tree, on the hub's own database (the same
settings as ``serve``: TICKETHUB_DATABASE_URL or SQLite in the data folder).

\b
  tickethub mail ingest sample.mbox              # mbox file, Maildir, or imap://user@host/INBOX
  tickethub mail watch imap://hub@mail.example.org/INBOX   # keep following with IDLE
  tickethub mail tree --format json              # the tree in the scoring shape
  tickethub mail score labels.json --mbox sample.mbox
  tickethub mail train                           # rebuild the learned extractor's model
  tickethub mail digest [--send]                 # overdue, stalled, newly done
  tickethub mail quarantine                      # what could not be read, and why
  tickethub mail undo '<message-id@host>'         # revert what one mail did
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tickethub.cli import output
from tickethub.cli.local import local_runtime

if TYPE_CHECKING:
    from tickethub.server.runtime import HubRuntime


def _password(runtime: HubRuntime, user: str, host: str) -> str:
    secret = runtime.settings.imap_password
    if secret is not None:
        return secret.get_secret_value()
    return str(click.prompt(f"IMAP password for {user}@{host}", hide_input=True, err=True))


def _print_summary(summary: dict[str, int], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(summary))
        return
    click.echo(", ".join(f"{k} {v}" for k, v in summary.items()), err=False)


_data_dir = click.option("--data-dir", type=click.Path(path_type=Path), default=None,
                         help="The hub's data folder [default: ./data].")


@click.group()
def mail() -> None:
    """Read mail into the issue tree, export and score the tree, send the digest."""


@mail.command()
@click.argument("source")
@click.option("--extractor", type=click.Choice(["rules", "learned", "llm"]), default=None,
              help="How operations are found [default: the mail_extractor setting].")
@click.option("--root", "root_issue", type=int, default=None,
              help="Ticket id new issues go under [default: mail_root_issue].")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@_data_dir
def ingest(source: str, extractor: str | None, root_issue: int | None, as_json: bool,
           data_dir: Path | None) -> None:
    """Read SOURCE (an mbox file, a Maildir, or imap[s]://user@host/FOLDER) into the tree.

    Safe to repeat: mails already read are skipped, an interrupted run resumes."""
    from tickethub.mail.build import ingest as run
    from tickethub.mail.build import make_extractor, make_pipeline
    from tickethub.mail.sources import FileSource

    with local_runtime(data_dir) as runtime:
        pipeline = make_pipeline(runtime, make_extractor(
            extractor or runtime.settings.mail_extractor, runtime), root_issue=root_issue,
            reply_handler=_reply_handler(runtime))
        if source.startswith(("imap://", "imaps://")):
            summary = asyncio.run(_ingest_imap(runtime, pipeline, source, watch=False))
        else:
            files = FileSource(Path(source))
            with click.progressbar(length=len(files), label="mail", file=sys.stderr,
                                   show_pos=True) as bar:
                summary = asyncio.run(run(pipeline, files.name, files,
                                          progress=lambda _outcome: bar.update(1)))
        _print_summary(summary, as_json)


@mail.command()
@click.argument("url", required=False)
@click.option("--extractor", type=click.Choice(["rules", "learned", "llm"]), default=None)
@click.option("--root", "root_issue", type=int, default=None)
@_data_dir
def watch(url: str | None, extractor: str | None, root_issue: int | None,
          data_dir: Path | None) -> None:
    """Follow an IMAP mailbox (URL or the imap_url setting) with IDLE until Ctrl-C."""
    from tickethub.mail.build import make_extractor, make_pipeline

    with local_runtime(data_dir) as runtime:
        url = url or runtime.settings.imap_url
        if not url:
            raise output.Failure("give an imap:// URL or set imap_url", "bad_request", "url",
                                 output.USAGE)
        pipeline = make_pipeline(runtime, make_extractor(
            extractor or runtime.settings.mail_extractor, runtime), root_issue=root_issue,
            reply_handler=_reply_handler(runtime))
        try:
            summary = asyncio.run(_ingest_imap(runtime, pipeline, url, watch=True))
        except KeyboardInterrupt:
            summary = pipeline.summary.as_dict()
        _print_summary(summary, False)


async def _ingest_imap(runtime: HubRuntime, pipeline: Any, url: str, *,
                       watch: bool) -> dict[str, int]:
    import ssl

    from imapclient.exceptions import LoginError

    from tickethub.mail.imap import ImapMailbox, ImapURL
    from tickethub.store.mail_store import SqlMailState

    parsed = ImapURL.parse(url)
    box = ImapMailbox(parsed, _password(runtime, parsed.user, parsed.host),
                      SqlMailState(runtime.store), runtime.clock,
                      batch=runtime.settings.imap_batch, write_batch=runtime.store.batch)
    count = 0

    async def process(raw: Any) -> str:
        nonlocal count
        outcome: str = await pipeline.process(box.name, raw.key, raw.raw)
        count += 1
        if count % 50 == 0:
            click.echo(f"mail: {count} read", err=True)
        return outcome

    try:
        if watch:
            await box.watch(process, idle_seconds=runtime.settings.imap_idle_seconds)
        else:
            await box.run(process)
    except LoginError as exc:
        raise output.Failure(f"IMAP login as {parsed.user} failed: {exc}", "unauthenticated",
                             "imap_password", output.NOT_ALLOWED) from exc
    except ssl.SSLCertVerificationError as exc:
        raise output.Failure(f"the IMAP server's certificate is not trusted: {exc}",
                             "tls_untrusted", "source", output.UNAVAILABLE) from exc
    except OSError as exc:
        raise output.Failure(f"cannot reach {parsed.host}:{parsed.port}: {exc}",
                             "unavailable", "source", output.UNAVAILABLE) from exc
    finally:
        box.close()
    summary: dict[str, int] = pipeline.summary.as_dict()
    return summary


def _reply_handler(runtime: HubRuntime) -> Callable[[Any], bool] | None:
    from tickethub.channels.email.replies import ReplyReader

    return ReplyReader.from_runtime(runtime).handle


@mail.command()
@click.option("--root", "root_issue", type=int, default=None,
              help="Export this ticket's subtree [default: every issue raised by mail].")
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown")
@_data_dir
def tree(root_issue: int | None, fmt: str, data_dir: Path | None) -> None:
    """Print the issue tree as Markdown or as the JSON the scoring command reads."""
    from tickethub.mail.tree import export_tree, tree_markdown

    with local_runtime(data_dir) as runtime:
        data = export_tree(runtime.tickets, root_issue)
    click.echo(json.dumps(data, indent=1) if fmt == "json" else tree_markdown(data), nl=False)
    if fmt == "json":
        click.echo()


@mail.command()
@click.argument("labels", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--tree", "tree_file", type=click.Path(exists=True, dir_okay=False,
              path_type=Path), help="A tree exported with `mail tree --format json`.")
@click.option("--mbox", type=click.Path(exists=True, path_type=Path),
              help="Build the tree from this mailbox in a scratch hub, then score it.")
@click.option("--extractor", type=click.Choice(["rules", "learned", "llm"]), default="rules",
              help="With --mbox: how operations are found [default: rules].")
@click.option("--model", default=None,
              help="With --extractor llm: the model to ask [default: mail_llm_model].")
@click.option("--worst", default=10, show_default=True,
              help="How many of the worst emails to list.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def score(labels: Path, tree_file: Path | None, mbox: Path | None, extractor: str,
          model: str | None, worst: int, as_json: bool) -> None:
    """Score a tree against LABELS (labelled by shared/fixtures/email/LABELING.md): op
    accuracy, target accuracy, closing precision and recall, duplicate-issue rate, the
    per-op confusion table and the worst emails. `mail eval` is the same command."""
    from tickethub.mail.score import score as compute
    from tickethub.mail.score import score_text

    if (tree_file is None) == (mbox is None):
        raise output.Failure("give exactly one of --tree or --mbox", "bad_request", "tree",
                             output.USAGE)
    gold = json.loads(labels.read_text())
    if tree_file is not None:
        data = json.loads(tree_file.read_text())
    else:
        assert mbox is not None
        data = _scratch_tree(mbox, extractor, model)
    result = compute(data, gold, worst=worst)
    click.echo(json.dumps(result, indent=1) if as_json else score_text(result), nl=as_json)


mail.add_command(score, name="eval")


@mail.command()
@click.option("--dev", "dev_dir", type=click.Path(exists=True, file_okay=False,
              path_type=Path), default=Path("tests/fixtures/mail_dev"), show_default=True,
              help="The labelled development folder (PART.labels.json + PART.mbox).")
@click.option("--part", "parts", multiple=True,
              help="A part to train on (repeat) [default: tune and test, test2 … test7].")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the model [default: the file shipped in the package].")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 if the model file differs from a rebuild.")
def train(dev_dir: Path, parts: tuple[str, ...], out: Path | None, check: bool) -> None:
    """Rebuild the `learned` extractor's model from the labelled parts, deterministically
    (the same labels give the same file, byte for byte). Each part is ingested into a
    scratch hub with its gold operations, every mail's features are recorded in that
    context, and a logistic regression is fitted over them."""
    import tempfile

    from tickethub.mail.extractors.learned import MODEL_PATH
    from tickethub.mail.learn import TRAIN_PARTS, collect, dev_parts, dump
    from tickethub.mail.learn import train as fit
    from tickethub.mail.sources import FileSource

    examples = []
    for labels, mbox in dev_parts(dev_dir, parts or TRAIN_PARTS):
        if not labels.exists() or not mbox.exists():
            raise output.Failure(f"{labels.name} or {mbox.name} is missing in {dev_dir}",
                                 "bad_request", "part", output.USAGE)
        with tempfile.TemporaryDirectory() as scratch, local_runtime(Path(scratch)) as rt:
            if rt.settings.database_url:
                raise output.Failure("training builds its own scratch hub; unset "
                                     "TICKETHUB_DATABASE_URL", "bad_request", "database_url",
                                     output.USAGE)
            files = FileSource(mbox)
            examples += asyncio.run(collect(rt, json.loads(labels.read_text()), files,
                                            files.name))
    text = dump(fit(examples))
    target = out or MODEL_PATH
    if check:
        same = target.exists() and target.read_text(encoding="utf-8") == text
        click.echo(f"{target}: {'up to date' if same else 'differs from a rebuild'}")
        if not same:
            sys.exit(1)
        return
    target.write_text(text, encoding="utf-8")
    click.echo(f"{target}: {len(examples)} mails, {text.count(chr(10)) - 6} features")


def _scratch_tree(mbox: Path, extractor: str, model: str | None = None) -> dict[str, Any]:
    import tempfile

    from tickethub.mail.build import ingest as run
    from tickethub.mail.build import make_extractor, make_pipeline
    from tickethub.mail.sources import FileSource
    from tickethub.mail.tree import export_tree

    with tempfile.TemporaryDirectory() as scratch, local_runtime(Path(scratch)) as runtime:
        if runtime.settings.database_url:
            raise output.Failure("scoring builds its own scratch hub; unset "
                                 "TICKETHUB_DATABASE_URL", "bad_request", "database_url",
                                 output.USAGE)
        if model is not None:
            runtime.settings = runtime.settings.model_copy(update={"mail_llm_model": model})
        files = FileSource(mbox)
        pipeline = make_pipeline(runtime, make_extractor(extractor, runtime))
        asyncio.run(run(pipeline, files.name, files))
        return export_tree(runtime.tickets)


@mail.command()
@click.option("--send", is_flag=True, help="Also mail it to mail_digest_to over SMTP.")
@click.option("--root", "root_issue", type=int, default=None)
@_data_dir
def digest(send: bool, root_issue: int | None, data_dir: Path | None) -> None:
    """The daily digest: overdue, stalled and newly done issues, as Markdown."""
    from tickethub.mail.digest import build_digest, digest_markdown

    with local_runtime(data_dir) as runtime:
        found = build_digest(runtime.tickets, runtime.clock.now(), root_issue=root_issue,
                             stalled_days=runtime.settings.mail_digest_stalled_days)
        text = digest_markdown(found)
        click.echo(text, nl=False)
        if send:
            from tickethub.channels.email.smtp import SmtpSender
            from tickethub.mail.digest import digest_email

            to = runtime.settings.mail_digest_to
            if not to:
                raise output.Failure("set mail_digest_to to send the digest", "bad_request",
                                     "mail_digest_to", output.USAGE)
            SmtpSender.from_settings(runtime.settings).send(
                digest_email(found, text, runtime.settings.mail_from, to))
            click.echo(f"sent to {', '.join(to)}", err=True)


@mail.command()
@click.argument("message_id")
@_data_dir
def undo(message_id: str, data_dir: Path | None) -> None:
    """Undo what the mail MESSAGE_ID did: cancel the issues it raised, put back the
    statuses it changed (each undo is noted in the ticket's history)."""
    from tickethub.mail.undo import undo_mail
    from tickethub.store.mail_store import SqlMailState

    mid = message_id if message_id.startswith("<") else f"<{message_id}>"
    with local_runtime(data_dir) as runtime:
        for item in undo_mail(runtime.tickets, SqlMailState(runtime.store), mid,
                              runtime.clock.now(),
                              defer_days=runtime.settings.mail_defer_days):
            click.echo(f"#{item.ticket_id}\t{item.op}\t{item.result}")


@mail.command()
@click.option("--limit", type=int, default=100)
@_data_dir
def quarantine(limit: int, data_dir: Path | None) -> None:
    """Mails that could not be processed, with the reason."""
    from tickethub.store.mail_store import SqlMailState

    with local_runtime(data_dir) as runtime:
        for item in SqlMailState(runtime.store).quarantined(limit):
            click.echo(f"{item.id}\t{item.created_at:%Y-%m-%d %H:%M}\t{item.mailbox}\t"
                       f"{item.source_key}\t{item.size}\t{item.reason}")
