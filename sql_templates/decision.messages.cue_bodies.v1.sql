-- id: decision.messages.cue_bodies
-- version: 1
-- evidence_type: decision
-- purpose: Not evidence: the texts cue_text listed, for the marker words to be found in them in Python.
-- plan_of: decision.messages
-- plan: cue_bodies
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch messages.session_id messages.timestamp messages.visibility messages.is_meta messages.role messages.text
-- params: sources roots since scope_ids rows cap limit until
--
-- :rows holds their rowids (primary-key lookups); each text is read to at most :cap characters (a longer one is NULL
-- and left to FTS5), and retrieval.markers decides it exactly as FTS5 would. Read only when the listed texts hold
-- few enough characters in all, so no more than that is ever read into the provider.
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
       CASE WHEN length(m.text) <= :cap THEN m.text END AS body
FROM messages AS m
JOIN scope_sessions AS ss ON ss.id = m.session_id
WHERE m.rowid IN (SELECT r.value FROM json_each(:rows) AS r)
  AND m.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(m.timestamp, '') < :until
  AND COALESCE(m.visibility, 'visible') = 'visible'
  AND COALESCE(m.is_meta, 0) = 0
  AND m.role IN ('assistant', 'user')
ORDER BY m.rowid
LIMIT :limit
