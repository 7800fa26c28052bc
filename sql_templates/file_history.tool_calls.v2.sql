-- id: file_history.tool_calls
-- version: 2
-- evidence_type: file_history
-- purpose: Edits to files in every form whose path or input mentions a query term.
-- shape: file_edit
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch messages.uuid messages.session_id messages.timestamp messages.cwd messages.visibility messages.is_meta messages.is_sidechain tool_calls.id tool_calls.message_uuid tool_calls.session_id tool_calls.name tool_calls.input_json tool_calls.file_path tool_results.tool_use_id tool_results.content tool_results.is_error tool_results.session_id
-- params: sources roots since scope_ids terms head search limit until
--
-- Edits to files in every form (provider/retrieval/edits.py reads them): Claude Edit, MultiEdit, Write and
-- NotebookEdit (file_path, or only a path inside input_json for MultiEdit and NotebookEdit), and Codex apply_patch
-- in any carrier (its own tool, freeform, shell argv, bash heredoc: input_json holds the patch). A term must occur
-- in the path or the input. The input is searched (terms, the patch marker) in its first :search characters only
-- (retrieval.engine.SEARCH_CHARS says why that many), each cell normalised once per row, not once per term variant,
-- so one huge cell (a MultiEdit of many 10,000-character leaves) costs bounded work per term variant.
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
       tc.file_path AS file_path,
       substr(tc.input_json, 1, :head) AS call_input,
       substr(tr.content, 1, :head) AS result_head,
       COALESCE(tr.is_error, 0) AS is_error,
       (SELECT count(*)
          FROM (SELECT lower(COALESCE(tc.file_path, '')) AS path,
                       lower(substr(tc.input_json, 1, :search)) AS input) AS cell,
               json_each(:terms) AS t
         WHERE instr(cell.path, t.value) > 0 OR instr(cell.input, t.value) > 0) AS score
FROM tool_calls AS tc
JOIN messages AS m ON m.uuid = tc.message_uuid
JOIN scope_sessions AS ss ON ss.id = tc.session_id
LEFT JOIN tool_results AS tr ON tr.tool_use_id = tc.id
WHERE tc.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(m.timestamp, '') < :until
  AND COALESCE(m.visibility, 'visible') = 'visible'
  AND COALESCE(m.is_meta, 0) = 0
  AND (lower(tc.name) IN ('edit', 'write', 'notebookedit', 'multiedit')
       OR substr(tc.input_json, 1, :search) LIKE '%*** Begin Patch%')
  AND score > 0
ORDER BY score DESC, m.timestamp DESC, tc.id
LIMIT :limit
