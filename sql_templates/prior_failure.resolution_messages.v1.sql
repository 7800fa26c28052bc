-- id: prior_failure.resolution_messages
-- version: 1
-- evidence_type: prior_failure
-- purpose: What happened after a failure, in words: a later message of the failure's session.
-- shape: resolution_message
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch messages.uuid messages.session_id messages.timestamp messages.cwd messages.visibility messages.is_meta messages.is_sidechain messages.role messages.text
-- params: sources roots since scope_ids failures cap limit until after_ts after_key after_rowid
--
-- A later message: the user's (whatever its words: it often supplies what was missing) or the agent's when it states
-- a cause or fix, or supplies what was missing ("root cause", "the fix was", "now passes", "I added", "switched to",
-- granted, regenerated ... and their Chinese and Japanese forms: terms.RESOLUTION_CUES). :failures lists the
-- failures found by the other prior_failure templates, each "session id<US>timestamp" (US = char(31)); only messages
-- of those sessions, after the first such failure, are read. The rows come in (timestamp, uuid, rowid) order, :limit
-- at a time after the key (:after_ts, :after_key, :after_rowid) of the last row of the page before; Python
-- (retrieval/engine.py, paged_rows) keeps every user message and each agent message whose first 4,000 characters
-- hold a cue (terms.has_resolution_cue: SQLite's lower() and instr() over substr(text, 1, 4000), tested against
-- SQLite itself), until it holds as many rows as the request allows. The row carries the message's first :cap
-- characters (Obelisk keeps at most 10,000): the window around the first cue and the cue count are taken in Python
-- (retrieval/evidence.py, resolution_window), for the kept rows only, exactly as SQLite's lower() and instr() would
-- take them. failed_after holds each such session's first failure time, computed once from :failures, not once per
-- row read.
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
),
failed_after AS (
  SELECT substr(f.value, 1, instr(f.value, char(31)) - 1) AS session_id,
         min(substr(f.value, instr(f.value, char(31)) + 1)) AS failed_at
  FROM json_each(:failures) AS f
  GROUP BY substr(f.value, 1, instr(f.value, char(31)) - 1)
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
       m.role AS role,
       substr(m.text, 1, :cap) AS text,
       COALESCE(m.uuid, '') AS order_key,
       m.rowid AS message_rowid
FROM messages AS m
JOIN scope_sessions AS ss ON ss.id = m.session_id
JOIN failed_after AS fa ON fa.session_id = m.session_id
WHERE m.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(m.timestamp, '') < :until
  AND COALESCE(m.visibility, 'visible') = 'visible'
  AND COALESCE(m.is_meta, 0) = 0
  AND m.role IN ('assistant', 'user')
  AND m.text IS NOT NULL
  AND m.session_id IN (SELECT substr(f.value, 1, instr(f.value, char(31)) - 1) FROM json_each(:failures) AS f)
  AND m.timestamp > fa.failed_at
  AND (m.timestamp, COALESCE(m.uuid, ''), m.rowid) > (:after_ts, :after_key, :after_rowid)
ORDER BY m.timestamp, COALESCE(m.uuid, ''), m.rowid
LIMIT :limit
