"""The allow-list authorizer (``index.guard.authorizer``) as a plain function fed the action codes of facts §2.5:
the reference FTS query's actions are allowed, every write-side or escape action is denied, and no input gets
``SQLITE_IGNORE`` (statements through the provider's own connection: tests/integration/test_guard.py)."""

from __future__ import annotations

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.index.guard import authorizer

OK, DENY, IGNORE = apsw.SQLITE_OK, apsw.SQLITE_DENY, apsw.SQLITE_IGNORE


#: The action list facts §2.5 recorded for the reference MATCH + bm25() + snippet() + join query, plus the
#: highlight()/rank additions it names.
REFERENCE_ACTIONS: list[tuple[int, str | None, str | None, str | None, str | None]] = [
    (apsw.SQLITE_SELECT, None, None, None, None),
    (apsw.SQLITE_READ, "messages_fts", "messages_fts", "main", None),
    (apsw.SQLITE_READ, "messages_fts", "ROWID", "main", None),
    (apsw.SQLITE_READ, "messages_fts", "rank", "main", None),
    (apsw.SQLITE_READ, "messages", "uuid", "main", None),
    (apsw.SQLITE_READ, "messages", "ROWID", "main", None),
    (apsw.SQLITE_READ, "messages", "session_id", "main", None),
    (apsw.SQLITE_READ, "messages", "text", "main", None),
    (apsw.SQLITE_READ, "sessions", "id", "main", None),
    (apsw.SQLITE_READ, "sessions", "project_path", "main", None),
    (apsw.SQLITE_READ, "sessions", "source", "main", None),
    (apsw.SQLITE_READ, "messages_fts_config", "k", "main", None),
    (apsw.SQLITE_READ, "messages_fts_config", "v", "main", None),
    (apsw.SQLITE_READ, "messages_fts_idx", "segid", "main", None),
    (apsw.SQLITE_READ, "messages_fts_idx", "term", "main", None),
    (apsw.SQLITE_READ, "messages_fts_idx", "pgno", "main", None),
    (apsw.SQLITE_READ, "messages_fts_docsize", "id", "main", None),
    (apsw.SQLITE_READ, "messages_fts_docsize", "sz", "main", None),
    (apsw.SQLITE_FUNCTION, None, "bm25", None, None),
    (apsw.SQLITE_FUNCTION, None, "snippet", None, None),
    (apsw.SQLITE_FUNCTION, None, "match", None, None),
    (apsw.SQLITE_FUNCTION, None, "highlight", None, None),
    (apsw.SQLITE_PRAGMA, "data_version", None, "main", None),
]


@pytest.mark.parametrize("action", REFERENCE_ACTIONS, ids=lambda a: f"{apsw.mapping_authorizer_function[a[0]]}"
                         f"-{a[1]}-{a[2]}")
def test_reference_fts_actions_are_allowed(action: tuple[int, str | None, str | None, str | None, str | None]
                                           ) -> None:
    assert authorizer(*action) == OK


