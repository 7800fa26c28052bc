-- expect: violation unparsed_command
-- params: 
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at messages.uuid messages.session_id messages.text messages.visibility messages.is_meta
REPLACE INTO sessions (id) VALUES ('x')
