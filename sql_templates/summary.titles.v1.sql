-- id: summary.titles
-- version: 1
-- evidence_type: summary
-- purpose: Session titles that mention a query term.
-- shape: title
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch sessions.title
-- params: sources roots since scope_ids terms limit until
WITH scope_sessions AS (
  SELECT s.id AS id, s.project_path AS project_path, COALESCE(s.source, 'claude') AS source,
         s.git_branch AS git_branch
  FROM sessions AS s
  WHERE COALESCE(s.source, 'claude') IN (SELECT value FROM json_each(:sources))
    AND EXISTS (SELECT 1 FROM json_each(:roots) AS r
                WHERE s.project_path = r.value OR substr(s.project_path, 1, length(r.value) + 1) = r.value || '/')
    AND COALESCE(s.ended_at, s.started_at, '') >= :since
    AND COALESCE(s.started_at, '') < :until
    AND s.id IN (SELECT value FROM json_each(:scope_ids))
)
SELECT s2.id AS session_id,
       ss.source AS session_source,
       ss.project_path AS session_path,
       NULL AS msg_cwd,
       NULL AS message_ref,
       COALESCE(s2.ended_at, s2.started_at) AS observed_at,
       ss.git_branch AS git_branch,
       0 AS sidechain,
       substr(s2.title, 1, 500) AS body,
       (SELECT count(*) FROM json_each(:terms) AS t WHERE instr(lower(s2.title), t.value) > 0) AS score
FROM sessions AS s2
JOIN scope_sessions AS ss ON ss.id = s2.id
WHERE s2.id IN (SELECT id FROM scope_sessions)
  AND COALESCE(s2.started_at, '') < :until
  AND s2.title IS NOT NULL
  AND score > 0
ORDER BY score DESC, observed_at DESC, s2.id
LIMIT :limit
