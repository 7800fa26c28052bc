"""Package data: the versioned SQL templates (``*.sql``) and ``verified.json``, the sqlglot verdicts shipped
with them. Installed as ``obelisk_session_evidence.sql_templates``; found through ``provider/_resources.py``."""
