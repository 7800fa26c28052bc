"""``serve --stdio``'s ping: who answers, which versions it speaks, and the ceilings a request meets.

A line holding exactly ``{"schema_version": "provider_ping_v0"}`` is answered with one ``provider_pong_v0`` line
(``contract.documents.ProviderPongV0``) instead of an envelope, so a caller can check the process is alive and
speaks its versions without sending a request. The reply is content-free: versions, request and response schema
names, the request size bound, whether the config (and, once a scope is enabled, its digest key) can be read, and
the deadline and ceilings in effect; never a path, scope or id of the config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._version import CONTRACT_VERSION, PROVIDER_ID, PROVIDER_VERSION
from ..admission.config import load_config
from ..contract.parse import MAX_REQUEST_BYTES
from ..contract.wire import PONG_SCHEMA, REQUEST_SCHEMA, RESPONSE_SCHEMA, SCHEMAS_VERSION
from ..digest import load_key
from ..errors import ConfigInvalid

__all__ = ["pong"]


def pong(config_path: Path, *, must_exist: bool) -> dict[str, Any]:
    """The ``provider_pong_v0`` document for a process reading ``config_path``."""
    try:
        config = load_config(config_path, must_exist=must_exist)
        if config.scopes:  # a request for an enabled scope needs the key its receipt is signed with
            load_key(config_path)
    except ConfigInvalid:
        config = None
    return {
        "schema_version": PONG_SCHEMA,
        "provider_id": PROVIDER_ID,
        "provider_version": PROVIDER_VERSION,
        "contract_version": CONTRACT_VERSION,
        "schemas_version": SCHEMAS_VERSION,
        "request_schema_versions": [REQUEST_SCHEMA],
        "response_schema_version": RESPONSE_SCHEMA,
        "max_request_bytes": MAX_REQUEST_BYTES,
        "config_valid": config is not None,
        "deadline_ms": config.deadline_ms if config else None,
        "ceilings": config.ceilings._asdict() if config else None,
    }
