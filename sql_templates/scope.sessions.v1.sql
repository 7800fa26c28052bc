-- id: scope.sessions
-- version: 1
-- evidence_type: scope
-- purpose: The sessions in scope, run once per request.
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch sessions.jsonl_path
-- params: sources roots since limit until
--
-- The scope: the agent's sources, a project path under a bound root on a path boundary, active since :since. The
-- path match here is lexical (every spelling of a root is bound); the provider then keeps only the sessions whose
-- project path is inside a root by real path (symlinks resolved, `..` applied), and every evidence template reads
-- only those (:scope_ids, a primary-key lookup) while still carrying the same scope predicates itself. The session's
-- source and transcript file come along for freshness, which then reads index_state for these files only; its
-- activity time lets a warm process keep one answer for an hour of :since values (filtered again in code, exactly).
-- The two range tests hold for every path the EXISTS accepts (a root R, or R || '/' || more, lies in [R, R || '0')
-- because '0' follows '/' in byte order): cheap per row, they spare the correlated json_each for the sessions of
-- other projects (there is no index on project_path, and a reader cannot add one). They come first: SQLite tested
-- this scan's terms in the order written, and they reject almost every row.
WITH scope_sessions AS (
  SELECT s.id AS id, s.project_path AS project_path, COALESCE(s.source, 'claude') AS source,
         s.git_branch AS git_branch
  FROM sessions AS s
  WHERE s.project_path >= (SELECT min(r0.value) FROM json_each(:roots) AS r0)
    AND s.project_path < (SELECT max(r1.value || '0') FROM json_each(:roots) AS r1)
    AND COALESCE(s.source, 'claude') IN (SELECT value FROM json_each(:sources))
    AND COALESCE(s.ended_at, s.started_at, '') >= :since
    AND EXISTS (SELECT 1 FROM json_each(:roots) AS r
                WHERE s.project_path = r.value OR substr(s.project_path, 1, length(r.value) + 1) = r.value || '/')
    AND COALESCE(s.started_at, '') < :until
)
SELECT s2.id AS session_id, COALESCE(s2.source, 'claude') AS session_source, s2.jsonl_path AS jsonl_path,
       COALESCE(s2.ended_at, s2.started_at, '') AS active_at, s2.project_path AS session_path
FROM sessions AS s2
WHERE s2.id IN (SELECT id FROM scope_sessions)
  AND COALESCE(s2.started_at, '') < :until
ORDER BY s2.id
LIMIT :limit
