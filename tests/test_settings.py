from pathlib import Path

import pytest
from pydantic import ValidationError

from tickethub.settings import Settings


def test_defaults_work_on_a_laptop(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    settings = Settings()
    assert settings.port == 8080 and settings.host == "127.0.0.1"
    assert settings.effective_database_url == f"sqlite:///{tmp_path / 'data' / 'tickethub.db'}"
    assert settings.effective_public_url == "http://127.0.0.1:8080"


def test_a_toml_file_sets_values_and_the_environment_wins(monkeypatch, tmp_path: Path):
    config = tmp_path / "hub.toml"
    config.write_text('port = 9001\nhost = "0.0.0.0"\npublic_url = "https://hub.example/"\n')
    monkeypatch.setenv("TICKETHUB_CONFIG", str(config))
    monkeypatch.setenv("TICKETHUB_PORT", "9002")
    settings = Settings()
    assert settings.port == 9002 and settings.host == "0.0.0.0"
    assert settings.effective_public_url == "https://hub.example"


def test_a_bad_value_names_the_setting(monkeypatch):
    monkeypatch.setenv("TICKETHUB_PORT", "eighty")
    with pytest.raises(ValidationError, match="port"):
        Settings()
