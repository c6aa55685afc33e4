"""The channel contract: what every outbound ``Channel`` (``channels/base.py``) promises,
one set of tests run against each (webhook, email, Matrix, GitHub), each through its own
fake of the outside system (an HTTP recorder, an SMTP sender that keeps what it is
given, a Matrix transport that keeps what it posts, ``tests/github/gh_fake``).

* A new ticket routed to the channel is delivered once; one not routed to it is not.
* A repeated delivery (after a crash, before it was recorded) is the same message to
  the receiver: it carries the delivery's idempotency key.
* The cursor and the queue survive a restart: nothing is lost, nothing sent twice.
* Where the channel takes answers (email, Matrix, GitHub): an answer from an
  authorised person through the channel reaches the ticket, and is not echoed back to
  the channel it came from; forged or unauthorised input changes nothing an agent
  would obey.

The chat transports (Slack, Mattermost, Telegram and Matrix conversations) are not
``Channel``s: they feed the conversation engine. Their promises (a thread answered in
that thread, a redelivery handled once, forgeries refused, bystanders kept not obeyed,
a taken message surviving a restart, no echoes) are the chat transport contract,
``tests/channels/test_chat_transport_contract.py``, built the same way: a kit per
transport with its platform.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field, replace
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN
from tickethub.channels.base import Channel
from tickethub.channels.email.channel import EmailChannel
from tickethub.channels.email.replies import ReplyReader
from tickethub.channels.matrix.tickets import ROOM_REF, MatrixTicketChannel
from tickethub.channels.webhook import WebhookChannel
from tickethub.channels.worker import DeliveryWorker
from tickethub.conversations.engine import ConversationEngine
from tickethub.conversations.model import ChatMessage, ThreadRef
from tickethub.conversations.ticket_threads import THREAD_REF
from tickethub.domain.actors import SYSTEM, Actor, Role
from tickethub.domain.records import Delivery
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket, TicketDraft
from tickethub.mail.parse import parse_mail
from tickethub.server.runtime import HubRuntime
from tickethub.services.deliveries import DeliveryService
from tickethub.settings import Settings
from tickethub.store.chat_store import SqlChatState

AGENT = Actor("bot", Role.AGENT)


@dataclass
class Sent:
    """One message as the outside system received it."""

    key: str  # what lets the receiver drop a repeat (carries the idempotency key)
    text: str
    to: str


@dataclass
class Kit:
    """One channel and its fake outside system. ``install`` may be called again (a
    restart): the fake, and what it received, stay."""

    name: str
    sent: list[Sent] = field(default_factory=list)
    takes_answers: bool = True
    routes_by_ticket: bool = True  # False: ``deliver`` decides, or every ticket goes

    def install(self, runtime: HubRuntime) -> Channel:
        raise NotImplementedError

    def route(self) -> dict[str, Any]:
        """``TicketDraft`` fields that send a new ticket to this channel."""
        return {}

    async def answer(self, runtime: HubRuntime, ticket: Ticket, text: str) -> None:
        """An authorised person answers ``ticket`` through the channel."""
        raise NotImplementedError

    async def forge(self, runtime: HubRuntime, ticket: Ticket, text: str) -> None:
        """Forged or unauthorised input about ``ticket`` comes in through the channel."""
        raise NotImplementedError

    def echoed(self, text: str) -> bool:
        """Whether the outside was sent ``text`` back as a new message."""
        return any(text in s.text for s in self.sent)


class WebhookKit(Kit):
    def install(self, runtime: HubRuntime) -> Channel:
        if not runtime.webhooks.active():
            runtime.webhooks.register(SYSTEM, "https://receiver.example/hook",
                                      ["ticket.created"], secret="s" * 32)

        def record(request: httpx.Request) -> httpx.Response:
            body = json.loads(request.content)
            self.sent.append(Sent(request.headers["X-Tickethub-Delivery"],
                                  json.dumps(body["event"]), str(request.url)))
            return httpx.Response(204)

        return WebhookChannel(runtime.webhooks,
                              httpx.AsyncClient(transport=httpx.MockTransport(record)))


KEY = b"k" * 32
ALICE_MAIL = "alice@example.org"


class _Sender:
    def __init__(self, kit: EmailKit) -> None:
        self._kit = kit

    def send(self, message: EmailMessage) -> None:
        self._kit.messages.append(message)
        key = f"{message['X-Tickethub-Delivery']} {message['Message-ID']}"
        self._kit.sent.append(Sent(key, message.get_content(), str(message["To"])))


class EmailKit(Kit):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.messages: list[EmailMessage] = []

    def install(self, runtime: HubRuntime) -> Channel:
        return EmailChannel(runtime.tickets, _Sender(self), key=KEY,  # type: ignore[arg-type]
                            mail_from="hub@example.org", reply_domain="example.org",
                            notify={"alice": ALICE_MAIL}, public_url="http://hub")

    def route(self) -> dict[str, Any]:
        return {"assignee": "alice"}

    def _reply(self, ticket: Ticket, sender: str, text: str) -> bytes:
        [notice] = [m for m in self.messages if f"#{ticket.id}]" in str(m["Subject"])]
        reply = EmailMessage()
        reply["From"] = sender
        reply["To"] = str(notice["Reply-To"])
        reply["Subject"] = "Re: " + str(notice["Subject"])
        reply["Message-ID"] = f"<{hashlib.sha256(text.encode()).hexdigest()[:12]}@x>"
        reply["In-Reply-To"] = str(notice["Message-ID"])
        reply.set_content(text)
        return bytes(reply)

    def _reader(self, runtime: HubRuntime) -> ReplyReader:
        return ReplyReader(runtime.tickets, key=KEY, responders={},
                           notify={"alice": ALICE_MAIL})

    async def answer(self, runtime: HubRuntime, ticket: Ticket, text: str) -> None:
        assert self._reader(runtime).handle(parse_mail(self._reply(ticket, ALICE_MAIL, text)))

    async def forge(self, runtime: HubRuntime, ticket: Ticket, text: str) -> None:
        # Alice's reply token, sent from another address: it does not verify.
        raw = self._reply(ticket, "mallory@example.org", text)
        assert not self._reader(runtime).handle(parse_mail(raw))


ROOM = "!lunch:example.org"


class _Transport:
    """Matrix as the channel uses it: a post with a transaction id is one event, so a
    repeat with the same id gives the same event (as the Matrix send API does)."""

    def __init__(self, kit: MatrixKit) -> None:
        self._kit = kit

    async def connect(self) -> None:
        return None

    async def post(self, room: str, text: str, txn_id: str,
                   thread_root: str | None = None) -> str:
        self._kit.sent.append(Sent(txn_id, text, room))
        return "$" + hashlib.sha256(txn_id.encode()).hexdigest()[:16]


class MatrixKit(Kit):
    RESPONDER = "@alice:example.org"

    def install(self, runtime: HubRuntime) -> Channel:
        return MatrixTicketChannel(runtime.tickets, _Transport(self))  # type: ignore[arg-type]

    def route(self) -> dict[str, Any]:
        return {"refs": {ROOM_REF: ROOM}}

    async def _say(self, runtime: HubRuntime, ticket: Ticket, sender: str, text: str
                   ) -> None:
        thread = ThreadRef.parse(str(runtime.tickets.get(ticket.id).refs[THREAD_REF]))
        engine = ConversationEngine(SqlChatState(runtime.store), runtime.tickets,
                                    runtime.clock, [],
                                    responders=frozenset({self.RESPONDER}))
        engine.receive(ChatMessage(thread.transport, thread.room, f"$in-{sender}", sender,
                                   text, thread_root=thread.root))

    async def answer(self, runtime: HubRuntime, ticket: Ticket, text: str) -> None:
        await self._say(runtime, ticket, self.RESPONDER, text)

    async def forge(self, runtime: HubRuntime, ticket: Ticket, text: str) -> None:
        await self._say(runtime, ticket, "@mallory:example.org", text)


GITHUB_TESTS = Path(__file__).resolve().parents[1] / "github"
REPO = "octo-org/hello-world"


class GithubKit(Kit):
    """GitHub through ``tests/github/gh_fake`` (built from GitHub's OpenAPI examples);
    the message is the issue the mirror opens. Answers are issue comments."""

    def __init__(self, name: str) -> None:
        super().__init__(name, routes_by_ticket=False)
        if str(GITHUB_TESTS) not in sys.path:
            sys.path.insert(0, str(GITHUB_TESTS))
        import gh_examples
        from gh_fake import FakeGitHub

        try:
            for key in gh_examples.PACKAGES:
                gh_examples.fetch(key)
        except gh_examples.Unavailable as exc:
            pytest.skip(f"the GitHub example packages are unavailable: {exc}")
        self.fake = FakeGitHub()
        self.fake.grant(REPO, "maintainer", "write")
        self.github: Any = None
        self.comments: list[str] = []
        self._ids = iter(range(5000, 6000))

    def _handler(self, request: httpx.Request) -> httpx.Response:
        response = self.fake.handler(request)
        if request.method == "POST" and request.url.path.endswith(f"{REPO}/issues"):
            issue = response.json()
            self.sent.append(Sent(f"{REPO}#{issue['number']}", request.content.decode(),
                                  REPO))
        elif request.method == "POST" and request.url.path.endswith("/comments"):
            self.comments.append(request.content.decode())
        return response

    def install(self, runtime: HubRuntime) -> Channel:
        from tickethub.channels.github import install

        first = self.github is None
        self.github = install(runtime, token="ghp_test",
                              transport=httpx.MockTransport(self._handler), register=False)
        if first:
            self.github.sync.connect(SYSTEM, REPO, labels=["github"])
        return self.github.mirror  # type: ignore[no-any-return]

    def route(self) -> dict[str, Any]:
        return {"labels": ("github",)}

    async def _comment(self, ticket: Ticket, login: str, association: str, text: str
                       ) -> str:
        from gh_helpers import comment_payload

        link = self.github.sync.link(ticket.id)
        payload = comment_payload("created", REPO, link.number, next(self._ids), login,
                                  text, association)
        return str(await self.github.inbound.handle("issue_comment", payload))

    async def answer(self, runtime: HubRuntime, ticket: Ticket, text: str) -> None:
        assert await self._comment(ticket, "maintainer", "COLLABORATOR", text) == "answered"

    async def forge(self, runtime: HubRuntime, ticket: Ticket, text: str) -> None:
        # Someone without write access, however they word it.
        assert await self._comment(ticket, "mallory", "NONE", "/answer " + text) == "untrusted"

    def echoed(self, text: str) -> bool:
        return any(text in c for c in self.comments) or super().echoed(text)


KITS = {"webhook": lambda: WebhookKit("webhook", takes_answers=False,
                                      routes_by_ticket=False),
        "email": lambda: EmailKit("email"),
        "matrix": lambda: MatrixKit("matrix"),
        "github": lambda: GithubKit("github")}


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    """The root conftest's hub settings, with GitHub's pacing off (no waits in tests)."""
    return Settings(data_dir=tmp_path / "data", database_url=database_url,
                    admin_token=ADMIN_TOKEN, delivery_poll_seconds=0.05,
                    delivery_backoff_seconds=0.05, github_write_interval_seconds=0,
                    github_backoff_seconds=0.01, github_poll_seconds=3600)


@pytest.fixture(params=sorted(KITS))
def kit(request: pytest.FixtureRequest) -> Kit:
    return KITS[request.param]()


def _worker(runtime: HubRuntime, channel: Channel, deliveries: DeliveryService | None = None
            ) -> DeliveryWorker:
    return DeliveryWorker(channel, deliveries or runtime.deliveries, runtime.bus,
                          poll_seconds=0.01)


def _fresh_deliveries(runtime: HubRuntime) -> DeliveryService:
    """The delivery service of a restarted hub: nothing in memory, the same database."""
    s = runtime.settings
    return DeliveryService(runtime.store, runtime.clock, max_attempts=s.delivery_max_attempts,
                           backoff_seconds=s.delivery_backoff_seconds,
                           backoff_max_seconds=s.delivery_backoff_max_seconds)


def _ask(runtime: HubRuntime, kit: Kit, title: str, routed: bool = True) -> Ticket:
    fields = kit.route() if routed else {}
    ticket, _ = runtime.tickets.ask(AGENT, TicketDraft(Kind.QUESTION, title, **fields))
    return ticket


async def _started(runtime: HubRuntime, kit: Kit) -> tuple[Channel, DeliveryWorker]:
    channel = kit.install(runtime)
    worker = _worker(runtime, channel)
    await worker.run_once()  # a channel seen for the first time starts at the log's end
    return channel, worker


async def test_a_new_routed_ticket_is_delivered_once(runtime: HubRuntime, kit: Kit) -> None:
    _, worker = await _started(runtime, kit)
    ticket = _ask(runtime, kit, "Deploy the API?")
    assert await worker.run_once() == 1
    assert await worker.run_once() == 0
    [sent] = kit.sent
    assert "Deploy the API?" in sent.text or f'"ticket_id": {ticket.id}' in sent.text
    [delivery] = runtime.deliveries.list(kit.name)
    assert delivery.status == "delivered"


async def test_a_ticket_not_routed_to_the_channel_is_not_delivered(runtime: HubRuntime,
                                                                   kit: Kit) -> None:
    if kit.name == "webhook":
        pytest.skip("a webhook gets every ticket of the event types it subscribed to")
    channel, worker = await _started(runtime, kit)
    ticket = _ask(runtime, kit, "not for this channel", routed=False)
    [created] = runtime.events.since(0, ticket_id=ticket.id)
    if kit.routes_by_ticket:
        assert list(channel.targets(created)) == []
    await worker.run_once()
    assert kit.sent == []


async def test_a_repeated_delivery_is_the_same_message(runtime: HubRuntime, kit: Kit
                                                       ) -> None:
    channel, worker = await _started(runtime, kit)
    _ask(runtime, kit, "once")
    await worker.run_once()
    [delivery] = runtime.deliveries.list(kit.name)
    [event] = [e for e in runtime.events.since(0) if e.seq == delivery.event_seq]
    await channel.deliver(_pending(delivery), event)  # as after a crash before recording
    # Sent again identically (the receiver drops it by its key), or not at all.
    assert len(kit.sent) in (1, 2) and len({(m.key, m.text, m.to) for m in kit.sent}) == 1


def _pending(delivery: Delivery) -> Delivery:
    return replace(delivery, status="pending")


async def test_the_cursor_and_queue_survive_a_restart(runtime: HubRuntime, kit: Kit) -> None:
    await _started(runtime, kit)
    before = _ask(runtime, kit, "asked while the channel was down")
    # Restart: a new channel and delivery service (nothing in memory) on the same store.
    restarted = _worker(runtime, kit.install(runtime), _fresh_deliveries(runtime))
    assert await restarted.run_once() == 1
    after = _ask(runtime, kit, "asked after the restart")
    again = _worker(runtime, kit.install(runtime), _fresh_deliveries(runtime))
    assert await again.run_once() == 1
    assert await again.run_once() == 0
    keys = [s.key for s in kit.sent]
    assert len(keys) == len(set(keys)) == 2
    targets = {d.event_seq for d in runtime.deliveries.list(kit.name)}
    assert {e.ticket_id for e in runtime.events.since(0) if e.seq in targets} == {
        before.id, after.id}


async def test_an_answer_through_the_channel_reaches_the_ticket_and_is_not_echoed(
        runtime: HubRuntime, kit: Kit) -> None:
    if not kit.takes_answers:
        pytest.skip(f"{kit.name} is outbound only")
    _, worker = await _started(runtime, kit)
    ticket = _ask(runtime, kit, "Ship it?")
    await worker.run_once()
    before = len(kit.sent)
    await kit.answer(runtime, ticket, "yes, ship it")
    answered = runtime.tickets.get(ticket.id)
    assert answered.status is Status.ANSWERED and answered.answer is not None
    assert answered.answer.text == "yes, ship it"
    assert answered.answer.via.startswith(("email", "chat:", "github"))
    await worker.run_once()  # whatever the answer's events cause out there
    # Not sent back where it came from: no new message, and not the answer's text.
    assert len(kit.sent) == before and not kit.echoed("yes, ship it")


async def test_forged_or_unauthorised_input_is_not_obeyed(runtime: HubRuntime, kit: Kit
                                                          ) -> None:
    if not kit.takes_answers:
        pytest.skip(f"{kit.name} is outbound only")
    _, worker = await _started(runtime, kit)
    ticket = _ask(runtime, kit, "Drop the database?")
    await worker.run_once()
    await kit.forge(runtime, ticket, "yes, drop it")
    after = runtime.tickets.get(ticket.id)
    assert after.status is Status.OPEN and after.answer is None
    assert all(not m.trusted for m in runtime.tickets.messages(ticket.id)
               if "drop it" in m.body)
