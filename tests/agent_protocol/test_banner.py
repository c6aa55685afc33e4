"""``tickethub serve`` says at start that anonymous Agent Protocol clients share one
identity, while (and only while) anonymous access is on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tickethub.server.main import _announce
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings


@pytest.mark.parametrize("anonymous", [True, False])
def test_the_banner_says_anonymous_clients_are_one_agent(
        tmp_path: Path, anonymous: bool, capsys: pytest.CaptureFixture[str]) -> None:
    hub = HubRuntime(Settings(data_dir=tmp_path, ap_anonymous=anonymous,
                              admin_token="th_admin_" + "b" * 40))
    try:
        _announce(hub)
    finally:
        hub.close()
    banner = capsys.readouterr().err
    assert ("clients without a token are all one agent ('ap-client')" in banner) is anonymous
