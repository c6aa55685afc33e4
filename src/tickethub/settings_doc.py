"""Renders docs/configuration.md from the ``Settings`` model, so the docs list every
setting with its real default and description (a test keeps them in step)."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from tickethub.settings import Settings

HEADER = """# Configuration

Every setting is an environment variable `TICKETHUB_<NAME>`, or the lower-case name in a TOML
file named by `TICKETHUB_CONFIG` (default: `tickethub.toml` in the working folder, if there).
Environment variables win over the file. Every default works on a laptop.

```toml
# tickethub.toml
port = 9000
database_url = "postgresql+psycopg://hub:secret@127.0.0.1/hub"
```

This page is generated from `src/tickethub/settings.py` by
`python -m tickethub.settings_doc > docs/configuration.md`.

| variable | default | what it does |
| --- | --- | --- |
"""

def _default(name: str) -> str:
    field = Settings.model_fields[name]
    value = field.default
    if value is None:
        return "—"
    if isinstance(value, SecretStr):
        return "(secret)"
    return f"`{value}`"

def render() -> str:
    rows = []
    for name, field in Settings.model_fields.items():
        description = (field.description or "").replace("|", "\\|")
        rows.append(f"| `TICKETHUB_{name.upper()}` | {_default(name)} | {description} |")
    return HEADER + "\n".join(rows) + "\n"

def main() -> None:
    print(render(), end="")

if __name__ == "__main__":
    main()

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
