"""The subschemas of a caller's JSON Schema, each with where it sits.

``walk`` visits every subschema once (the ones under schema keywords and, through local
``$ref``\\ s, any part of the document a reference points at) and checks what must hold
before the hub accepts the schema: every reference is local (starts with ``#``) and
resolves, every regular expression compiles in RE2, and there are not too many
subschemas. Errors name the place, e.g. ``response_schema.properties.x.$ref``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from referencing import Registry, Resource, Specification
from referencing.exceptions import NoSuchResource, Unresolvable

from tickethub.errors import ValidationFailed
from tickethub.services import schema_regex

Path = tuple[str, ...]

# Keywords whose value is one subschema, an array of them, or a map of them (all drafts).
_ONE = ("additionalItems", "additionalProperties", "contains", "contentSchema", "else", "if",
        "items", "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties")
_ARRAY = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAP = ("$defs", "definitions", "dependentSchemas", "patternProperties", "properties",
        "dependencies")
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
# Keywords that apply their subschemas to the same value (not to a part of it).
_IN_PLACE = frozenset({"allOf", "anyOf", "oneOf", "not", "if", "then", "else",
                       "dependentSchemas", "dependencies"})


def _refuse(uri: str) -> Resource[Any]:
    """The registry's only way to get a document it does not hold: refuse. Nothing a
    caller writes can make the hub fetch anything."""
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


OFFLINE: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]


def field_name(field: str, path: Path) -> str:
    return ".".join((field, *path))


def subschemas(node: dict[str, Any]) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The object subschemas directly under ``node``'s schema keywords."""
    for keyword in _ONE:
        value = node.get(keyword)
        if isinstance(value, dict):
            yield (keyword,), value
    for keyword in _ARRAY:
        value = node.get(keyword)
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, dict):
                    yield (keyword, str(index)), item
    for keyword in _MAP:
        value = node.get(keyword)
        if isinstance(value, dict):
            for name, item in value.items():
                if isinstance(item, dict):
                    yield (keyword, str(name)), item


def _check_patterns(node: dict[str, Any], field: str, path: Path) -> None:
    places: list[tuple[Path, Any]] = [((*path, "pattern"), node.get("pattern"))]
    patterns = node.get("patternProperties")
    if isinstance(patterns, dict):
        places += [((*path, "patternProperties", str(key)), key) for key in patterns]
    for place, pattern in places:
        if isinstance(pattern, str):
            try:
                schema_regex.compile_pattern(pattern)
            except schema_regex.BadPattern as exc:
                raise ValidationFailed(
                    f"the regular expression {pattern!r} is not supported: {exc} (the hub "
                    "matches with RE2: no back-references or look-around)",
                    field=field_name(field, place)) from None


def walk(schema: dict[str, Any], specification: Specification[Any], field: str,
         max_subschemas: int) -> set[str]:
    """Check ``schema`` (see the module doc); the keywords used anywhere in it."""
    resolver = OFFLINE.resolver_with_root(specification.create_resource(schema))
    seen: set[int] = set()
    paths: dict[int, Path] = {}
    in_place: dict[int, list[int]] = {}
    keywords: set[str] = set()
    stack: list[tuple[dict[str, Any], Path, Any]] = [(schema, (), resolver)]
    while stack:
        node, path, resolver = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        paths[id(node)] = path
        same_value = in_place[id(node)] = []
        if len(seen) > max_subschemas:
            raise ValidationFailed(f"the schema has more than {max_subschemas} subschemas",
                                   field=field_name(field, path))
        keywords.update(node)
        resolver = resolver.in_subresource(specification.create_resource(node))
        for keyword in _REFS:
            ref = node.get(keyword)
            if not isinstance(ref, str):
                continue
            place = field_name(field, (*path, keyword))
            if not ref.startswith("#"):
                raise ValidationFailed(
                    f"{ref!r} is not a local reference: a schema may only refer to its own "
                    "parts ('#/$defs/...'); the hub fetches nothing", field=place)
            try:
                resolved = resolver.lookup(ref)
            except Unresolvable:
                raise ValidationFailed(f"{ref!r} points to nothing in this schema",
                                       field=place) from None
            if isinstance(resolved.contents, dict):
                same_value.append(id(resolved.contents))
                stack.append((resolved.contents, (*path, keyword), resolved.resolver))
        _check_patterns(node, field, path)
        for where, sub in subschemas(node):
            if where[0] in _IN_PLACE:
                same_value.append(id(sub))
            stack.append((sub, (*path, *where), resolver))
    _check_expansion(id(schema), in_place, paths, field, max_subschemas)
    return keywords


def _check_expansion(root: int, in_place: dict[int, list[int]], paths: dict[int, Path],
                     field: str, limit: int) -> None:
    """Refuse references that make one value be checked against too many subschemas
    (``allOf`` of two refs to ``allOf`` of two refs ... doubles per level) or against the
    same subschema forever (a reference cycle that never steps into a part of the value).
    """
    cost: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[int, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            on_path.discard(node)
            cost[node] = 1 + sum(cost[child] for child in in_place[node])
            if cost[node] > limit:
                raise ValidationFailed(
                    f"its references expand to more than {limit} subschemas for one value",
                    field=field_name(field, paths[node]))
            continue
        if node in cost:
            continue
        on_path.add(node)
        stack.append((node, True))
        for child in in_place[node]:
            if child in on_path:
                raise ValidationFailed(
                    "a reference cycle that never steps into a part of the value",
                    field=field_name(field, paths[node]))
            if child not in cost:
                stack.append((child, False))


def deeper_than(value: Any, limit: int) -> Path | None:
    """The path to a place in ``value`` nested deeper than ``limit``, or ``None``."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return _path_below(value, limit)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return None


def _path_below(value: Any, limit: int) -> Path:
    """The path to the first place nested deeper than ``limit`` (there is one)."""
    stack: list[tuple[Any, Path]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if len(path) > limit:
            return path
        if isinstance(item, dict):
            stack.extend((v, (*path, str(k))) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, (*path, str(i))) for i, v in enumerate(item))
    raise AssertionError("nothing is nested that deep")
