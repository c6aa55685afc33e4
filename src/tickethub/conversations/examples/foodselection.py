"""Example plugin: order lunch in a chat thread (docs/chat.md walks through it).

``@bot foodselection tomorrow`` asks for a dish, then a diet, then a confirmation; the
saved order is the answer of the conversation's ticket, so everyone can see it —
``@bot orders tomorrow`` lists a day's orders, and so does the hub's inbox (label
``foodselection``).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from tickethub.conversations.forms import Choice, Confirm, Form, Values
from tickethub.conversations.handlers import Step, Trigger, Turn, command
from tickethub.domain.status import Status
from tickethub.domain.tickets import TicketQuery

DISHES = ("Pasta al pomodoro", "Chicken curry", "Falafel bowl", "Mushroom risotto")
DIETS = ("No restrictions", "Vegetarian", "Vegan", "Gluten-free")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def parse_day(text: str, today: date) -> date:
    """``today``, ``tomorrow``, a weekday name (the next one) or ``YYYY-MM-DD``."""
    word = text.strip().lower() or "today"
    if word == "today":
        return today
    if word == "tomorrow":
        return today + timedelta(days=1)
    if word in _WEEKDAYS:
        ahead = (_WEEKDAYS.index(word) - today.weekday()) % 7 or 7
        return today + timedelta(days=ahead)
    try:
        day = date.fromisoformat(word)
    except ValueError:
        raise ValueError(f"“{text.strip()}” is not a day (try tomorrow, friday or "
                         f"2026-01-02)") from None
    if day < today:
        raise ValueError(f"{day:%a %-d %b} is in the past")
    return day


def _label(day: str) -> str:
    return f"{date.fromisoformat(day):%a %-d %b}"


def _begin(args: str, turn: Turn) -> Values:
    return {"day": parse_day(args, turn.at.date()).isoformat()}


def _finish(values: Values, turn: Turn) -> tuple[str, Any]:
    order = {"day": values["day"], "dish": values["dish"], "diet": values["diet"],
             "person": turn.sender}
    return (f"Saved: {values['dish']} ({values['diet'].lower()}) for {turn.sender} on "
            f"{_label(values['day'])}. Anyone can see it with “@bot orders "
            f"{values['day']}”.", order)


def orders_for(turn: Turn, day: str) -> list[dict[str, Any]]:
    """The saved orders of ``day``, read from the answered foodselection tickets."""
    page = turn.tickets.list(TicketQuery(label="foodselection", status=(Status.ANSWERED,),
                                         limit=200))
    found = [t.answer.data for t in page.items
             if t.answer is not None and isinstance(t.answer.data, dict)
             and t.answer.data.get("day") == day]
    return sorted(found, key=lambda o: str(o.get("person")))


class Orders:
    """``@bot orders <day>``: a one-message answer listing that day's orders."""

    name = "orders"
    triggers: tuple[Trigger, ...] = (command("orders"),)
    timeout = None

    def start(self, turn: Turn) -> Step:
        try:
            day = parse_day(turn.text, turn.at.date()).isoformat()
        except ValueError as exc:
            return Step(say=[f"{exc}."])
        orders = orders_for(turn, day)
        if not orders:
            return Step(say=[f"No orders for {_label(day)} yet."])
        lines = [f"- {o['person']}: {o['dish']} ({str(o['diet']).lower()})" for o in orders]
        return Step(say=["\n".join([f"Orders for {_label(day)}:", *lines])])

    def advance(self, turn: Turn, state: dict[str, Any]) -> Step:  # never conversational
        return Step()

    def help(self, state: dict[str, Any]) -> str:
        return "Say “@bot orders tomorrow”."


def foodselection(timeout: timedelta = timedelta(minutes=10)) -> Form:
    return Form(
        name="foodselection",
        triggers=(command("foodselection"),),
        begin=_begin,
        fields=[
            Choice("dish", lambda v: f"Which dish for {_label(v['day'])}?", DISHES),
            Choice("diet", "Any dietary needs?", DIETS),
            Confirm("confirm", lambda v: f"{v['dish']}, {v['diet'].lower()}, on "
                                         f"{_label(v['day'])}: save it?"),
        ],
        finish=_finish,
        timeout=timeout,
        description="order lunch for a day",
    )


def handlers() -> list[Any]:
    """What to register: the form and the listing."""
    return [foodselection(), Orders()]
