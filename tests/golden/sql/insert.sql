-- expect: violation forbidden_statement
-- params: 
-- needs: sessions.id sessions.source sessions.project_path sessions.started_at sessions.ended_at messages.uuid messages.session_id messages.text messages.visibility messages.is_meta
INSERT INTO sessions (id) VALUES ('x')
