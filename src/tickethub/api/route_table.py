"""Which route takes a request, read from the app's routes (included routers' too)
without running the router: for the body limit, which must know a request's route
before the app reads the body, and for a 405's ``Allow``."""

from __future__ import annotations

import re
from collections.abc import Sequence

from fastapi.routing import iter_route_contexts
from starlette.routing import BaseRoute
from starlette.types import Scope

RouteTable = list[tuple[re.Pattern[str], frozenset[str], BaseRoute]]


def route_path(scope: Scope) -> str:
    """The request's path as the routes match it: without the app's ``root_path`` (a
    hub served under a prefix by a proxy)."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root):]
    return path


def route_table(routes: Sequence[BaseRoute]) -> RouteTable:
    """Each route of ``routes`` (included routers' too, with their prefixes) as (path
    regex, methods — empty for a mount —, the route as declared), in the router's
    order."""
    return [(context.path_regex, frozenset(context.methods or ()), context.original_route)
            for context in iter_route_contexts(routes)]


def route_of(scope: Scope, table: RouteTable) -> BaseRoute | None:
    """The route of ``table`` that the router takes ``scope`` to, or the first that
    serves its path with another method (its 405); ``None`` for an unknown path."""
    path = route_path(scope)
    method = scope["method"]
    partial = None
    for path_regex, methods, route in table:
        if path_regex.match(path):
            if not methods or method in methods:
                return route
            if partial is None:
                partial = route
    return partial


def methods_at(scope: Scope, table: RouteTable) -> set[str]:
    """Every method the routes of ``table`` serve at the request's path."""
    path = route_path(scope)
    return {method for path_regex, methods, _ in table if methods and path_regex.match(path)
            for method in methods}
