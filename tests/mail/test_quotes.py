"""The author's own text: quotes, reply headers and signatures stripped, many languages."""

from __future__ import annotations

import pytest

from tickethub.mail.quotes import own_text


@pytest.mark.parametrize("text, expected", [
    ("Thanks, that worked.\n\nOn Mon, 1 Jan 2002, Bob wrote:\n> try apt-get\n> more\n",
     "Thanks, that worked."),
    ("Danke, das hat geholfen.\n\nAm 01.01.2024 um 10:00 schrieb Bob:\n> versuch es\n",
     "Danke, das hat geholfen."),
    ("谢谢\uff0c问题解决了。\n\n在 2024年1月1日 写道\uff1a\n> 试试重启\n",
     "谢谢\uff0c问题解决了。"),
    ("Merci, ça marche.\n\nLe lun. 1 janv. 2024, Bob a écrit :\n> essaie\n", "Merci, ça marche."),
    ("Bob wrote:\n> a\nThat did not help.\n> b\nStill broken.\n",
     "That did not help.\nStill broken."),
    ("On Fri, Matthias wrote:\n\n# But as soon as it is updated\n# I will build\n\n"
     "It got updated (;\n", "It got updated (;"),
    ("Fixed now.\n\n-- \nAlice\nSome Company\n", "Fixed now."),
])
def test_own_text(text: str, expected: str) -> None:
    assert own_text(text) == expected


def test_a_mail_that_is_only_a_quote_keeps_its_text() -> None:
    assert own_text("> only quoted\n> lines\n") == "> only quoted\n> lines"