DENIED_ACTIONS: list[tuple[int, str | None, str | None, str | None, str | None]] = [
    (apsw.SQLITE_ATTACH, ":memory:", None, None, None),
    (apsw.SQLITE_ATTACH, "/tmp/x.sqlite", None, None, None),
    (apsw.SQLITE_DETACH, "aux", None, None, None),
    (apsw.SQLITE_CREATE_TEMP_TABLE, "t", None, "temp", None),
    (apsw.SQLITE_CREATE_TEMP_VIEW, "v", None, "temp", None),
    (apsw.SQLITE_CREATE_TEMP_TRIGGER, "tr", "sessions", "temp", None),
    (apsw.SQLITE_CREATE_TEMP_INDEX, "i", "t", "temp", None),
    (apsw.SQLITE_CREATE_TABLE, "t", None, "main", None),
    (apsw.SQLITE_CREATE_VTABLE, "v", "fts5", "main", None),
    (apsw.SQLITE_DROP_TABLE, "sessions", None, "main", None),
    (apsw.SQLITE_INSERT, "sessions", None, "main", None),
    (apsw.SQLITE_INSERT, "messages_fts", None, "main", None),
    (apsw.SQLITE_UPDATE, "sessions", "title", "main", None),
    (apsw.SQLITE_UPDATE, "sqlite_master", "sql", "main", None),
    (apsw.SQLITE_DELETE, "index_state", None, "main", None),
    (apsw.SQLITE_ALTER_TABLE, "main", "sessions", None, None),
    (apsw.SQLITE_REINDEX, None, None, None, None),
    (apsw.SQLITE_ANALYZE, "sessions", None, "main", None),
    (apsw.SQLITE_SAVEPOINT, "BEGIN", "s1", None, None),
    (apsw.SQLITE_TRANSACTION, "SAVEPOINT", None, None, None),
    (apsw.SQLITE_PRAGMA, "writable_schema", "ON", "main", None),
    (apsw.SQLITE_PRAGMA, "wal_checkpoint", "TRUNCATE", "main", None),
    (apsw.SQLITE_PRAGMA, "wal_checkpoint", "PASSIVE", "main", None),
    (apsw.SQLITE_PRAGMA, "wal_checkpoint", None, "main", None),
    (apsw.SQLITE_PRAGMA, "journal_mode", "DELETE", "main", None),
    (apsw.SQLITE_PRAGMA, "query_only", "OFF", None, None),
    (apsw.SQLITE_PRAGMA, "temp_store", "FILE", None, None),
    (apsw.SQLITE_PRAGMA, "user_version", "5", "main", None),
    (apsw.SQLITE_PRAGMA, "data_version", "1", "main", None),
    (apsw.SQLITE_PRAGMA, "mmap_size", "1000000", None, None),
    (apsw.SQLITE_FUNCTION, None, "load_extension", None, None),
    (apsw.SQLITE_FUNCTION, None, "fts5", None, None),
    (apsw.SQLITE_FUNCTION, None, "readfile", None, None),
    (apsw.SQLITE_FUNCTION, None, "writefile", None, None),
    (apsw.SQLITE_FUNCTION, None, "sqlite_offset", None, None),
    (apsw.SQLITE_READ, "dbstat", "name", "main", None),
    (apsw.SQLITE_READ, "sqlite_dbpage", "data", "main", None),
    (apsw.SQLITE_READ, "sqlite_temp_master", "sql", "temp", None),
    (apsw.SQLITE_READ, "sessions", "id", "temp", None),
    (apsw.SQLITE_READ, "sessions", "id", "aux", None),
]


@pytest.mark.parametrize("action", DENIED_ACTIONS, ids=lambda a: f"{apsw.mapping_authorizer_function[a[0]]}"
                         f"-{a[1]}-{a[2]}")
def test_denied_actions(action: tuple[int, str | None, str | None, str | None, str | None]) -> None:
    assert authorizer(*action) == DENY


ALL_ACTIONS = sorted(v for k, v in apsw.mapping_authorizer_function.items() if isinstance(k, str))


_READ_SIDE = {apsw.SQLITE_SELECT, apsw.SQLITE_READ, apsw.SQLITE_FUNCTION, apsw.SQLITE_PRAGMA,
              apsw.SQLITE_TRANSACTION}


_names = st.one_of(st.none(), st.sampled_from(["main", "temp", "aux", "sessions", "messages_fts", "data_version",
                                                 "ON", "OFF", "BEGIN", "COMMIT", "match", "ROWID", ""]),
                   st.text(max_size=12))


@settings(max_examples=3000, deadline=None)
@given(action=st.one_of(st.sampled_from(ALL_ACTIONS), st.integers(min_value=-5, max_value=200)),
       arg1=_names, arg2=_names, dbname=_names, trigger=_names)
def test_authorizer_never_ignores(action: int, arg1: str | None, arg2: str | None, dbname: str | None,
                                  trigger: str | None) -> None:
    verdict = authorizer(action, arg1, arg2, dbname, trigger)
    assert verdict in (OK, DENY)
    assert verdict != IGNORE
    if action not in _READ_SIDE:
        assert verdict == DENY


def test_every_write_side_action_code_is_denied() -> None:
    for action in ALL_ACTIONS:
        if action in _READ_SIDE:
            continue
        for args in [(None, None, None, None), ("sessions", None, "main", None), ("x", "y", "temp", "t")]:
            assert authorizer(action, *args) == DENY, apsw.mapping_authorizer_function[action]
