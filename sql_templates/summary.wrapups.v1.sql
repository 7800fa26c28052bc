-- id: summary.wrapups
-- version: 1
-- evidence_type: summary
-- purpose: A session's wrap-up: the agent's last words before it fell silent, in a session with no stored summary.
-- shape: wrapup
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at sessions.git_branch messages.uuid messages.session_id messages.timestamp messages.cwd messages.visibility messages.is_meta messages.is_sidechain messages.role messages.text messages.content_type messages_fts.text summaries.session_id summaries.timestamp summaries.visibility
-- params: sources roots since scope_ids fts_all terms pre window search limit until
--
-- Obelisk stores summaries for away-summaries and compactions only, so most sessions have none; what the agent
-- concluded is then its own last message. Unlike a stored summary it was not written as one, so it must name every
-- term (:fts_all, the terms joined by AND): a session that only touched one of them (a file under src/billing/
-- when billing and stripe are asked) is not taken. A main-timeline assistant text (at least 20 characters, not a
-- blank streaming fragment) holding the terms is a wrap-up when no assistant message of the session follows it
-- within 30 minutes (the session ended, or went quiet: a later resumption does not hide it), or when no assistant
-- text follows it at all (its final words, though a tool call came after). "Later" stops at :until, so a replay
-- judges a message as the session stood at that moment. Minutes are counted as if every month had 31 days (the
-- verifier allows no date function): exact within a month and across the end of a 31-day month; across the end of
-- a shorter month a gap reads up to three days longer, so a message said just before such a midnight may be taken
-- for a wrap-up. A session with a visible stored summary has none: its summary (summary.summaries) comes first.
-- The text is searched in its first :search characters only (retrieval.engine.SEARCH_CHARS).
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
       (SELECT count(*) FROM json_each(:terms) AS t WHERE instr(lower(substr(m.text, 1, :search)), t.value) > 0) AS score,
       bm25(messages_fts) AS rank
FROM messages_fts
JOIN messages AS m ON m.rowid = messages_fts.rowid
JOIN scope_sessions AS ss ON ss.id = m.session_id
WHERE messages_fts MATCH :fts_all
  AND +messages_fts.rowid IN (SELECT m2.rowid FROM messages AS m2
                               WHERE m2.session_id IN (SELECT id FROM scope_sessions))
  AND m.session_id IN (SELECT id FROM scope_sessions)
  AND COALESCE(m.timestamp, '') < :until
  AND COALESCE(m.visibility, 'visible') = 'visible'
  AND COALESCE(m.is_meta, 0) = 0
  AND COALESCE(m.is_sidechain, 0) = 0
  AND m.role = 'assistant'
  AND m.content_type = 'text'
  AND length(trim(substr(m.text, 1, 200))) >= 20
  AND NOT EXISTS (SELECT 1 FROM summaries AS su
                  WHERE su.session_id = m.session_id
                    AND COALESCE(su.visibility, 'visible') = 'visible'
                    AND COALESCE(su.timestamp, '') < :until)
  AND (NOT EXISTS (SELECT 1 FROM messages AS later
                   WHERE later.session_id = m.session_id
                     AND later.timestamp > m.timestamp
                     AND later.timestamp < :until
                     AND later.role = 'assistant'
                     AND later.content_type = 'text'
                     AND COALESCE(later.is_sidechain, 0) = 0
                     AND COALESCE(later.visibility, 'visible') = 'visible'
                     AND COALESCE(later.is_meta, 0) = 0
                     AND length(trim(substr(later.text, 1, 200))) >= 20)
       OR NOT EXISTS (SELECT 1
                      FROM (SELECT n.timestamp AS ts FROM messages AS n
                            WHERE n.session_id = m.session_id
                              AND n.timestamp > m.timestamp
                              AND n.timestamp < :until
                              AND n.role = 'assistant'
                              AND COALESCE(n.is_sidechain, 0) = 0
                              AND COALESCE(n.visibility, 'visible') = 'visible'
                              AND COALESCE(n.is_meta, 0) = 0
                            ORDER BY n.timestamp
                            LIMIT 1) AS nxt
                      WHERE ((CAST(substr(nxt.ts, 1, 4) AS INTEGER) * 12 + CAST(substr(nxt.ts, 6, 2) AS INTEGER)) * 31
                             + CAST(substr(nxt.ts, 9, 2) AS INTEGER)) * 1440
                            + CAST(substr(nxt.ts, 12, 2) AS INTEGER) * 60 + CAST(substr(nxt.ts, 15, 2) AS INTEGER)
                          - (((CAST(substr(m.timestamp, 1, 4) AS INTEGER) * 12 + CAST(substr(m.timestamp, 6, 2) AS INTEGER)) * 31
                              + CAST(substr(m.timestamp, 9, 2) AS INTEGER)) * 1440
                             + CAST(substr(m.timestamp, 12, 2) AS INTEGER) * 60 + CAST(substr(m.timestamp, 15, 2) AS INTEGER))
                          < 30))
ORDER BY score DESC, rank, m.timestamp DESC, m.uuid
LIMIT :limit
