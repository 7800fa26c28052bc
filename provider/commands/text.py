"""The ``--format text`` view of a command's JSON document: the same document, as indented ``key: value`` lines.

``--format json`` and ``--format text`` mean the same for every command that prints a document: ``json`` is the
document itself (one JSON value, the schema's), ``text`` is that document for a person at a terminal. ``status``
and ``check-schema`` have views of their own (they add the local paths the JSON leaves out); the other commands
print this rendering of their JSON, so the text says nothing the JSON does not. Control characters are shown
escaped, never interpreted.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["render_document"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _scalar(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", str(value))


def _lines(value: Any, indent: str) -> list[str]:
    out: list[str] = []
    for key, item in value.items():
        label = f"{indent}{_scalar(key)}:"
        if isinstance(item, dict) and item:
            out.append(label)
            out.extend(_lines(item, indent + "  "))
        elif isinstance(item, list) and any(isinstance(x, (dict, list)) for x in item):
            out.append(label)
            for element in item:
                nested = _lines(element, indent + "    ") if isinstance(element, dict) else [
                    indent + "    " + _scalar(json.dumps(element))]
                out.append(indent + "  - " + nested[0].lstrip() if nested else indent + "  -")
                out.extend(nested[1:])
        elif isinstance(item, (list, dict)):
            out.append(f"{label} {', '.join(_scalar(x) for x in item) or 'none'}")
        else:
            out.append(f"{label} {_scalar(item)}")
    return out


def render_document(document: Any) -> str:
    """``document`` (a JSON object, or any JSON value) as text lines, ending with a newline."""
    if not isinstance(document, dict):
        return _scalar(json.dumps(document, ensure_ascii=False)) + "\n"
    return "\n".join(_lines(document, "")) + "\n"
