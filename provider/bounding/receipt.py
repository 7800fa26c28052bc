"""Digests over canonical JSON, and the public, content-free receipt."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

from ..contract.models import (
    HistoricalEvidenceReceiptV0,
    HistoricalEvidenceResultV0,
)


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no insignificant whitespace, UTF-8: the same value always gives the same bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def result_json(result: HistoricalEvidenceResultV0) -> dict[str, Any]:
    return result.model_dump(mode="json", exclude_none=True)


def build_receipt(result: HistoricalEvidenceResultV0, *, scope_basis: dict[str, Any],
                  query_basis: dict[str, Any]) -> HistoricalEvidenceReceiptV0:
    counts = Counter(item.evidence_type for item in result.items)
    return HistoricalEvidenceReceiptV0(
        schema_version="historical_evidence_receipt_v0",
        request_id=result.request_id,
        provider_id="obelisk-session-evidence",
        provider_version=result.provider_version,
        index_revision_digest=digest(result.index_revision),
        scope_digest=digest(scope_basis),
        query_digest=digest(query_basis),
        result_digest=digest(result_json(result)),
        result_count=len(result.items),
        evidence_type_counts=dict(sorted(counts.items())),
        freshness=result.freshness,
        truncated=result.truncated,
        omitted_count=result.omitted_count,
        grants_new_action_authority=False,
        external_writes_performed=False,
        raw_content_captured=False,
    )
