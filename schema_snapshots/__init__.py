"""Package data: the pinned Obelisk schema snapshots (``*.json``). Installed as
``obelisk_session_evidence.schema_snapshots``; found through ``provider/_resources.py``."""
