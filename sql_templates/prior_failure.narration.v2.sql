-- id: prior_failure.narration
-- version: 2
-- evidence_type: prior_failure
-- purpose: The agent's narration of a failure: assistant messages matching a query term and a failure word.
-- shape: message
-- markers: failure
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch messages.uuid messages.session_id messages.timestamp messages.cwd messages.visibility messages.is_meta messages.is_sidechain messages.role messages.text messages_fts.text
-- params: sources roots since scope_ids fts terms pre window search limit until
--
-- The text is searched in its first :search characters only (retrieval.engine.SEARCH_CHARS), so one huge text
-- (another writer's: Obelisk keeps 10,000 characters) costs bounded work per term variant.
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
       m.cwd AS msg_cwd,
       m.session_id AS msg_session_id,
       m.uuid AS message_ref,
       m.timestamp AS observed_at,
       ss.git_branch AS git_branch,
       COALESCE(m.is_sidechain, 0) AS sidechain,
       max(1, COALESCE((SELECT min(instr(lower(substr(m.text, 1, :search)), t.value)) FROM json_each(:terms) AS t
                         WHERE instr(lower(substr(m.text, 1, :search)), t.value) > 0), 1) - :pre) AS window_start,
       substr(m.text, max(1, COALESCE((SELECT min(instr(lower(substr(m.text, 1, :search)), t.value)) FROM json_each(:terms) AS t
                                        WHERE instr(lower(substr(m.text, 1, :search)), t.value) > 0), 1) - :pre), :window) AS body,
       (SELECT count(*) FROM json_each(:terms) AS t WHERE instr(lower(substr(m.text, 1, :search)), t.value) > 0) AS score,
       bm25(messages_fts) AS rank
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
ORDER BY score DESC, rank, m.timestamp DESC, m.uuid
LIMIT :limit
