"""The public, content-free receipt: counts, flags and keyed digests of the private result and its bases."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .._version import PROVIDER_ID
from ..contract.models import (
    HistoricalEvidenceReceiptV0,
    HistoricalEvidenceResultV0,
)
from ..digest import DigestKey


def result_json(result: HistoricalEvidenceResultV0) -> dict[str, Any]:
    return result.model_dump(mode="json", exclude_none=True)


def build_receipt(result: HistoricalEvidenceResultV0, *, scope_basis: dict[str, Any],
                  query_basis: dict[str, Any], key: DigestKey) -> HistoricalEvidenceReceiptV0:
    """The receipt of ``result``. Every digest is keyed with the install's key (``provider/digest.py``):
    ``scope_digest`` over the scope basis, ``query_digest`` over the query basis, ``result_digest`` over the
    result's JSON exactly as the envelope carries it, ``index_revision_digest`` over the index revision."""
    counts = Counter(item.evidence_type for item in result.items)
    return HistoricalEvidenceReceiptV0(
        schema_version="historical_evidence_receipt_v0",
        request_id=result.request_id,
        provider_id=PROVIDER_ID,
        provider_version=result.provider_version,
        index_revision_digest=key.of(result.index_revision),
        scope_digest=key.of(scope_basis),
        query_digest=key.of(query_basis),
        result_digest=key.of(result_json(result)),
        result_count=len(result.items),
        evidence_type_counts=dict(sorted(counts.items())),
        freshness=result.freshness,
        truncated=result.truncated,
        omitted_count=result.omitted_count,
        grants_new_action_authority=False,
        external_writes_performed=False,
        raw_content_captured=False,
    )
