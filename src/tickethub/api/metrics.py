"""``GET /metrics``: the hub's series in the Prometheus text format (docs/operations.md).

Off unless ``TICKETHUB_METRICS`` is true (404, as an unknown path). With
``TICKETHUB_METRICS_TOKEN`` set, a scrape must send ``Authorization: Bearer <that token>``
(else 401); the token is compared in constant time and is not an API token.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from tickethub.api.deps import bearer_token, call
from tickethub.errors import NotFound, Unauthenticated
from tickethub.ops.scrape import HubCollector
from tickethub.ops.series import REGISTRY
from tickethub.services.doors import MetricsDoor

router = APIRouter(tags=["health"])


class _Process(Collector):
    """The process-wide series (ops/series.py), beside one hub's scrape-time series."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


def registry_for(state: Any, hub: MetricsDoor) -> CollectorRegistry:
    """The registry a scrape of ``hub`` renders: built once per app (``state``)."""
    registry: CollectorRegistry | None = getattr(state, "metrics_registry", None)
    if registry is None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Process())
        registry.register(HubCollector(
            hub.engine, now=hub.clock.now, waiters=lambda: hub.bus.waiter_count,
            throttles=hub.throttles, channels=lambda: [c.name for c in hub.channels],
            cache_seconds=hub.settings.metrics_cache_seconds))
        state.metrics_registry = registry
    return registry


@router.get("/metrics", summary="Prometheus metrics (off unless TICKETHUB_METRICS)",
            response_class=Response, include_in_schema=False)
async def metrics(request: Request) -> Response:
    hub: MetricsDoor = request.app.state.hub
    settings = hub.settings
    if not settings.metrics:
        raise NotFound("not found")
    expected = settings.metrics_token
    if expected is not None:
        given = bearer_token(request) or ""
        if not hmac.compare_digest(given.encode(), expected.get_secret_value().encode()):
            raise Unauthenticated("send the metrics token (TICKETHUB_METRICS_TOKEN) as a "
                                  "bearer token", field="Authorization")
    body = await call(generate_latest, registry_for(request.app.state, hub))
    return Response(body, media_type=CONTENT_TYPE_LATEST)
