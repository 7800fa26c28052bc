-- id: prior_failure.resolution_calls
-- version: 2
-- evidence_type: prior_failure
-- purpose: What happened after a failure, in deeds: the later tool calls of the failure's session.
-- shape: resolution_call
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch messages.uuid messages.session_id messages.timestamp messages.cwd messages.visibility messages.is_meta messages.is_sidechain tool_calls.id tool_calls.message_uuid tool_calls.session_id tool_calls.name tool_calls.input_json tool_results.tool_use_id tool_results.content tool_results.is_error tool_results.session_id
-- params: sources roots since scope_ids failures head tail limit until
--
-- The later calls (provider/retrieval/resolution.py keeps the one that runs the failed command again and succeeds).
-- :failures lists the failures found by the other prior_failure templates, each "session id<US>timestamp" (US =
-- char(31)); only calls of those sessions, after the first such failure, are read. failed_after holds each such
-- session's first failure time, computed once from :failures, not once per row read.
-- The last :tail characters of a cell are read from its last 4 * :tail + 3 bytes (CAST to BLOB: substr then
-- counts bytes from the end, where a negative substr of text counts characters over the whole cell); a UTF-8
-- character takes at most 4 bytes, so the bytes of a character cut at that edge lie before the last :tail.
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
SELECT tc.session_id AS session_id,
       ss.source AS session_source,
       ss.project_path AS session_path,
       m.cwd AS msg_cwd,
       m.session_id AS msg_session_id,
       tr.session_id AS result_session_id,
       tc.id AS message_ref,
       m.timestamp AS observed_at,
       ss.git_branch AS git_branch,
       COALESCE(m.is_sidechain, 0) AS sidechain,
       tc.name AS call_name,
       substr(tc.input_json, 1, :head) AS call_input,
       substr(tr.content, 1, :head) AS result_head,
       CASE WHEN length(substr(tr.content, :head + 1, 1)) > 0 THEN substr(CAST(substr(CAST(tr.content AS BLOB), -(4 * :tail + 3)) AS TEXT), -:tail) ELSE '' END AS result_tail,
       COALESCE(tr.is_error, 0) AS is_error,
       1 AS score
FROM tool_calls AS tc
JOIN messages AS m ON m.uuid = tc.message_uuid
JOIN scope_sessions AS ss ON ss.id = tc.session_id
JOIN failed_after AS fa ON fa.session_id = tc.session_id
JOIN tool_results AS tr ON tr.tool_use_id = tc.id
WHERE tc.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(m.timestamp, '') < :until
  AND COALESCE(m.visibility, 'visible') = 'visible'
  AND COALESCE(m.is_meta, 0) = 0
  AND tc.session_id IN (SELECT substr(f.value, 1, instr(f.value, char(31)) - 1) FROM json_each(:failures) AS f)
  AND m.timestamp > fa.failed_at
  AND COALESCE(tr.is_error, 0) = 0
ORDER BY m.timestamp, tc.id
LIMIT :limit
