"""A Server-Sent Events decoder: feed it lines, get events (WHATWG HTML, "event stream
interpretation"). No I/O, so the sync and async clients share it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerSentEvent:
    event: str
    data: str
    id: str | None


class SSEDecoder:
    """Turns the lines of an event stream into :class:`ServerSentEvent`\\ s.

    ``feed`` returns an event when a blank line completes one that has data, else
    ``None``. ``last_event_id`` and ``retry_ms`` keep what the stream set last.
    """

    def __init__(self) -> None:
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None
        self._event = ""
        self._data: list[str] = []

    def feed(self, line: str) -> ServerSentEvent | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment, e.g. a keep-alive
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self.last_event_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return ServerSentEvent(event=event or "message", data="\n".join(data),
                               id=self.last_event_id)
