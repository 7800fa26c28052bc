-- expect: ok
-- params: sources roots since fts limit until failures
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at messages.uuid messages.session_id messages.text messages.visibility messages.is_meta messages.timestamp
-- case: a CTE over json_each of a parameter alone (each failure's session and time) joined in the outer SELECT
WITH scope_sessions AS (
  SELECT s.id AS id, COALESCE(s.source, 'claude') AS source
  FROM sessions AS s
  WHERE COALESCE(s.source, 'claude') IN (SELECT value FROM json_each(:sources))
    AND EXISTS (SELECT 1 FROM json_each(:roots) AS r
                WHERE s.project_path = r.value OR substr(s.project_path, 1, length(r.value) + 1) = r.value || '/')
    AND COALESCE(s.ended_at, s.started_at, '') >= :since
    AND COALESCE(s.started_at, '') < :until
),
failed_after AS (
  SELECT substr(f.value, 1, instr(f.value, char(31)) - 1) AS session_id,
         min(substr(f.value, instr(f.value, char(31)) + 1)) AS failed_at
  FROM json_each(:failures) AS f
  GROUP BY substr(f.value, 1, instr(f.value, char(31)) - 1)
)
SELECT m.session_id AS session_id, m.uuid AS message_ref, substr(m.text, 1, 200) AS body,
       bm25(messages_fts) AS rank
FROM messages_fts
JOIN messages AS m ON m.rowid = messages_fts.rowid
JOIN failed_after AS fa ON fa.session_id = m.session_id
WHERE messages_fts MATCH :fts
  AND m.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(m.timestamp, '') < :until
  AND m.timestamp > fa.failed_at
  AND COALESCE(m.visibility, 'visible') = 'visible'
  AND COALESCE(m.is_meta, 0) = 0
ORDER BY rank
LIMIT :limit
