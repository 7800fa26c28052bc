-- expect: ok
-- params: sources roots since limit until
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at messages.uuid messages.session_id messages.text messages.visibility messages.is_meta summaries.session_id summaries.content summaries.visibility summaries.timestamp
WITH scope_sessions AS (
  SELECT s.id AS id, COALESCE(s.source, 'claude') AS source
  FROM sessions AS s
  WHERE COALESCE(s.source, 'claude') IN (SELECT value FROM json_each(:sources))
    AND EXISTS (SELECT 1 FROM json_each(:roots) AS r
                WHERE s.project_path = r.value OR substr(s.project_path, 1, length(r.value) + 1) = r.value || '/')
    AND COALESCE(s.ended_at, s.started_at, '') >= :since
    AND COALESCE(s.started_at, '') < :until
)
SELECT su.session_id AS session_id, su.content AS body
FROM summaries AS su
WHERE su.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(su.timestamp, '') < :until
  AND COALESCE(su.visibility, 'visible') = 'visible'
ORDER BY su.timestamp DESC
LIMIT :limit
