"""Static verification of the SQL templates: each one is a single, scoped, bounded, read-only SELECT.

The check walks sqlglot's AST of the template text (dialect ``sqlite``). The AST is only inspected: the
provider always executes the original text, because regenerated SQL can differ in ways that matter to SQLite
(sqlglot drops a unary ``+``, which changes the query plan).

Rules (the names appear in ``TemplateViolation.rules`` and in error details; messages never carry SQL text),
one module each:

* ``rules_structure``: ``parse_error``, ``single_statement``, ``not_select``, ``unparsed_command``,
  ``forbidden_statement``, ``set_operation``: exactly one statement, a SELECT, with no
  UNION/INTERSECT/EXCEPT and no write, DDL, pragma, attach or transaction node anywhere (sqlglot's
  ``Command`` fallback counts as a violation); ``nested_with``, ``recursive_cte``, ``duplicate_cte``,
  ``cte_shadows_table``: one top-level, non-recursive WITH whose names do not hide a real table.
* ``rules_tables``: ``table_allowlist``, ``qualified_table``, ``alias_shadows_table``,
  ``table_function_argument``, ``nested_join``, ``implicit_join_columns``: only the index tables, the
  statement's CTEs and ``json_each(:param)``, joined with explicit ON conditions; ``function_allowlist``,
  ``star_projection``: only allow-listed functions; no ``*`` except in ``count(*)``.
* ``rules_params``: ``unnamed_placeholder``, ``parameter_syntax``, ``dollar_parameter``,
  ``undeclared_param``, ``unused_param``, ``duplicate_param``: only ``:name`` placeholders, exactly the
  declared ones.
* ``rules_scope``: ``scope_cte_missing``, ``scope_cte_shape``, ``scope_sources``, ``scope_roots``,
  ``scope_since``, ``scope_until``: the ``scope_sessions`` CTE reads ``sessions`` alone and has the four scope
  predicates as top-level conjuncts (``COALESCE(s.started_at, '') < :until`` is the upper time bound).
* ``rules_outer``: ``outer_source``, ``outer_scope_filter``, ``outer_until``, ``visibility``, ``is_meta``,
  ``limit_placeholder``, ``projection_subquery``: the outer SELECT reads only index tables,
  ``scope_sessions`` and CTEs that read nothing but ``json_each`` of parameters (the request's own values,
  such as each failure's session and time), keeps rows of scoped sessions only (a filter on a parameter
  CTE's column is none), keeps rows whose own time is before ``:until``
  only (``COALESCE(<row>.<time column>, '') < :until``), filters hidden and meta rows, is bounded by
  ``LIMIT :limit``, and computes its output columns from no other table.
* ``rules_columns``: ``qualified_column``, ``unresolved_column``, ``ambiguous_column``,
  ``column_not_in_needs``: every column of an index table that the template reads is declared in its
  ``needs`` header (the live schema check relies on that list).

``check`` runs them in that order; ``allowlists`` holds the names they allow or forbid, ``sqlast`` the lazily
imported AST and its helpers, ``context`` the state they share.

``ensure_verified`` accepts the templates whose digests ``sql_templates/verified.json`` lists (the verdicts
shipped with the package, made by ``tools/verify-templates``; see ``manifest``) without importing sqlglot, and
verifies any other template in memory. It writes nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from ...errors import TemplateRejected
from .check import check as _check
from .violations import TemplateViolation, Violation

if TYPE_CHECKING:
    from ..catalog import Template

__all__ = ["TemplateViolation", "Violation", "ensure_verified", "verify_sql", "verify_template"]


def verify_template(t: Template) -> None:
    """Raise ``TemplateViolation`` unless ``t`` is one scoped, bounded SELECT over declared columns."""
    _raise_if(_check(t.sql, declared_params=t.params, needs=t.needs))


def verify_sql(sql: str, *, declared_params: Sequence[str],
               needs: Collection[tuple[str, str]] | None = None) -> None:
    """The template rules for raw SQL. ``needs`` None skips the column-declaration rule."""
    _raise_if(_check(sql, declared_params=declared_params, needs=needs))


def _raise_if(violations: list[Violation]) -> None:
    if violations:
        raise TemplateViolation(violations)


def ensure_verified(templates: Sequence[Template], *, shipped: Collection[str]) -> None:
    """Accept every template whose digest is in ``shipped``; verify the others in memory, or raise
    ``TemplateRejected`` naming the template and the rules it broke (never its SQL)."""
    pending = [t for t in templates if t.digest not in shipped]
    failures: list[str] = []
    for t in pending:
        try:
            verify_template(t)
        except TemplateViolation as exc:
            failures.append(f"{t.id} v{t.version}: {', '.join(exc.rules)}")
        except ImportError:
            raise TemplateRejected("template verifier unavailable: sqlglot cannot be imported") from None
        except Exception:  # noqa: BLE001 - a verifier that cannot decide (e.g. a changed AST) rejects
            failures.append(f"{t.id} v{t.version}: verifier_error")
    if failures:
        raise TemplateRejected("template failed static verification: " + "; ".join(failures))
