-- id: decision.messages.cue_text
-- version: 1
-- evidence_type: decision
-- purpose: Not evidence: the scope's messages cue_rows would match, with the length of each text.
-- plan_of: decision.messages
-- plan: cue_text
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch messages.session_id messages.timestamp messages.visibility messages.is_meta messages.role messages.text
-- params: sources roots since scope_ids limit until
--
-- Read through the session index (cost follows the scope, not the index). When they are fewer than :limit and their
-- texts hold few enough characters in all, the provider reads those texts (decision.messages.cue_bodies) and keeps
-- the rows whose text holds a decision word as the live tokenizer splits it (retrieval.markers, exactly FTS5's match
-- of the marker expression; only under the default unicode61 tokenizer), instead of expanding every marker prefix
-- over the whole index. Otherwise decision.messages.cue_rows lists them, or the template itself runs.
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
       m.rowid AS message_rowid,
       length(m.text) AS body_chars
FROM messages AS m
JOIN scope_sessions AS ss ON ss.id = m.session_id
WHERE m.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(m.timestamp, '') < :until
  AND COALESCE(m.visibility, 'visible') = 'visible'
  AND COALESCE(m.is_meta, 0) = 0
  AND m.role IN ('assistant', 'user')
ORDER BY m.rowid
LIMIT :limit
