"""Commands that run the same thing: a query term naming a command also finds its equivalent forms.

A command is read as its runner and its arguments (:class:`Command`): wrappers are taken off (``python -m X``,
``uv run``/``poetry run``, ``npx``, ``pnpm exec``/``dlx``, ``yarn exec``/``dlx``, ``bunx``, ``./gradlew``, leading
``VAR=value``), flags are dropped, a tool with subcommands keeps its subcommand (``go test``, ``cargo build``,
``docker build``), and a package manager running a script is the script (``npm test``, ``npm run X``, ``pnpm X``,
``yarn X``: ``script:X``; ``yarn X`` and ``pnpm X`` may also run a binary ``X``). The repository's
``package.json`` (read at request time from the bound roots, :func:`package_scripts`) says what a script runs:
``npm test`` is also the command of its ``test`` script. A recorded command runs what a term names when one of
its segments (``&&``, ``;``, ``|``, lines) has the same runner and every argument of the term, in any order,
beside others (:func:`runs`): ``pytest tests/unit/test_cart.py`` is run by ``python -m pytest
tests/unit/test_cart.py -x -q`` and by ``pytest -q tests/unit/test_cart.py``; ``cat tests/unit/test_cart.py`` runs
no ``pytest``.

For SQL, which matches substrings, a term's command gives a few strings a running row must hold
(:func:`pieces`): its path-like arguments, or the runner and its arguments, or the script's invocations.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from ..inputs import regular_file_chunks
from .cells import load_json

#: Bytes of a package.json read at most; a larger one gives no script (Node projects keep it to a few KiB).
PACKAGE_JSON_CAP = 64 * 1024
#: Roots whose package.json is read at most, scripts kept at most, characters of one script at most.
PACKAGE_ROOTS = 4
SCRIPTS_KEPT = 64
SCRIPT_CHARS = 400
#: Strings one command term adds for SQL at most.
PIECES_PER_TERM = 8

_PYTHONS = frozenset({"python", "python3", "py", *(f"python3.{n}" for n in range(8, 16))})
_RUN_WRAPPERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye"})
_VALUE_FLAGS = frozenset({"--with", "--python", "-p", "--package", "--from", "-e", "--env", "--directory"})
_SUBCOMMAND_TOOLS = frozenset({"go", "cargo", "docker", "terraform", "kubectl", "helm", "git", "dotnet", "bun",
                               "deno", "swift", "composer", "bundle", "gh"})
_PNPM_OWN = frozenset({"add", "audit", "bin", "ci", "config", "create", "deploy", "dlx", "env", "exec", "fetch",
                       "i", "import", "init", "install", "link", "list", "ls", "outdated", "pack", "patch", "prune",
                       "publish", "rebuild", "remove", "rm", "root", "setup", "store", "unlink", "up", "update",
                       "why", "run"})
_YARN_OWN = frozenset({"add", "audit", "autoclean", "bin", "cache", "check", "config", "create", "dlx", "exec",
                       "global", "import", "info", "init", "install", "licenses", "link", "list", "login", "logout",
                       "outdated", "owner", "pack", "policies", "publish", "remove", "run", "tag", "team", "unlink",
                       "up", "upgrade", "version", "versions", "why", "workspace", "workspaces"})
#: Runners whose name alone makes a term a command (with ``python -m``, ``npx`` and the package managers).
_RUNNERS = frozenset({
    "pytest", "py.test", "unittest", "nose2", "tox", "nox", "jest", "vitest", "mocha", "ava", "playwright",
    "cypress", "tsc", "eslint", "prettier", "ruff", "mypy", "pyright", "black", "flake8", "pylint", "isort",
    "rspec", "rake", "phpunit", "gradle", "mvn", "make", "ctest", "bazel", "tsx", "ts-node", "node", "deno",
    "webpack", "vite", "turbo", "nx", "alembic", "manage.py", "pre-commit", *_SUBCOMMAND_TOOLS,
})
_SEPARATORS = ("&&", "||", ";", "|", "\n")
#: Scripts a package manager runs by their own subcommand (``npm test``): never a binary of that name.
_LIFECYCLE = frozenset({"test", "start", "stop", "restart"})


class Command(NamedTuple):
    """What a command runs: ``runner`` (``pytest``, ``go test``, ``script:test``) and its arguments, flags left
    out, in order."""

    runner: str
    args: tuple[str, ...]


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment, comments=False, posix=True)
    except ValueError:
        return segment.split()


def _unwrap(words: list[str]) -> list[str]:
    """``words`` without the wrappers that run what follows them as it is (module docstring)."""
    while words:
        head = words[0]
        if "=" in head and head.split("=", 1)[0].replace("_", "").isalnum() and not head.startswith("-"):
            words = words[1:]
        elif head in _PYTHONS and len(words) >= 3 and words[1] == "-m":
            words = words[2:]
        elif head in _RUN_WRAPPERS and len(words) >= 2 and words[1] == "run":
            words = _after_flags(words[2:])
        elif head in ("npx", "bunx"):
            words = _after_flags(words[1:])
        elif head in ("pnpm", "yarn", "npm", "bun") and len(words) >= 2 and words[1] in ("exec", "dlx", "x"):
            words = _after_flags(words[2:])
        elif head.endswith(("/gradlew", "gradlew")) or head.startswith("./node_modules/.bin/"):
            words = ["gradle" if head.endswith("gradlew") else head.rsplit("/", 1)[-1], *words[1:]]
            break
        else:
            break
    return words


def _after_flags(words: list[str]) -> list[str]:
    """``words`` after leading flags (and the value of a flag that takes one) and a ``--``."""
    at = 0
    while at < len(words) and words[at].startswith("-"):
        at += 2 if words[at] in _VALUE_FLAGS else 1
        if words[at - 1] == "--":
            break
    return words[at:]


def _args(words: Sequence[str], roots: Sequence[str]) -> tuple[str, ...]:
    out = []
    for given in words:
        if not given or given.startswith("-"):
            continue
        word = given
        for root in roots:
            base = root.rstrip("/")
            if base and word.startswith(base + "/"):
                word = word[len(base) + 1:]
                break
        out.append(word[2:] if word.startswith("./") and len(word) > 2 else word)
    return tuple(out)


def _script_call(words: list[str]) -> tuple[str, list[str], bool] | None:
    """``(script, its arguments, may be a binary)`` when a package manager runs a script, else None."""
    if len(words) < 2:
        return None
    tool, sub, rest = words[0], words[1], words[2:]
    if tool == "npm":
        if sub in ("test", "t", "tst", "start", "stop", "restart"):
            return ("test" if sub in ("t", "tst") else sub), rest, False
        if sub in ("run", "run-script") and rest:
            return rest[0], rest[1:], False
        return None
    if tool in ("pnpm", "yarn", "bun") and sub == "run" and rest:
        return rest[0], rest[1:], tool != "npm"
    if tool == "pnpm" and sub not in _PNPM_OWN:
        return sub, rest, True
    if tool == "yarn" and sub not in _YARN_OWN:
        return sub, rest, True
    return None


def canonical(segment: str, roots: Sequence[str] = ()) -> tuple[Command, ...]:
    """What one command segment runs (a script call may also run a binary of that name: two commands)."""
    words = _unwrap(_words(segment.strip()))
    if not words:
        return ()
    script = _script_call(words)
    if script is not None:
        name, rest, binary = script
        passed = rest[rest.index("--") + 1:] if "--" in rest else rest
        found = [Command(f"script:{name}", _args(passed, roots))]
        if binary:
            found.append(Command(name, _args(rest, roots)))
        return tuple(found)
    head = words[0]
    if head in _SUBCOMMAND_TOOLS:
        rest = _after_flags(words[1:])
        if rest:
            return (Command(f"{head} {rest[0]}", _args(rest[1:], roots)),)
    return (Command(head, _args(words[1:], roots)),)


def segments(command: str) -> list[str]:
    """The segments of a command line or script (``&&``, ``||``, ``;``, ``|``, line breaks)."""
    parts = [command]
    for separator in _SEPARATORS:
        parts = [piece for part in parts for piece in part.split(separator)]
    return [p.strip() for p in parts if p.strip()]


def term_commands(term: str, scripts: Mapping[str, str], roots: Sequence[str] = ()) -> tuple[Command, ...]:
    """What a query term names as a command, with a script's own command when ``scripts`` says what it runs;
    () when the term is no command (its runner is none of the known ones and no wrapper or script call)."""
    if len(term) > 400 or any(s in term for s in ("&&", "||", ";", "|", "\n")):
        return ()
    words = _words(term)
    if not words:
        return ()
    found = canonical(term, roots)
    wrapped = _unwrap(list(words)) != words
    if not found or not (wrapped or any(c.runner.startswith("script:") for c in found)
                         or found[0].runner.split(" ")[0] in _RUNNERS):
        return ()
    out: list[Command] = []
    scripted = {c.runner[len("script:"):] for c in found if c.runner.startswith("script:")}
    for command in found:
        if command.runner in scripted and (command.runner in scripts or command.runner in _LIFECYCLE):
            continue  # ``pnpm test``: the script, not a binary named test
        out.append(command)
        body = scripts.get(command.runner[len("script:"):]) if command.runner.startswith("script:") else None
        parts = segments(body) if body else []
        if len(parts) == 1:
            out.extend(Command(c.runner, c.args + command.args) for c in canonical(parts[0], roots))
    return tuple(dict.fromkeys(out))


def pieces(commands: Sequence[Command]) -> tuple[str, ...]:
    """Lower-case strings a recorded command running one of ``commands`` holds (for SQL ``instr``): what the
    commands run first, then the script calls."""
    out: dict[str, None] = {}
    for command in sorted(commands, key=lambda c: c.runner.startswith("script:")):
        if command.runner.startswith("script:"):
            name = command.runner[len("script:"):]
            invocations = [f"npm run {name}", f"pnpm {name}", f"pnpm run {name}", f"yarn {name}",
                           f"yarn run {name}", f"bun run {name}"]
            if name in ("test", "start", "stop", "restart"):
                invocations.insert(0, f"npm {name}")
            out.update(dict.fromkeys(invocations))
            continue
        specific = [a for a in command.args if len(a) >= 4 and any(not ch.isalpha() for ch in a)]
        if specific:
            out.update(dict.fromkeys(specific))
        else:
            runner = command.runner.split(" ")[-1] if command.runner.startswith("go ") else command.runner
            out[" ".join((runner, *command.args)) if command.args else runner] = None
    return tuple(p.lower() for p in out)[:PIECES_PER_TERM]


def runs(recorded: str, commands: Sequence[Command], roots: Sequence[str] = ()) -> bool:
    """Whether the recorded command (a line or a script) runs one of ``commands``: a segment with the same runner
    and every argument of it."""
    if not commands or not recorded:
        return False
    for segment in segments(recorded):
        for found in canonical(segment, roots):
            for wanted in commands:
                if found.runner == wanted.runner and set(wanted.args) <= set(found.args):
                    return True
    return False


def calls_script(terms: Iterable[str]) -> bool:
    """Whether a term calls a package manager (``npm``, ``pnpm``, ``yarn``, ``bun``): only then is what its
    scripts run read (:func:`package_scripts`)."""
    return any(word in ("npm", "pnpm", "yarn", "bun") for term in terms for word in term.split()[:2])


def package_scripts(roots: Iterable[str], *, check: Callable[[], object] | None = None) -> dict[str, str]:
    """The ``scripts`` of the ``package.json`` at each root (the first root that names a script wins), read-only
    and bounded: a regular file (never through a symbolic link), at most :data:`PACKAGE_JSON_CAP` bytes, UTF-8
    JSON. A missing, huge, unreadable or odd file gives nothing."""
    found: dict[str, str] = {}
    for root in list(dict.fromkeys(roots))[:PACKAGE_ROOTS]:
        for name, body in _scripts_at(os.path.join(root, "package.json"), check).items():
            if name not in found and len(found) < SCRIPTS_KEPT:
                found[name] = body
    return found


def _scripts_at(path: str, check: Callable[[], object] | None) -> dict[str, str]:
    try:
        with contextlib.closing(regular_file_chunks(path, PACKAGE_JSON_CAP + 1, check=check, follow=False)) as read:
            data = b"".join(read)
    except OSError:
        return {}
    if len(data) > PACKAGE_JSON_CAP:
        return {}
    try:
        parsed = load_json(data.decode("utf-8"))  # bounded in length and depth
    except UnicodeDecodeError:
        return {}
    scripts = parsed.get("scripts") if isinstance(parsed, dict) else None
    if not isinstance(scripts, dict):
        return {}
    return {k: v for k, v in scripts.items()
            if isinstance(k, str) and isinstance(v, str) and 0 < len(k) <= 64 and 0 < len(v) <= SCRIPT_CHARS}
