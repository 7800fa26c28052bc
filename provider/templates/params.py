"""Values bound to the templates' shared parameters, so every reader binds them the same way."""

import json
from collections.abc import Mapping
from typing import Any

from ..paths import Roots
from .catalog import Template

#: ``:until`` of a normal request: above every ISO-8601 time, so the upper time bound excludes nothing. A
#: replay (provider/commands/qualify/replay/) binds the moment it replays instead: rows at or after it are not read.
NO_UPPER_BOUND = "\U0010ffff"


def roots_json(roots: Roots) -> str:
    """Every spelling of the bound roots (given and real) as the templates' ``:roots`` parameter.

    The SQL match is lexical, so both spellings are bound; the real paths then decide (the scope set,
    ``check_scope``). Spellings are lexically normalised: no trailing slash, ``/`` stays ``/``.
    """
    return json.dumps(list(roots.spellings))


def bind(template: Template, values: Mapping[str, Any]) -> dict[str, Any]:
    """The values of ``template``'s declared parameters, by name (every one must be given)."""
    return {name: values[name] for name in template.params}
