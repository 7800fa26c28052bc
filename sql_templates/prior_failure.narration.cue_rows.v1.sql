-- id: prior_failure.narration.cue_rows
-- version: 1
-- evidence_type: prior_failure
-- purpose: Not evidence: the rowids of the scope's assistant messages holding a failure word, listed by FTS5.
-- plan_of: prior_failure.narration
-- plan: cue_rows
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch messages.session_id messages.timestamp messages.visibility messages.is_meta messages.role messages_fts.text
-- params: sources roots since scope_ids fts limit until
--
-- :fts is the marker expression of prior_failure.narration alone, no query term. A warm process remembers them per
-- index state and scope set (they depend on neither the request's terms nor its time window), so that
-- prior_failure.narration.scope_rows reads only these messages instead of expanding every marker prefix over the
-- whole index again for each request. Past :limit rows the scope is not small and the plan is not used.
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
       m.rowid AS message_rowid
FROM messages_fts
JOIN messages AS m ON m.rowid = messages_fts.rowid
JOIN scope_sessions AS ss ON ss.id = m.session_id
WHERE messages_fts MATCH :fts
  AND +messages_fts.rowid IN (SELECT m2.rowid FROM messages AS m2
                               WHERE m2.session_id IN (SELECT id FROM scope_sessions))
  AND m.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(m.timestamp, '') < :until
  AND COALESCE(m.visibility, 'visible') = 'visible'
  AND COALESCE(m.is_meta, 0) = 0
  AND m.role = 'assistant'
ORDER BY m.rowid
LIMIT :limit
