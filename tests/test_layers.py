"""The layers of shared/DESIGN.md, checked from the source: which packages may not import
which. Every import counts, ``if TYPE_CHECKING:`` and function-level ones included (a
type-only import is still a dependency on that layer), so the composition root stays the
only place that knows the whole hub."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# package (under tickethub) -> packages it must not import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "channels": ("tickethub.server", "tickethub.api", "tickethub.web"),
    "mail": ("tickethub.server", "tickethub.api", "tickethub.web"),
    "conversations": ("tickethub.server", "tickethub.api", "tickethub.web"),
    "services": ("tickethub.server", "tickethub.api", "tickethub.web", "tickethub.channels"),
    "domain": ("tickethub.server", "tickethub.api", "tickethub.web", "tickethub.services",
               "tickethub.store"),
    # The store keeps domain records (``domain/``) and knows nothing of the use cases.
    "store": ("tickethub.server", "tickethub.api", "tickethub.web", "tickethub.services",
              "tickethub.channels", "tickethub.mail", "tickethub.conversations",
              "tickethub.agents", "tickethub.llm", "tickethub.cli", "tickethub.sdk"),
    "bus": ("tickethub.server", "tickethub.api", "tickethub.web"),
    # Doors get narrow interfaces (services/doors.py), never the runtime.
    "api": ("tickethub.server",),
    "web": ("tickethub.server",),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """Every module ``source`` (the text of ``module``) imports, with its line; relative
    imports resolved."""
    found = []
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def violations(package: str) -> list[str]:
    """``file:line imports name`` for each import under ``tickethub.<package>`` that its
    rule forbids."""
    banned = FORBIDDEN[package]
    out = []
    for path in sorted((SRC / "tickethub" / package).rglob("*.py")):
        module = _module_name(path)
        for line, name in imports_of(path.read_text(), module, path.name == "__init__.py"):
            if any(name == b or name.startswith(b + ".") for b in banned):
                out.append(f"{path.relative_to(SRC)}:{line} imports {name}")
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_the_package_keeps_to_its_layer(package: str) -> None:
    assert violations(package) == []


def test_the_check_sees_every_kind_of_import() -> None:
    """A type-only, a function-level and a relative import of the runtime are all seen."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from tickethub.server.runtime import HubRuntime\n"
        "def f():\n"
        "    import tickethub.server.main\n"
        "from ...server import components\n"
    )
    names = [name for _, name in imports_of(source, "tickethub.channels.github.x")]
    assert "tickethub.server.runtime" in names
    assert "tickethub.server.main" in names
    assert "tickethub.server.components" in names


