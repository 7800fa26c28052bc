-- expect: ok
-- params: sources roots since fts limit until
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at messages.uuid messages.session_id messages.text messages.visibility messages.is_meta messages.timestamp
-- case: SQLite names are case-insensitive
WITH scope_sessions AS (
  SELECT s.id AS id, COALESCE(s.source, 'claude') AS source
  FROM sessions AS s
  WHERE COALESCE(s.source, 'claude') IN (SELECT value FROM json_each(:sources))
    AND EXISTS (SELECT 1 FROM json_each(:roots) AS r
                WHERE s.project_path = r.value OR substr(s.project_path, 1, length(r.value) + 1) = r.value || '/')
    AND COALESCE(s.ended_at, s.started_at, '') >= :since
    AND COALESCE(s.started_at, '') < :until
)
SELECT M.session_id AS session_id, M.uuid AS message_ref, substr(M.text, 1, 200) AS body,
       bm25(MESSAGES_FTS) AS rank
FROM MESSAGES_FTS
JOIN Messages AS M ON M.rowid = MESSAGES_FTS.rowid
WHERE MESSAGES_FTS MATCH :fts
  AND M.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(M.TIMESTAMP, '') < :until
  AND COALESCE(M.visibility, 'visible') = 'visible'
  AND COALESCE(M.is_meta, 0) = 0
ORDER BY rank
LIMIT :limit
