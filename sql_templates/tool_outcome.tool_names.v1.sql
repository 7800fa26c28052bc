-- id: tool_outcome.tool_names
-- version: 1
-- evidence_type: tool_outcome
-- purpose: Calls of the tool a query term names (its name, or an MCP tool's last part), with their outcome.
-- shape: tool_call
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch messages.uuid messages.session_id messages.timestamp messages.cwd messages.visibility messages.is_meta messages.is_sidechain tool_calls.id tool_calls.message_uuid tool_calls.session_id tool_calls.name tool_calls.input_json tool_results.tool_use_id tool_results.content tool_results.is_error tool_results.session_id
-- params: sources roots since scope_ids terms head tail limit until
--
-- A tool's name is where it is named, not its input or output: Claude Code's WebSearch or TaskOutput, Codex's
-- apply_patch or shell, an MCP tool mcp__<server>__<tool>. A term names a call when it equals the call's name, case
-- folded as SQLite's lower() folds (ASCII), or, for an MCP tool, its last part (the term "search" names
-- mcp__docs__search, not mcp__docs__search_code nor WebSearch). The scope's calls are read through the session
-- index (tool_calls(session_id, name): the name is compared folded, so the index orders nothing more); CROSS JOIN
-- keeps the join order tool_calls, tool_results, messages as in tool_outcome.tool_calls, whose rows these are;
-- the name is asked first, on the call alone, so a call of another tool never pays for its result's text.
-- The last :tail characters of a cell are read from its last 4 * :tail + 3 bytes, as in the tool templates
-- (prior_failure.tool_results says why): a huge cell is never walked character by character.
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
       (SELECT count(*) FROM json_each(:terms) AS t
         WHERE lower(tc.name) = t.value
            OR (substr(lower(tc.name), 1, 5) = 'mcp__' AND length(t.value) > 0
                AND substr(lower(tc.name), -length(t.value) - 2) = '__' || t.value)) AS score
FROM tool_calls AS tc
CROSS JOIN tool_results AS tr ON tr.tool_use_id = tc.id
CROSS JOIN messages AS m ON m.uuid = tc.message_uuid
JOIN scope_sessions AS ss ON ss.id = tc.session_id
WHERE tc.session_id IN (SELECT id FROM scope_sessions)
  AND EXISTS (SELECT 1 FROM json_each(:terms) AS t
              WHERE lower(tc.name) = t.value
                 OR (substr(lower(tc.name), 1, 5) = 'mcp__' AND length(t.value) > 0
                     AND substr(lower(tc.name), -length(t.value) - 2) = '__' || t.value))
  AND COALESCE(m.timestamp, '') < :until
  AND COALESCE(m.visibility, 'visible') = 'visible'
  AND COALESCE(m.is_meta, 0) = 0
ORDER BY score DESC, m.timestamp DESC, tc.id
LIMIT :limit
