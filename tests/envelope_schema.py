"""Validate response envelopes against the exported JSON Schema (the ``schema`` command) with ``jsonschema``.

``tests/conftest.py`` routes every :func:`obelisk_session_evidence.service.answer` call of the suite, and every
envelope a CLI subprocess prints through ``run_cli``, through :func:`check_envelope`; a test that produces an
envelope the schema refuses fails there. :data:`CHECKED` counts them (the terminal summary prints it).
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from obelisk_session_evidence.contract.models import export_json_schema
from obelisk_session_evidence.contract.wire import RESPONSE_SCHEMA

#: Envelopes validated in this process, by outcome and error code.
CHECKED: Counter[str] = Counter()


@cache
def validators() -> dict[str, Draft202012Validator]:
    out = {}
    for name, schema in export_json_schema().items():
        Draft202012Validator.check_schema(schema)
        out[name] = Draft202012Validator(schema)
    return out


def problems(name: str, document: Any) -> list[str]:
    """Every schema violation of ``document`` against the exported schema ``name``, as short texts."""
    return [f"{'/'.join(str(p) for p in err.absolute_path)}: {err.message[:200]}"
            for err in validators()[name].iter_errors(document)]


def check_envelope(envelope: Any) -> None:
    found = problems(RESPONSE_SCHEMA, envelope)
    assert not found, f"envelope does not validate against the exported schema: {found[:5]}"
    error = envelope.get("error") if isinstance(envelope, dict) else None
    CHECKED[f"{envelope['outcome']}:{error['code'] if error else '-'}"] += 1
