"""TypeScript declarations of the shipped JSON Schemas (``schema --format typescript``).

The schemas are the source: each document becomes an exported type named as ``contract.models.DOCUMENTS`` names
it, each ``$defs`` entry an exported type of its own name (one name, one shape: a name defined twice differently
is an error, never a silent pick), and the enumerations integrators branch on (degradations, unknown reasons,
error codes) become named unions. The renderer knows only the JSON Schema that pydantic emits for these models
(objects, arrays, enums, consts, ``anyOf``, ``$ref``, maps with ``additionalProperties``/``propertyNames``) and
refuses any other keyword that constrains a type rather than guess. It is written here, not taken from
``json-schema-to-typescript``, because that is a Node tool and the provider prints its declarations without Node;
``tests/integration/test_surface.py`` compiles the output with ``tsc --strict`` against real outputs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

#: Keywords that document or bound a value but do not change its TypeScript type.
_IGNORED = frozenset({"title", "description", "default", "minimum", "maximum", "exclusiveMinimum",
                      "exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems", "examples",
                      "$schema", "$id", "version", "$defs", "format", "uniqueItems"})
#: Keywords the renderer turns into types.
_TYPED = frozenset({"type", "properties", "required", "additionalProperties", "propertyNames", "items", "enum",
                    "const", "anyOf", "$ref"})
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_PRIMITIVES = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}


class UnsupportedSchema(ValueError):
    """A schema uses a keyword or shape the renderer does not translate."""


def _literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _union(parts: Sequence[str]) -> str:
    unique = list(dict.fromkeys(parts))
    return unique[0] if len(unique) == 1 else " | ".join(f"({p})" if " | " in p else p for p in unique)


def _key(name: str) -> str:
    return name if _IDENTIFIER.match(name) else _literal(name)


def _comment(text: str | None, indent: str) -> str:
    if not text:
        return ""
    lines = text.replace("``", "`").replace("*/", "*\\/").strip().splitlines()
    if len(lines) == 1:
        return f"{indent}/** {lines[0]} */\n"
    return f"{indent}/**\n" + "".join(f"{indent} * {line}".rstrip() + "\n" for line in lines) + f"{indent} */\n"


def _ref_name(ref: str) -> str:
    if not ref.startswith("#/$defs/"):
        raise UnsupportedSchema(f"$ref {ref!r} is not a local definition")
    return ref.removeprefix("#/$defs/")


def _type(schema: Mapping[str, Any], indent: str) -> str:
    """The TypeScript type of one schema node."""
    unknown = set(schema) - _IGNORED - _TYPED
    if unknown:
        raise UnsupportedSchema(f"keywords not translated: {sorted(unknown)}")
    if "$ref" in schema:
        return _ref_name(schema["$ref"])
    if "anyOf" in schema:
        return _union([_type(option, indent) for option in schema["anyOf"]])
    if "const" in schema:
        return _literal(schema["const"])
    if "enum" in schema:
        return _union([_literal(value) for value in schema["enum"]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([_type({**schema, "type": k}, indent) for k in kind])
    if kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    if kind == "array":
        if "items" not in schema:
            raise UnsupportedSchema("an array without items")
        return f"Array<{_type(schema['items'], indent)}>"
    if kind == "object":
        return _object(schema, indent)
    raise UnsupportedSchema(f"type {kind!r}")


def _object(schema: Mapping[str, Any], indent: str) -> str:
    properties: Mapping[str, Any] = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    if not properties:
        if extra is False:
            return "Record<string, never>"
        value = "unknown" if extra is True else _type(extra, indent)
        names = schema.get("propertyNames")
        if names is not None:
            if set(names) != {"enum"}:
                raise UnsupportedSchema("propertyNames other than an enum")
            return f"{{ [key in {_union([_literal(n) for n in names['enum']])}]?: {value} }}"
        return f"{{ [key: string]: {value} }}"
    if extra is not False:
        raise UnsupportedSchema("an object with properties that is not closed (additionalProperties: false)")
    required = set(schema.get("required", ()))
    inner = indent + "  "
    lines = []
    for name, prop in properties.items():
        optional = "" if name in required else "?"
        lines.append(_comment(prop.get("description"), inner) + f"{inner}{_key(name)}{optional}: "
                     f"{_type(prop, inner)};\n")
    return "{\n" + "".join(lines) + indent + "}"


def _declaration(name: str, schema: Mapping[str, Any]) -> str:
    return _comment(schema.get("description"), "") + f"export type {name} = {_type(schema, '')};\n"


def render_declarations(schemas: Mapping[str, Mapping[str, Any]], type_names: Mapping[str, str],
                        unions: Mapping[str, Sequence[str]], *, header: str) -> str:
    """One ``.d.ts`` text: every document (``schemas`` by name, typed as ``type_names`` says), every definition
    they share, and the named string ``unions``."""
    out = [header]
    defined: dict[str, str] = {}

    def define(name: str, text: str) -> None:
        body = text.split("export type", 1)[1]
        if name in defined:
            if defined[name].split("export type", 1)[1] != body:
                raise UnsupportedSchema(f"type {name} is defined twice with different shapes")
            return
        defined[name] = text

    for doc_name, schema in schemas.items():
        define(type_names[doc_name], _declaration(type_names[doc_name], schema))
    for schema in schemas.values():
        for def_name, definition in schema.get("$defs", {}).items():
            define(def_name, _declaration(def_name, definition))
    out.extend(defined.values())
    out.extend(f"export type {name} = {_union([_literal(v) for v in values])};\n" for name, values in unions.items())
    return "\n".join(out)
