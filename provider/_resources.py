"""Where the package data lives: the SQL templates and the schema snapshots, each a subpackage's own folder.

In the repository they sit beside ``provider/`` (``sql_templates/``, ``schema_snapshots/``); the build maps them
into the installed package (``pyproject.toml``), so the same lookup (``importlib.resources.files``) serves an
installed wheel and an editable install, and no runtime path climbs out of the package.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

#: The installed import name (``obelisk_session_evidence``), taken from this module's own name.
PACKAGE = __name__.rpartition(".")[0]


def data_dir(name: str) -> Path:
    """The folder of one package-data subpackage (``sql_templates`` or ``schema_snapshots``).

    The package is installed as plain files (wheel or editable), so the folder is a real directory; a zipped
    install is refused rather than extracted (the provider writes no file).
    """
    found = files(f"{PACKAGE}.{name}")
    if not isinstance(found, Path) or not found.is_dir():  # pragma: no cover - a zipped install is not supported
        raise TypeError("package data is not on a file system")
    return found
