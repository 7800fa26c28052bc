"""One error hierarchy for the whole provider.

Every error carries a stable ``code``, a ``retryable`` flag, the envelope ``outcome`` it maps to and a
content-free ``detail``. Details are fixed strings chosen by the raiser; they never contain request text,
query terms, snippets, paths or session refs. The CLI maps these once to the JSON envelope and exit code.
"""

from __future__ import annotations

from typing import ClassVar, Literal

Outcome = Literal["failed", "rejected", "internal"]


class ProviderError(Exception):
    """Base class. Subclasses set ``code``, ``outcome`` and ``retryable``."""

    code: ClassVar[str] = "internal_error"
    outcome: ClassVar[Outcome] = "internal"
    retryable: ClassVar[bool] = False
    default_detail: ClassVar[str] = "internal error"

    def __init__(self, detail: str | None = None) -> None:
        self.detail = detail if detail is not None else self.default_detail
        super().__init__(self.detail)


# --- rejections: the request is not acceptable (exit 2, no result, no receipt) ---------------------------


class RequestRejected(ProviderError):
    outcome: ClassVar[Outcome] = "rejected"
    code = "invalid_request"
    default_detail = "request does not match historical_evidence_request_v0"


class MalformedJson(RequestRejected):
    code = "malformed_json"
    default_detail = "request is not one well-formed UTF-8 JSON object"


class RequestTooLarge(RequestRejected):
    code = "request_too_large"
    default_detail = "request exceeds the provider's input size bound"


class UnknownField(RequestRejected):
    code = "unknown_field"
    default_detail = "request carries a field the contract does not define"


class InvalidRequest(RequestRejected):
    code = "invalid_request"


class CrossScopeRequested(RequestRejected):
    code = "cross_scope_requested"
    default_detail = "cross-agent or cross-project retrieval is not offered"


class TriggerNotAdmitted(RequestRejected):
    code = "trigger_not_admitted"
    default_detail = "trigger is not admitted at the enabled stage"


class NotEnabled(RequestRejected):
    code = "not_enabled"
    default_detail = "no enabled scope for this agent and project"


class ScopeMismatch(RequestRejected):
    code = "scope_mismatch"
    default_detail = "request scope does not match the enabled scope exactly"


class LimitOverCeiling(RequestRejected):
    code = "limit_over_ceiling"
    default_detail = "a request limit is above the provider ceiling"


class InvalidQueryTerms(RequestRejected):
    code = "invalid_query_terms"
    default_detail = "query terms are empty, too many, too long, or reduce to nothing"


class ConfigInvalid(RequestRejected):
    code = "config_invalid"
    default_detail = "provider configuration is unreadable or invalid"


# --- failures: the provider could not answer (exit 3, typed empty result) ------------------------------


class ProviderFailure(ProviderError):
    outcome: ClassVar[Outcome] = "failed"
    code = "provider_failure"
    default_detail = "provider could not answer"


class IndexMissing(ProviderFailure):
    code = "index_missing"
    default_detail = "the Obelisk index database does not exist"


class IndexUnreadable(ProviderFailure):
    code = "index_unreadable"
    default_detail = "the Obelisk index database could not be read"


class IndexBusy(ProviderFailure):
    code = "index_busy"
    retryable = True
    default_detail = "the Obelisk index stayed busy within the deadline"


class DeadlineExceeded(ProviderFailure):
    code = "timeout"
    retryable = True
    default_detail = "the request deadline expired"


class SchemaIncompatible(ProviderFailure):
    code = "schema_incompatible"
    default_detail = "the live index schema cannot be vouched for"


class ScopeViolation(ProviderFailure):
    code = "scope_violation"
    default_detail = "a returned row lies outside the requested scope"


class TemplateRejected(ProviderFailure):
    code = "template_rejected"
    default_detail = "a query template failed static verification"


class MalformedIndexData(ProviderFailure):
    code = "malformed_data"
    default_detail = "the index returned data the provider cannot interpret"


class OutputOversize(ProviderFailure):
    code = "oversize"
    default_detail = "the answer would exceed the provider's output ceiling"


class InternalError(ProviderError):
    code = "internal_error"


#: Every error code, in README order. Tests check the README table against this.
ERROR_CODES: dict[str, type[ProviderError]] = {
    cls.code: cls
    for cls in (
        MalformedJson, RequestTooLarge, UnknownField, InvalidRequest, CrossScopeRequested,
        TriggerNotAdmitted, NotEnabled, ScopeMismatch, LimitOverCeiling, InvalidQueryTerms, ConfigInvalid,
        IndexMissing, IndexUnreadable, IndexBusy, DeadlineExceeded, SchemaIncompatible, ScopeViolation,
        TemplateRejected, MalformedIndexData, OutputOversize, InternalError,
    )
}

EXIT_CODES: dict[str, int] = {"ok": 0, "internal": 1, "rejected": 2, "failed": 3}

#: The refusal codes of ``enable`` and ``disable``. They answer with a JSON line of their own
#: (``{"ok": false, "error": {"code": ..., "detail": ...}}``), not a query envelope, so these codes are not
#: in :data:`ERROR_CODES`; they are as stable (an operator's script may branch on them).
LIFECYCLE_CODES: dict[str, str] = {
    "invalid_argument": "an id, source, root or stage is malformed",
    "root_not_directory": "a --root is not an existing directory",
    "root_too_broad": "a --root is /, the home directory or contains it, or holds another git repository or a "
                      "worktree of one (--allow-broad-root, never for /)",
    "root_too_large": "a --root holds more entries than enable looks at, so whether it holds another "
                      "repository cannot be told (--allow-broad-root)",
    "root_overlaps_scope": "a bound root is, contains or lies in a root of another enabled scope with a "
                           "common source: both would read the same sessions (--allow-shared-root)",
    "unknown_source": "a --source the index does not know (--allow-unknown-source)",
    "already_enabled": "the same agent, project and repository are enabled (--replace)",
    "qualification_required": "--stage 2 without a qualification report, or a report that does not qualify "
                              "this scope",
    "not_enabled": "disable: nothing enabled for these ids",
    "config_invalid": "the provider configuration or its digest key cannot be read or is not private (the detail "
                      "gives status's fix); the configuration was left unchanged",
    "config_write_failed": "the provider configuration or its digest key could not be written",
}


# --- operator commands only (never in a response envelope, so not in ERROR_CODES) -----------------------


class UnsafeWriteTarget(ProviderError, OSError):
    """A file an operator command writes (``demo``'s sample request, a ``qualify`` report, the config, the
    digest key) is already there as a symbolic link or as something other than a regular file: nothing is
    written through it (``provider/outputs.py``). Printed as ``{"ok": false, "error": {code, detail}}``; also
    an ``OSError``, so a writer that already reports a failed write (``enable``) reports this one too."""

    outcome: ClassVar[Outcome] = "rejected"
    code = "unsafe_write_target"
    default_detail = "a file to write is a symbolic link or not a regular file: refused; remove it"


class DemoFolderInUse(ProviderError):
    """``demo --dir`` names a folder that is not an earlier demo's and already holds a name the demo writes (its
    index, ``home``, manifest, config, key or sample request), or is not a folder: nothing is written or removed
    there (``provider/commands/demo.py``)."""

    outcome: ClassVar[Outcome] = "rejected"
    code = "demo_folder_in_use"
    default_detail = ("the demo folder holds files no earlier demo wrote under the names the demo writes: refused, "
                      "nothing was written or removed; give --dir a new or empty folder")
