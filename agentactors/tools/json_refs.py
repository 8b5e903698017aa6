"""Local ``$ref``\\ s of a JSON Schema inlined: one self-contained schema, no ``$defs``.

Vendors take ``$ref`` unevenly (Gemini's tool schemas not at all, strict modes with limits), and a schema
nested inside another — a pydantic model's ``model_json_schema()`` as one tool parameter — would point its
``#/$defs/...`` at the wrong root.  Inlining makes every schema this package builds or sends self-contained.
A recursive reference cannot be inlined: it is refused, naming the cycle.

Validating against a schema that keeps its references (a ``ToolSpec``'s, an MCP server's) looks them up in the
schema alone: :func:`no_retrieval_registry` is the registry the validator is built with (nothing is ever
fetched), and :func:`check_refs_resolve` looks every reference up when the validator is built, so that none can
fail a call later.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote

__all__ = ["check_refs_resolve", "inline_refs", "no_retrieval_registry", "pointed_at"]

_MAX_DEPTH = 64
# Keywords whose values are data, not schemas: never walked for references.
_DATA = frozenset({"enum", "const", "default", "examples"})


def inline_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by what it points at, and ``$defs`` dropped.

    :raises ValueError: a reference that is recursive, external or points at nothing.
    """
    root = schema

    def resolve(ref: str, seen: tuple[str, ...]) -> Any:
        if not ref.startswith("#/"):
            raise ValueError(f"$ref {ref!r} is not a local reference; only '#/...' references can be inlined")
        if ref in seen:
            raise ValueError(f"$ref {ref!r} refers to itself ({' -> '.join((*seen, ref))}): a recursive "
                             "schema cannot be inlined")
        try:
            node = pointed_at(root, ref)
        except LookupError:
            raise ValueError(f"$ref {ref!r} points at nothing in the schema") from None
        return walk(node, (*seen, ref), 0)

    def walk(node: Any, seen: tuple[str, ...], depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise ValueError("the schema is nested deeper than 64 levels")
        if isinstance(node, list):
            return [walk(v, seen, depth + 1) for v in node]
        if not isinstance(node, Mapping):
            return node
        if isinstance(node.get("$ref"), str):
            target = resolve(node["$ref"], seen)
            extra = {k: v for k, v in node.items() if k not in ("$ref", "$defs", "definitions")}
            extra = walk(extra, seen, depth + 1) if extra else {}
            return {**target, **extra} if isinstance(target, dict) else target
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$defs", "definitions"):
                continue
            if key in _DATA:
                out[key] = value
            elif key in ("properties", "patternProperties") and isinstance(value, Mapping):
                # A map of names to schemas: the names are data (a property may be called "enum").
                out[key] = {name: walk(sub, seen, depth + 1) for name, sub in value.items()}
            else:
                out[key] = walk(value, seen, depth + 1)
        return out

    out = walk(schema, (), 0)
    return out if isinstance(out, dict) else {}


def pointed_at(root: Any, ref: str) -> Any:
    """What the local reference ``ref`` points at in ``root``: ``"#"`` is ``root`` itself, ``"#/a/0/b"`` a JSON
    pointer (RFC 6901) in a URI fragment — percent-decoded, ``~1`` and ``~0`` unescaped, an array's items by
    index — as a validator reads it (``check_refs_resolve``).  The one reading for every place that follows a
    reference by hand (inlining, a vendor's schema dialect, a served request's schema, nulls): a schema the
    validator takes must not be refused, nor read differently, when it is sent.

    :raises LookupError: ``ref`` is not local (``"#..."``), its fragment is not a pointer, or it points at nothing.
    """
    if not ref.startswith("#"):
        raise LookupError(f"$ref {ref[:100]!r} is not a local reference ('#/...')")
    pointer = unquote(ref[1:])
    if not pointer:
        return root
    if not pointer.startswith("/"):
        raise LookupError(f"$ref {ref[:100]!r} is not a JSON pointer")
    node = root
    for token in pointer[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif (isinstance(node, list) and token.isascii() and token.isdigit() and (token == "0" or token[0] != "0")
              and int(token) < len(node)):
            node = node[int(token)]
        else:
            raise LookupError(f"$ref {ref[:100]!r} points at nothing in the schema")
    return node


# -- resolving references without fetching anything --------------------------------------------------------

#: Keywords whose value is a string compared to a reference: the ones a validator looks up.
_REFERENCE_KEYWORDS: Final = ("$ref", "$dynamicRef")


def _refuse_retrieval(uri: str) -> Any:
    """The registry's ``retrieve``: a schema is looked up in itself only, never fetched from where it points."""
    raise LookupError(f"{uri} is not part of the schema; nothing is fetched")


def no_retrieval_registry() -> Any:
    """A ``referencing.Registry`` that never retrieves: what a validator of a schema someone else wrote is built with.

    ``jsonschema``'s default registry *fetches* a remote ``$ref`` (``urlopen``, synchronously, wherever the
    schema's author pointed it: a cloud metadata address, an internal host); this one turns every reference
    outside the schema (and the JSON Schema meta-schemas, which ``jsonschema`` adds itself) into an error.
    """
    from referencing import Registry

    return Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


def check_refs_resolve(schema: Any) -> None:
    """Look every ``$ref`` and ``$dynamicRef`` of ``schema`` up, now, as the validator would at a call.

    The walk is ``referencing``'s own (the subschemas of the keywords the validator applies, the base URI moved
    by each ``$id``), so a reference inside data (``const``, ``enum``, ``default``) or a property *named*
    ``$ref`` is not taken for one.  Nothing is retrieved: a reference resolves within the schema (or to a JSON
    Schema meta-schema) or not at all.  Iterative: the depth is the schema author's to choose.

    :raises ValueError: the first reference that does not resolve, named.
    """
    if not isinstance(schema, Mapping):
        return  # true / false: nothing to refer to
    try:
        text = json.dumps(schema, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = None  # walked below all the same
    if text is not None and '"$ref"' not in text and '"$dynamicRef"' not in text:
        return  # the common case: nothing to look up
    from jsonschema_specifications import REGISTRY as SPECIFICATIONS  # type: ignore[import-untyped]
    from referencing.jsonschema import DRAFT202012

    try:
        root = DRAFT202012.create_resource(schema)
        base = root.id() or ""
        registry = SPECIFICATIONS.combine(no_retrieval_registry()).with_resource(base, root).crawl()
        resolver = registry.resolver(base_uri=base)
    except Exception as exc:  # a malformed $id or $anchor: the meta-schema check has passed it, so name it here
        raise ValueError(f"its $id or $anchor cannot be read ({type(exc).__name__}: {exc})") from None
    stack: list[tuple[Any, Any]] = [(schema, resolver)]
    while stack:
        node, at = stack.pop()
        if not isinstance(node, Mapping):
            continue
        resource = DRAFT202012.create_resource(node)
        at = at.in_subresource(resource)
        for keyword in _REFERENCE_KEYWORDS:
            ref = node.get(keyword)
            if isinstance(ref, str):
                try:
                    at.lookup(ref)
                except Exception:  # Unresolvable, Unretrievable (a KeyError), a malformed URI: all "does not"
                    shown = ref if len(ref) <= 200 else ref[:199] + "…"
                    raise ValueError(
                        f"its {keyword} {shown!r} does not resolve within the schema (nothing is fetched)"
                    ) from None
        stack.extend((sub, at) for sub in DRAFT202012.subresources_of(node))
