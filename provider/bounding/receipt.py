"""The private result and the public, content-free receipt, as the wire documents the envelope carries.

Both are built as plain JSON values (``contract.models`` is their schema of record; every envelope the test
suite produces is validated against it). The receipt holds counts, flags and keyed digests only.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .._version import PROVIDER_ID, PROVIDER_VERSION
from ..contract.meta import ProviderMeta
from ..contract.wire import RECEIPT_SCHEMA, RESPONSE_SCHEMA, RESULT_SCHEMA, EvidenceItem, Freshness
from ..digest import DigestKey
from ..errors import ProviderError


def build_result(*, request_id: str, index_revision: str, agent_id: str, project_id: str, repository_id: str,
                 freshness: Freshness, items: Sequence[EvidenceItem], truncated: bool,
                 omitted_count: int) -> dict[str, Any]:
    """``historical_evidence_result_v0``, fields in the contract's order (optional fields absent, never null)."""
    return {
        "schema_version": RESULT_SCHEMA,
        "request_id": request_id,
        "provider_id": PROVIDER_ID,
        "provider_version": PROVIDER_VERSION,
        "index_revision": index_revision,
        "scope_applied": {"agent_id": agent_id, "project_id": project_id, "repository_id": repository_id,
                          "cross_agent_used": False},
        "freshness": freshness,
        "items": [item.as_dict() for item in items],
        "truncated": truncated,
        "omitted_count": omitted_count,
    }


def build_receipt(result: dict[str, Any], *, scope_basis: dict[str, Any],
                  query_basis: dict[str, Any], key: DigestKey) -> dict[str, Any]:
    """The receipt of ``result``. Every digest is keyed with the install's key (``provider/digest.py``):
    ``scope_digest`` over the scope basis, ``query_digest`` over the query basis, ``result_digest`` over the
    result's JSON exactly as the envelope carries it, ``index_revision_digest`` over the index revision."""
    items = result["items"]
    counts = Counter(str(item["evidence_type"]) for item in items)
    return {
        "schema_version": RECEIPT_SCHEMA,
        "request_id": result["request_id"],
        "provider_id": PROVIDER_ID,
        "provider_version": result["provider_version"],
        "index_revision_digest": key.of(result["index_revision"]),
        "scope_digest": key.of(scope_basis),
        "query_digest": key.of(query_basis),
        "result_digest": key.of(result),
        "result_count": len(items),
        "evidence_type_counts": dict(sorted(counts.items())),
        "freshness": result["freshness"],
        "truncated": result["truncated"],
        "omitted_count": result["omitted_count"],
        "grants_new_action_authority": False,
        "external_writes_performed": False,
        "raw_content_captured": False,
    }


def build_envelope(request_id: str | None, outcome: str, *, error: ProviderError | None = None,
                   result: dict[str, Any] | None = None, receipt: dict[str, Any] | None = None,
                   meta: ProviderMeta | None = None) -> dict[str, Any]:
    """``historical_evidence_response_v0``: the one document every answer is (``schemas/``)."""
    return {
        "schema_version": RESPONSE_SCHEMA,
        "request_id": request_id,
        "outcome": outcome,
        "error": None if error is None else {"code": error.code, "retryable": error.retryable,
                                             "detail": error.detail},
        "result": result,
        "receipt": receipt,
        "provider_meta": dict(meta) if meta else {},
    }


#: Characters the CLI writes escaped so that one envelope is one line: at most four
#: bytes more each than their UTF-8.
_LINE_BREAKS = ("\u2028", "\u2029", "\u0085")


def envelope_bytes(envelope: dict[str, Any]) -> int:
    """At least the bytes of the line the CLI writes for ``envelope`` (compact JSON, UTF-8)."""
    text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8", "surrogatepass")) + 4 * sum(text.count(ch) for ch in _LINE_BREAKS)
