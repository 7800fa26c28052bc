"""A repository's remote URLs normalised to host and path (``commands.identity.normalize_remote``) before they
are digested: every spelling of one remote gives one form, different repositories stay different, credentials
never reach the digest input, and no input raises (identities of real git repositories:
tests/integration/test_lifecycle.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from obelisk_session_evidence.commands.identity import normalize_remote


@pytest.mark.parametrize("url", [
    "git@github.com:acme/acme-api.git",
    "https://github.com/acme/acme-api",
    "ssh://git@github.com/acme/acme-api.git",
    "https://github.com/acme/acme-api.git/",
    "https://user:secret-token@github.com/acme/acme-api.git",
    "ssh://git@github.com:22/acme/acme-api.git",
    "git://github.com/acme/acme-api.git",
    "HTTPS://GitHub.com/acme/acme-api",
    "http://github.com//acme/acme-api.git",
    "  git@github.com:acme/acme-api.git\n",
    "git@github.com:/acme/acme-api.git",
])
def test_remote_forms_normalise_to_host_and_path(url: str) -> None:
    assert normalize_remote(url) == "github.com/acme/acme-api"


@pytest.mark.parametrize(("url", "expected"), [
    ("git@gitlab.example.com:group/sub/proj.git", "gitlab.example.com/group/sub/proj"),
    ("https://gitlab.example.com:8443/group/proj", "gitlab.example.com/group/proj"),
    ("ssh://git@[::1]/repo.git", "::1/repo"),
    ("/srv/git/acme-api.git", "/srv/git/acme-api"),
    ("file:///srv/git/acme-api.git", "/srv/git/acme-api"),
    ("ssh://git@example.com/~alice/proj.git", "example.com/alice/proj"),
    ("", None),
    ("   ", None),
])
def test_remote_normalisation_edge_cases(url: str, expected: str | None) -> None:
    assert normalize_remote(url) == expected


def test_different_repositories_stay_different() -> None:
    assert normalize_remote("git@github.com:acme/acme-web.git") != normalize_remote(
        "git@github.com:acme/acme-api.git")
    assert normalize_remote("git@github.com:acme/acme-api.git") != normalize_remote(
        "git@gitlab.com:acme/acme-api.git")


@given(st.text(max_size=200))
def test_normalise_remote_never_raises(url: str) -> None:
    result = normalize_remote(url)
    assert result is None or (isinstance(result, str) and result)


def test_credentials_never_reach_the_digest_input() -> None:
    normalized = normalize_remote("https://alice:ghp_secret@github.com/acme/acme-api.git")
    assert normalized is not None
    assert "ghp_secret" not in normalized
    assert "alice" not in normalized
