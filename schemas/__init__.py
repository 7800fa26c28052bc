"""Package data: the integration surface (``*.schema.json``, ``obelisk-session-evidence.d.ts``, ``examples/``),
written by ``tools/write-surface`` from the code and checked by ``tests/integration/test_surface.py``; ``README.md`` here
says what each file is. Installed as ``obelisk_session_evidence.schemas``."""
