"""The on-disk verdict cache and the sqlglot version lookup. Nothing here imports sqlglot: a warm start with
every template already verified must not pay for it."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import re
from pathlib import Path

#: Bump when the rules change in a way the verifier's own source digest would not show.
RULESET_VERSION = 1

CACHE_FILENAME = "template-verdicts.json"
_CACHE_FORMAT = 1
_CACHE_MAX_BYTES = 256 * 1024
_CACHE_MAX_ENTRIES = 512
_VERSION_RE = re.compile(r"[0-9][0-9A-Za-z.+!_]*")
_KEY_RE = re.compile(r"[0-9a-f]{64}")


def sqlglot_version() -> str | None:
    """The installed sqlglot version, read without importing sqlglot (from its dist-info directory name,
    else from importlib.metadata, which costs ~20 ms)."""
    try:
        spec = importlib.util.find_spec("sqlglot")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin:
        site = Path(spec.origin).resolve().parent.parent
        try:
            found = [p.name for p in site.iterdir()
                     if p.name.startswith("sqlglot-") and p.name.endswith(".dist-info")]
        except OSError:
            found = []
        if len(found) == 1:
            candidate = found[0][len("sqlglot-"):-len(".dist-info")]
            if _VERSION_RE.fullmatch(candidate):
                return candidate
    try:
        metadata = importlib.import_module("importlib.metadata")
        found_version: str = metadata.version("sqlglot")
    except Exception:  # noqa: BLE001 - PackageNotFoundError or a broken install: version unknown
        return None
    return found_version


def verifier_salt() -> str | None:
    """The ruleset version and the digest of every module of this package (sorted by name): a verdict
    cached by other rules is never reused."""
    digest = hashlib.sha256()
    try:
        for path in sorted(Path(__file__).parent.glob("*.py"), key=lambda p: p.name):
            digest.update(path.name.encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    except OSError:
        return None
    return f"{RULESET_VERSION}:{digest.hexdigest()}"


def verdict_key(digest: str, version: str, salt: str | None) -> str:
    return hashlib.sha256(f"{digest}\0{version}\0{salt}".encode()).hexdigest()


def resolve_cache_dir(cache_dir: Path | None) -> Path | None:
    if cache_dir is not None:
        return cache_dir
    try:
        platformdirs = importlib.import_module("platformdirs")
        return Path(platformdirs.user_cache_dir("obelisk-session-evidence"))
    except Exception:  # noqa: BLE001 - no cache directory only means no cache
        return None


def read_cache(directory: Path) -> set[str]:
    try:
        with open(directory / CACHE_FILENAME, "rb") as fh:
            raw = fh.read(_CACHE_MAX_BYTES + 1)
        if len(raw) > _CACHE_MAX_BYTES:
            return set()
        data = json.loads(raw)
    except (OSError, ValueError):
        return set()
    if not isinstance(data, dict) or data.get("format") != _CACHE_FORMAT:
        return set()
    verified = data.get("verified")
    if not isinstance(verified, list):
        return set()
    return {key for key in verified if isinstance(key, str) and _KEY_RE.fullmatch(key)}


def write_cache(directory: Path, keys: set[str]) -> None:
    """Write the verdicts atomically (temp file in the same directory, then rename); ignore any failure."""
    payload = json.dumps({"format": _CACHE_FORMAT, "verified": sorted(keys)[-_CACHE_MAX_ENTRIES:]})
    tmp: Path | None = None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        candidate = directory / f".{CACHE_FILENAME}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(candidate, flags, 0o600)
        tmp = candidate
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fh.fileno(), 0o600)
            fh.write(payload)
        os.replace(tmp, directory / CACHE_FILENAME)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
