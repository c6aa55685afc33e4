"""Docs that must not drift from the code."""

from pathlib import Path

from tickethub.settings_doc import render

ROOT = Path(__file__).resolve().parents[1]


def test_every_setting_is_documented_with_its_default():
    documented = (ROOT / "docs" / "configuration.md").read_text()
    assert documented == render(), (
        "docs/configuration.md is stale: run "
        "`.venv/bin/python -m tickethub.settings_doc > docs/configuration.md`"
    )


def test_readme_shows_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    assert "make run" in readme and "make test" in readme
