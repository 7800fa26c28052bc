-- id: decision.messages.substring
-- version: 2
-- evidence_type: decision
-- purpose: A choice or its reason (assistant or user) naming an unsegmented (CJK) query term and a decision cue.
-- shape: message
-- markers: decision
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch messages.uuid messages.session_id messages.timestamp messages.cwd messages.visibility messages.is_meta messages.is_sidechain messages.role messages.text
-- params: sources roots since scope_ids terms cues pre window search limit until
--
-- A choice or its reason (assistant or user) that names an unsegmented (CJK) query term and a decision cue. The
-- substring plan for unsegmented terms: under unicode61 a CJK run is one FTS token, so a CJK term inside a longer
-- run never matches MATCH. Here :terms (only the request's CJK terms) and :cues (the provider's cue words, CJK ones
-- included) are matched with instr() over the text of the scope's messages only (a lookup by session id, never a
-- scan of the whole index), user and assistant alike; the statement runs under the request's deadline. The text is
-- searched in its first :search characters only (retrieval.engine.SEARCH_CHARS), so one huge text (another writer's:
-- Obelisk keeps 10,000 characters) costs bounded work per term variant.
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
       (SELECT count(*) FROM json_each(:terms) AS t WHERE instr(lower(substr(m.text, 1, :search)), t.value) > 0) AS score
FROM messages AS m
JOIN scope_sessions AS ss ON ss.id = m.session_id
WHERE m.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(m.timestamp, '') < :until
  AND COALESCE(m.visibility, 'visible') = 'visible'
  AND COALESCE(m.is_meta, 0) = 0
  AND m.role IN ('assistant', 'user')
  AND m.text IS NOT NULL
  AND score > 0
  AND EXISTS (SELECT 1 FROM json_each(:cues) AS c WHERE instr(lower(substr(m.text, 1, :search)), c.value) > 0)
ORDER BY score DESC, m.timestamp DESC, m.uuid
LIMIT :limit
