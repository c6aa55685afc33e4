"""The SDK stands alone: importing it loads httpx, not the server (no FastAPI,
SQLAlchemy, pydantic or other tickethub packages)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_importing_the_sdk_loads_no_server_code() -> None:
    code = ("import json, sys; import tickethub.sdk, tickethub.sdk.testing; "
            "print(json.dumps(sorted(sys.modules)))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], check=True,
                                       capture_output=True, text=True).stdout)
    ours = [m for m in loaded if m.startswith("tickethub")]
    assert all(m == "tickethub" or m.startswith("tickethub.sdk") for m in ours), ours
    # (click may appear: httpx loads it for its own command line when it is installed)
    for heavy in ("fastapi", "sqlalchemy", "pydantic", "starlette", "uvicorn", "alembic"):
        assert heavy not in loaded, f"the SDK imported {heavy}"
    assert "httpx" in loaded
