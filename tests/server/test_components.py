"""The component registry: built-ins and plugins install the same way, each through the
narrow ``Host`` interface, only when enabled."""

from __future__ import annotations

import asyncio

import pytest

from tickethub import plugins
from tickethub.server import components
from tickethub.server.runtime import HubRuntime
from tickethub.services.host import Component, Host
from tickethub.settings import Settings


def test_every_builtin_is_a_component_with_its_own_name() -> None:
    builtins = [components._load(target) for target in components.BUILTINS]
    assert all(isinstance(c, Component) for c in builtins)
    names = [c.name for c in builtins]
    assert len(set(names)) == len(names)
    assert {"github", "email", "matrix", "chat_hooks", "agents"} <= set(names)


def test_a_hub_with_no_channel_configured_installs_none(settings: Settings) -> None:
    """Only what is on by default (the webhook channel, personal agents) is installed,
    and provided."""
    hub = HubRuntime(settings)
    try:
        assert hub.components == ["webhooks", *(["agents"] if settings.agents_enabled
                                               else [])]
        assert [channel.name for channel in hub.channels] == ["webhook"]
        assert hub.github is None and hub.chat_hooks == {}
        assert (hub.agents is not None) == settings.agents_enabled
    finally:
        hub.close()


async def test_a_plugin_plugs_in_through_the_host(settings: Settings) -> None:
    """A third-party component adds a loop and provides a value; a disabled one does
    nothing."""
    ran = asyncio.Event()
    seen: list[Host] = []

    def install(host: Host) -> None:
        seen.append(host)

        async def loop() -> None:
            ran.set()

        host.add_loop(loop)
        host.provide("echo", host.public_url("/echo"))

    def never(host: Host) -> None:
        raise AssertionError("a disabled component was installed")

    plugin = Component("echo", lambda s: True, install)
    off = Component("off", lambda s: False, never)
    hub = HubRuntime(settings, components=[plugin, off])
    try:
        assert hub.components == ["echo"]
        assert hub.provided("echo") == hub.public_url("/echo")
        async with hub.running():
            await asyncio.wait_for(ran.wait(), 10)
    finally:
        hub.close()
    assert seen == [hub]


def test_an_entry_point_that_is_not_a_component_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Point:
        name = "bad"
        value = "somewhere:thing"

        def load(self) -> object:
            return object()

    monkeypatch.setattr(plugins, "entry_points", lambda group: [Point()])
    with pytest.raises(TypeError, match="bad"):
        components.registered()


async def test_a_component_adds_a_door_served_after_the_registered_ones(
        settings: Settings) -> None:
    """One plugin object can be both: a component whose install adds the routes its
    channel is fed by."""
    import httpx
    from fastapi import APIRouter

    from tickethub.api.app import create_app
    from tickethub.api.doors import Door, routers

    router = APIRouter()

    @router.get("/hooks/echo")
    async def echo() -> dict[str, str]:
        return {"echo": "yes"}

    plugin = Component("echo", lambda s: True,
                       lambda host: host.add_door(Door("echo", routers(router))))
    hub = HubRuntime(settings, components=[plugin])
    try:
        app = create_app(hub)
        async with hub.running(), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://hub") as client:
            answered = await client.get("/hooks/echo")
            assert answered.status_code == 200 and answered.json() == {"echo": "yes"}
            assert answered.headers["x-request-id"]  # inside the middleware stack
            assert (await client.get("/healthz")).status_code == 200
    finally:
        hub.close()
