"""Multi-step forms: a conversational handler built from a list of fields.

Each field asks one question and parses the answer: :class:`Choice` (a number or the
option's text), :class:`Field` (typed text, parsed by a function that raises
``ValueError`` with the reason) and :class:`Confirm` (yes/no). A wrong answer gets ONE
message that says what was wrong and asks again; after ``max_tries`` wrong answers the
form hands the conversation to a person (its ticket stays open, labelled ``handoff``).
A field with ``direct=True`` (a secret) is only accepted by direct message; its value is
kept in the conversation's state but never in the ticket's messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from tickethub.conversations.handlers import Step, Trigger, Turn

Values = dict[str, Any]

YES = frozenset({"yes", "y", "ok", "confirm", "sure"})
NO = frozenset({"no", "n", "nope"})


@dataclass(frozen=True)
class Choice:
    """Pick one of ``options`` by number (``3``) or by text (``gluten-free``)."""

    name: str
    question: str | Callable[[Values], str]
    options: Sequence[str] | Callable[[Values], Sequence[str]]

    def _options(self, values: Values) -> Sequence[str]:
        return self.options(values) if callable(self.options) else self.options

    def ask(self, values: Values) -> str:
        q = self.question(values) if callable(self.question) else self.question
        lines = [f"{i}. {option}" for i, option in enumerate(self._options(values), 1)]
        return "\n".join([q, *lines])

    def parse(self, text: str, values: Values) -> Any:
        options = self._options(values)
        answer = text.strip().rstrip(".")
        if answer.isdigit() and 1 <= int(answer) <= len(options):
            return options[int(answer) - 1]
        for option in options:
            if option.lower() == answer.lower():
                return option
        raise ValueError(f"“{text.strip()}” is not one of the options; answer with a "
                         f"number from 1 to {len(options)}")

    direct = False


@dataclass(frozen=True)
class Field:
    """Free text turned into a value by ``parse`` (which raises ``ValueError`` saying
    what is wrong). ``direct=True``: only accepted by direct message."""

    name: str
    question: str | Callable[[Values], str]
    parse_text: Callable[[str], Any] = str
    direct: bool = False

    def ask(self, values: Values) -> str:
        return self.question(values) if callable(self.question) else self.question

    def parse(self, text: str, values: Values) -> Any:
        return self.parse_text(text.strip())


@dataclass(frozen=True)
class Confirm:
    """A yes/no question about the values so far; ``no`` cancels the form."""

    name: str
    question: Callable[[Values], str]
    direct = False

    def ask(self, values: Values) -> str:
        return f"{self.question(values)} (yes/no)"

    def parse(self, text: str, values: Values) -> Any:
        answer = text.strip().lower().rstrip(".!")
        if answer in YES:
            return True
        if answer in NO:
            return False
        raise ValueError(f"“{text.strip()}” is neither yes nor no")


FormField = Choice | Field | Confirm


@dataclass
class Form:
    """A conversational handler asking ``fields`` in order.

    ``begin(args)`` turns the words after the command into the first values (raise
    ``ValueError`` to refuse); ``finish(values, turn)`` returns the closing message and
    the structured result that answers the conversation's ticket.
    """

    name: str
    triggers: tuple[Trigger, ...]
    fields: Sequence[FormField]
    finish: Callable[[Values, Turn], tuple[str, Any]]
    begin: Callable[[str, Turn], Values] = lambda args, turn: {}
    timeout: timedelta | None = timedelta(minutes=10)
    max_tries: int = 3
    description: str = ""

    def start(self, turn: Turn) -> Step:
        try:
            values = self.begin(turn.text, turn)
        except ValueError as exc:
            return Step(say=[f"I can't start {self.name}: {exc}."])
        return self._ask({"i": 0, "tries": 0, "values": values}, turn)

    def advance(self, turn: Turn, state: dict[str, Any]) -> Step:
        current = self.fields[state["i"]]
        values = dict(state["values"])
        if current.direct and not turn.direct:
            # Nothing of what was typed is kept or echoed: it may be the secret itself.
            return Step(say=[f"Please send that to me in a direct message, not here. "
                             f"{current.ask(values)}"], state=state, direct=True, secret=True)
        try:
            value = current.parse(turn.text, values)
        except ValueError as exc:
            tries = state["tries"] + 1
            if tries >= self.max_tries:
                return Step(say=[f"That's {tries} answers I couldn't use, so I've handed "
                                 f"this {self.name} to a person; they'll follow up here."],
                            ending="handoff", result={"values": values, "stuck_at":
                                                      current.name})
            return Step(say=[f"{exc}. {current.ask(values)}"],
                        state={**state, "tries": tries}, direct=current.direct,
                        secret=current.direct)
        if isinstance(current, Confirm) and value is False:
            return Step(say=[f"OK, {self.name} cancelled; nothing was saved."],
                        ending="cancelled")
        values[current.name] = value
        following = {"i": state["i"] + 1, "tries": 0, "values": values}
        step = self._ask(following, turn)
        return Step(say=step.say, state=step.state, ending=step.ending, result=step.result,
                    direct=step.direct, secret=current.direct)

    def _ask(self, state: dict[str, Any], turn: Turn | None = None) -> Step:
        if state["i"] >= len(self.fields):
            assert turn is not None, "a form needs at least one field"
            text, result = self.finish(state["values"], turn)
            return Step(say=[text], ending="done", result=result)
        current = self.fields[state["i"]]
        return Step(say=[current.ask(state["values"])], state=state, direct=current.direct)

    def help(self, state: dict[str, Any]) -> str:
        current = self.fields[state["i"]]
        where = f"step {state['i'] + 1} of {len(self.fields)}"
        return (f"You're in {self.name} ({where}). Answer the question below, or say "
                f"“cancel” to stop. {current.ask(state['values'])}")
