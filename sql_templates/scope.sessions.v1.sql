-- id: scope.sessions
-- version: 1
-- evidence_type: scope
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch
-- params: sources roots since limit
-- The sessions in scope, run once per request: the agent's sources, a project path under a bound root on a
-- path boundary, active since :since. The path match here is lexical (every spelling of a root is bound);
-- the provider then keeps only the sessions whose project path is inside a root by real path (symlinks
-- resolved, `..` applied), and every evidence template reads only those (:scope_ids, a primary-key lookup)
-- while still carrying the same scope predicates itself.
WITH scope_sessions AS (
  SELECT s.id AS id, s.project_path AS project_path, COALESCE(s.source, 'claude') AS source,
         s.git_branch AS git_branch
  FROM sessions AS s
  WHERE COALESCE(s.source, 'claude') IN (SELECT value FROM json_each(:sources))
    AND EXISTS (SELECT 1 FROM json_each(:roots) AS r
                WHERE s.project_path = r.value OR substr(s.project_path, 1, length(r.value) + 1) = r.value || '/')
    AND COALESCE(s.ended_at, s.started_at, '') >= :since
)
SELECT s2.id AS session_id, s2.project_path AS session_path
FROM sessions AS s2
WHERE s2.id IN (SELECT id FROM scope_sessions)
ORDER BY s2.id
LIMIT :limit
