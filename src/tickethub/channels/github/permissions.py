"""Who may steer an agent from GitHub: people with ``admin`` or ``write`` permission on
the repository, read from the collaborator-permission endpoint and cached for a short
while. ``author_association`` is only a cheap first filter: associations that can never
carry write access (``NONE``, ``FIRST_TIMER``, ``CONTRIBUTOR``, ...) are refused without
an API call; ``OWNER``/``MEMBER``/``COLLABORATOR`` are always checked with the endpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tickethub.channels.github.client import GitHubGateway

STEERING = frozenset({"admin", "write", "maintain"})
MAYBE_WRITERS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


class PermissionCache:
    def __init__(self, gateway: GitHubGateway, ttl_seconds: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._gateway = gateway
        self._ttl = ttl_seconds
        self._clock = clock
        self._cache: dict[tuple[str, str], tuple[str, float]] = {}
        self.lookups = 0  # API calls made; tests and the bench read it

    async def permission(self, repo: str, login: str) -> str:
        key = (repo.lower(), login.lower())
        hit = self._cache.get(key)
        now = self._clock()
        if hit is not None and hit[1] > now:
            return hit[0]
        self.lookups += 1
        level = await self._gateway.permission(repo, login)
        self._cache[key] = (level, now + self._ttl)
        return level

    async def may_steer(self, repo: str, login: str, association: str | None) -> bool:
        """True when ``login`` may answer or command tickets mirrored in ``repo``."""
        if association is not None and association.upper() not in MAYBE_WRITERS:
            return False
        return await self.permission(repo, login) in STEERING
