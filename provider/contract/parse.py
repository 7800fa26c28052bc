"""Turn untrusted request bytes into a validated request, or a typed rejection.

The bytes are bounded before parsing, must be strict UTF-8, one JSON object without duplicate keys, nested no
deeper than the contract needs, and then validate strictly (``contract.wire``). Rejection details name contract
fields only; they never echo request content (an unknown key's name is request content, so it is not named).
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import MalformedJson, ProviderError, RequestTooLarge
from .wire import PING_SCHEMA, Request, validate_request

#: Largest request accepted, in bytes. A real request is well under 4 KiB.
MAX_REQUEST_BYTES = 64 * 1024
#: Deepest JSON nesting accepted. The contract needs 3 (request -> scope/limits/revision -> value -> list).
MAX_JSON_DEPTH = 8


class DuplicateKey(ValueError):
    """A JSON object repeats a key (``json.loads`` would keep the last value silently)."""


def object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook`` for untrusted JSON (the request, the config): a repeated key is
    :class:`DuplicateKey`, never a silent last-one-wins."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey
        out[key] = value
    return out


def _depth(raw: str) -> int:
    """Maximum bracket depth outside strings, computed without recursion."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in raw:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _reject_constant(_: str) -> Any:
    raise ValueError("NaN and Infinity are not JSON")


def load_json_object(raw: bytes) -> dict[str, Any]:
    """Parse request bytes into a dict, or raise a typed rejection."""
    if len(raw) > MAX_REQUEST_BYTES:
        raise RequestTooLarge
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        raise MalformedJson("request is not valid UTF-8") from None
    if _depth(text) > MAX_JSON_DEPTH:
        raise MalformedJson("request JSON is nested too deeply")
    try:
        value = json.loads(text, object_pairs_hook=object_without_duplicates, parse_constant=_reject_constant)
    except DuplicateKey:
        raise MalformedJson("request JSON repeats a key") from None
    except (ValueError, RecursionError):
        # ValueError also covers integers longer than Python's digit limit.
        raise MalformedJson from None
    if not isinstance(value, dict):
        raise MalformedJson("request JSON is not an object")
    try:  # a lone surrogate escape (a JSON \ud800) parses, but no UTF-8 text (digest, tokenizer, stdout) holds it
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise MalformedJson("request JSON holds a lone surrogate escape") from None
    return value


def parse_request(raw: bytes) -> Request:
    """Validate request bytes against the strict RFC v0 request contract (``contract.wire``)."""
    return validate_request(load_json_object(raw))


def is_ping(raw: bytes) -> bool:
    """True when ``raw`` is exactly the object ``{"schema_version": "provider_ping_v0"}`` (``serve --stdio``
    answers it with a ``provider_pong_v0`` line); anything else, a ping with another field included, is a
    request."""
    if PING_SCHEMA.encode() not in raw:
        return False
    try:
        return load_json_object(raw) == {"schema_version": PING_SCHEMA}
    except ProviderError:  # not one JSON object: a request, answered (and refused) as one
        return False
