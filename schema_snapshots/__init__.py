"""Package data: the pinned Obelisk schema snapshots (``*.json``). Installed as
``obelisk_session_evidence.schema_snapshots``; read through ``importlib.resources``."""
