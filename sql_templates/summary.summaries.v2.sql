-- id: summary.summaries
-- version: 2
-- evidence_type: summary
-- purpose: Summary rows (away summaries, compactions, branch summaries) that mention a query term.
-- shape: summary
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch summaries.id summaries.session_id summaries.timestamp summaries.source summaries.content summaries.visibility
-- params: sources roots since scope_ids terms pre window search limit until
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
SELECT su.session_id AS session_id,
       ss.source AS session_source,
       ss.project_path AS session_path,
       NULL AS msg_cwd,
       su.id AS message_ref,
       su.timestamp AS observed_at,
       ss.git_branch AS git_branch,
       0 AS sidechain,
       su.source AS summary_kind,
       max(1, COALESCE((SELECT min(instr(lower(substr(su.content, 1, :search)), t.value)) FROM json_each(:terms) AS t
                         WHERE instr(lower(substr(su.content, 1, :search)), t.value) > 0), 1) - :pre) AS window_start,
       substr(su.content, max(1, COALESCE((SELECT min(instr(lower(substr(su.content, 1, :search)), t.value)) FROM json_each(:terms) AS t
                                          WHERE instr(lower(substr(su.content, 1, :search)), t.value) > 0), 1) - :pre), :window) AS body,
       (SELECT count(*) FROM json_each(:terms) AS t WHERE instr(lower(substr(su.content, 1, :search)), t.value) > 0) AS score
FROM summaries AS su
JOIN scope_sessions AS ss ON ss.id = su.session_id
WHERE su.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(su.timestamp, '') < :until
  AND COALESCE(su.visibility, 'visible') = 'visible'
  AND score > 0
ORDER BY score DESC, su.timestamp DESC, su.id
LIMIT :limit