def test_channels_and_mail_importing_the_runtime_would_fail(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """The rule is not vacuous: a channel module importing the runtime is reported."""
    fake = tmp_path / "tickethub" / "channels"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text("from tickethub.server.runtime import HubRuntime\n")
    monkeypatch.setitem(globals(), "SRC", tmp_path)
    assert violations("channels") == [
        "tickethub/channels/bad.py:1 imports tickethub.server.runtime",
        "tickethub/channels/bad.py:1 imports tickethub.server.runtime.HubRuntime"]


# -- one write path ------------------------------------------------------------------------
# Ticket state changes are written by services/ (ticket_writes.TicketWriter and the few
# services with their own group-committed writers) on the store's ports; a door, channel,
# engine or loop that opened a write transaction or called the repositories' batch
# writes itself would bypass the group commit.

STORE_WRITES = frozenset({"add_many", "update_many", "append_many"})
MAY_WRITE = ("services", "store")


def direct_writes(source: str) -> list[tuple[int, str]]:
    """``(line, call)`` for each call in ``source`` that writes through the store itself:
    ``<...store>.write()`` (opening a write transaction) or a repository batch write."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name, owner = node.func.attr, ast.unparse(node.func.value)
        if name == "write" and not node.args and owner.lower().endswith("store"):
            found.append((node.lineno, f"{owner}.write()"))
        elif name in STORE_WRITES:
            found.append((node.lineno, f"{owner}.{name}()"))
    return found


def write_path_violations(root: Path) -> list[str]:
    out = []
    for path in sorted((root / "tickethub").rglob("*.py")):
        package = path.relative_to(root / "tickethub").parts[0]
        if package in MAY_WRITE:
            continue
        for line, call in direct_writes(path.read_text()):
            out.append(f"{path.relative_to(root)}:{line} calls {call}")
    return out


def test_only_services_write_through_the_store() -> None:
    assert write_path_violations(SRC) == []


def test_the_write_check_sees_a_door_writing_itself(tmp_path: Path) -> None:
    door = tmp_path / "tickethub" / "channels"
    door.mkdir(parents=True)
    (door / "bad.py").write_text(
        "def answer(hub, changes):\n"
        "    with hub.store.write() as uow:\n"
        "        uow.tickets.update_many(changes)\n"
        "    open('x').write('fine: not the store')\n")
    (tmp_path / "tickethub" / "services").mkdir()
    (tmp_path / "tickethub" / "services" / "ok.py").write_text(
        "def w(self):\n"
        "    with self._store.write() as uow:\n"
        "        uow.events.append_many([], 0)\n")
    assert write_path_violations(tmp_path) == [
        "tickethub/channels/bad.py:2 calls hub.store.write()",
        "tickethub/channels/bad.py:3 calls uow.tickets.update_many()"]


# What ``store/`` may import of the hub: the records it keeps and their rules
# (``domain``), the error tree, the JSON codec, the request id of the events it writes.
STORE_MAY_IMPORT = ("tickethub.domain", "tickethub.store", "tickethub.errors",
                    "tickethub.json_codec", "tickethub.ops.request_id")


def store_reaches() -> list[str]:
    """``file:line`` for each import in ``store/`` of a hub module outside
    ``STORE_MAY_IMPORT``, and each use of another store module's private (``_name``)
    helper: imported by name, or as an attribute of an imported store module."""
    out = []
    for path in sorted((SRC / "tickethub" / "store").rglob("*.py")):
        module = _module_name(path)
        where = path.relative_to(SRC)
        for line, name in imports_of(path.read_text(), module, path.name == "__init__.py"):
            # (``from tickethub.ops import request_id`` also names ``tickethub.ops``)
            if name.startswith("tickethub.") and not any(
                    name == m or name.startswith(m + ".") or m.startswith(name + ".")
                    for m in STORE_MAY_IMPORT):
                out.append(f"{where}:{line} imports {name}")
        out += [f"{where}:{line} uses {name}"
                for line, name in private_uses(path.read_text(), module)]
    return out


def private_uses(source: str, module: str) -> list[tuple[int, str]]:
    """Private names of other ``tickethub.store`` modules that ``source`` (the text of
    ``module``) imports or reads as ``alias._name``."""
    found, aliases = [], {}
    package = module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if base.startswith("tickethub.store") and base != module:
                    if _private(alias.name):
                        found.append((node.lineno, target))
                    else:
                        aliases[alias.asname or alias.name] = target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("tickethub.store") and alias.name != module:
                    aliases[alias.asname or alias.name] = alias.name
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and _private(node.attr)
                and isinstance(node.value, ast.Name) and node.value.id in aliases):
            found.append((node.lineno, f"{aliases[node.value.id]}.{node.attr}"))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_store_keeps_domain_records_and_no_store_module_uses_anothers_privates() -> None:
    assert store_reaches() == []


def test_the_store_rules_are_not_vacuous(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    """A record type imported from ``services``, a private helper imported from another
    store module, and one read through a module alias are each reported; a module's
    own private names and public helpers of others are not."""
    fake = tmp_path / "tickethub" / "store"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text(
        "from tickethub.services.sessions import Session\n"
        "from tickethub.store.records import _message, SqlEventLog\n"
        "from . import ticket_repository as tr\n"
        "from tickethub.store.bad import _mine\n"
        "tr._like('x'); tr.like_pattern('x')\n")
    monkeypatch.setitem(globals(), "SRC", tmp_path)
    assert store_reaches() == [
        "tickethub/store/bad.py:1 imports tickethub.services.sessions",
        "tickethub/store/bad.py:1 imports tickethub.services.sessions.Session",
        "tickethub/store/bad.py:2 uses tickethub.store.records._message",
        "tickethub/store/bad.py:5 uses tickethub.store.ticket_repository._like"]
