-- id: prior_failure.narration.term_probe
-- version: 1
-- evidence_type: prior_failure
-- purpose: One message of the scope matching the query terms alone; with none, prior_failure.narration has no row.
-- plan_of: prior_failure.narration
-- plan: term_probe
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch messages.session_id messages.timestamp messages.cwd messages.visibility messages.is_meta messages_fts.text
-- params: sources roots since scope_ids fts limit until
--
-- :fts holds the terms' half of the template's expression, no marker word. With no such message
-- prior_failure.narration cannot match either (its expression is the terms AND more, its filters these and more), so
-- this plan answers it with no row and the template does not run (:limit is 1). The term probes of
-- prior_failure.narration, decision.messages and decision.reasoning are one statement; it runs once per request,
-- under a statement budget: past it the template runs as if a message had been found.
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
SELECT m.session_id AS session_id,
       ss.source AS session_source,
       ss.project_path AS session_path,
       m.cwd AS msg_cwd
FROM messages_fts
JOIN messages AS m ON m.rowid = messages_fts.rowid
JOIN scope_sessions AS ss ON ss.id = m.session_id
WHERE messages_fts MATCH :fts
  AND m.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(m.timestamp, '') < :until
  AND COALESCE(m.visibility, 'visible') = 'visible'
  AND COALESCE(m.is_meta, 0) = 0
LIMIT :limit
