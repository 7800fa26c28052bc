"""``python -m provider`` is the same as the ``obelisk-session-evidence`` console script."""

from provider.cli import main

raise SystemExit(main())
