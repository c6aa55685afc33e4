"""``tickethub.testing`` (the in-memory fakes) is for unit tests that want no database:
importing it must not load the SQL stack. Checked in a fresh interpreter, since this
test process has SQLAlchemy loaded already."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_fakes_loads_no_sqlalchemy() -> None:
    probe = ("import sys, tickethub.testing; "
             "print(sorted(m for m in sys.modules "
             "if m == 'sqlalchemy' or m.startswith(('sqlalchemy.', 'alembic'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
