-- id: prior_failure.tool_results
-- version: 3
-- evidence_type: prior_failure
-- purpose: Failed tool calls whose call input or result mentions a query term.
-- shape: tool_call
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch messages.uuid messages.session_id messages.timestamp messages.cwd messages.visibility messages.is_meta messages.is_sidechain messages.agent_id tool_calls.id tool_calls.message_uuid tool_calls.session_id tool_calls.name tool_calls.input_json tool_results.tool_use_id tool_results.content tool_results.is_error tool_results.session_id
-- params: sources roots since scope_ids terms head tail search limit until
--
-- The terms are looked for in the call's input and in the head and tail of its result (line breaks, tabs, hyphens
-- and underscores read as spaces, so a phrase matches across them). The prefilter admits every output that
-- provider/retrieval/outcome.py may call a failure (is_error; Claude "Exit code N"; Codex "Exit code: N", "Process
-- exited with code N" and JSON "exit_code":N, non-zero; a traceback; a failed inner step of docker, make or npm);
-- the Python reader then decides, and drops rows it reads as succeeded. CROSS JOIN keeps the join order tool_calls,
-- tool_results, messages: the result filters run before a call's message is looked up, so only the rows that pass
-- them pay that lookup. The input and the output are searched in their first :search characters only
-- (retrieval.engine.SEARCH_CHARS says why that many), and the prefilter reads the output's first :search and last
-- :tail characters (all the reader reads is within them), so one huge cell costs bounded work per term variant.
-- Whether a cell is longer than N is asked as length(substr(x, N + 1, 1)) > 0, which reads N characters, not the
-- whole cell. The prefilter's text is made once per row: a derived table with a LIMIT is not flattened into a query
-- with a WHERE (SQLite's flattening rules), which would make it once per LIKE.
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
       (SELECT count(*)
          FROM (SELECT lower(substr(tc.input_json, 1, :search)) AS input,
                       lower(substr(tr.content, 1, :search)) AS output,
                       replace(replace(replace(replace(lower(substr(tr.content, 1, :head) || ' ' || substr(CAST(substr(CAST(tr.content AS BLOB), -(4 * :tail + 3)) AS TEXT), -:tail)),
                                               char(10), ' '), char(9), ' '), '-', ' '), '_', ' ') AS edges) AS cell,
               json_each(:terms) AS t
         WHERE instr(cell.input, t.value) > 0 OR instr(cell.output, t.value) > 0
            OR instr(cell.edges, t.value) > 0) AS score
FROM tool_calls AS tc
CROSS JOIN tool_results AS tr ON tr.tool_use_id = tc.id
CROSS JOIN messages AS m ON m.uuid = tc.message_uuid
JOIN scope_sessions AS ss ON ss.id = tc.session_id
WHERE tc.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(m.timestamp, '') < :until
  AND COALESCE(m.visibility, 'visible') = 'visible'
  AND COALESCE(m.is_meta, 0) = 0
  AND (COALESCE(tr.is_error, 0) = 1
       OR EXISTS (SELECT 1
                    FROM (SELECT CASE WHEN length(substr(tr.content, :search + 1, 1)) > 0
                                      THEN substr(tr.content, 1, :search) || char(10) || substr(CAST(substr(CAST(tr.content AS BLOB), -(4 * :tail + 3)) AS TEXT), -:tail)
                                      ELSE tr.content END AS text
                          LIMIT 1) AS cut
                   WHERE (cut.text LIKE 'Exit code %' AND cut.text NOT LIKE 'Exit code 0%')
                      OR (cut.text LIKE '%Exit code: %' AND cut.text NOT LIKE '%Exit code: 0%')
                      OR (cut.text LIKE '%Process exited with code %'
                          AND cut.text NOT LIKE '%Process exited with code 0%')
                      OR (cut.text LIKE '%"exit_code":%' AND cut.text NOT LIKE '%"exit_code":0%'
                          AND cut.text NOT LIKE '%"exit_code": 0%')
                      OR cut.text LIKE '%Traceback (most recent call last)%'
                      OR cut.text LIKE '%did not complete successfully: exit code: %'
                      OR cut.text LIKE '%make%: *** [%] Error %'
                      OR cut.text LIKE '%npm ERR! code %'
                      OR cut.text LIKE '%npm error code %'))
  AND score > 0
ORDER BY score DESC, m.timestamp DESC, tc.id
LIMIT :limit
