"""Every script in ``tools/`` is linted and type-checked like the package: ruff and mypy see a script without a
``.py`` suffix only when pyproject names it, so a new script left out of those lists fails here."""

from __future__ import annotations

import tomllib

from tests.conftest import REPO


def _scripts() -> set[str]:
    return {f"tools/{path.name}" for path in (REPO / "tools").iterdir()
            if path.is_file() and path.read_bytes().startswith(b"#!/usr/bin/env python")}


def test_every_tool_is_linted_and_type_checked() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    scripts = _scripts()
    assert "tools/mutate" in scripts and "tools/bench_freshness.py" in scripts  # the scan sees both kinds
    linted = set(config["ruff"]["extend-include"])
    assert not {s for s in scripts if not s.endswith(".py")} - linted, "add them to [tool.ruff] extend-include"
    assert not scripts - set(config["mypy"]["files"]), "add them to [tool.mypy] files"
    assert "tools/devkit" in config["mypy"]["files"]
