"""What a scoped freshness walk may pass over, decided from names alone: a Claude Code project directory whose
slug cannot hold the root (the matching is lossy, so conservative: a sibling may be walked, a path below the root
never skipped), and the Codex date directories older than two days before the last build (the walks themselves,
on transcript trees: tests/integration/test_freshness_scoped.py)."""

from __future__ import annotations

import time

from obelisk_session_evidence.index.freshness.candidates import cutoff_day, slug_can_hold
from obelisk_session_evidence.index.freshness.walks import claude_slug

NOW_MS = 1_800_000_000_000.0


def test_claude_slug_matching_is_conservative() -> None:
    root = "/home/u/src/alpha.svc"
    slug = claude_slug(root)
    assert slug == "-home-u-src-alpha-svc"
    assert slug_can_hold(slug, slug)
    assert slug_can_hold(claude_slug(root + "/pkg/x_y"), slug)  # any path below the root
    assert slug_can_hold(claude_slug("/home/u/src/alpha-svc"), slug)  # lossy: a sibling may be walked
    assert not slug_can_hold(claude_slug("/home/u/src/beta"), slug)
    assert not slug_can_hold(claude_slug("/home/u/src"), slug)
    long_root = "/r/" + "d" * 230
    cut = claude_slug(long_root)[:200] + "-1a2b3c"  # Claude Code's cut name with a hash suffix
    assert slug_can_hold(cut, claude_slug(long_root))
    assert slug_can_hold(claude_slug("/r/" + "d" * 198)[:200] + "-ffff", claude_slug("/r/" + "d" * 198))


def test_cutoff_is_two_days_before_the_last_build() -> None:
    assert cutoff_day(None) is None
    day = cutoff_day(NOW_MS)
    assert day == tuple(time.gmtime(NOW_MS / 1000 - 2 * 86_400)[:3])
