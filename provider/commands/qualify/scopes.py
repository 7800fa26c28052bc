"""Qualification scopes: the scope a report is issued for, and the fixture histories that stand in for it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

#: Repositories whose scopes are qualified by default (the fixture's two main repositories).
DEFAULT_REPOS: Final[tuple[str, ...]] = ("alpha-svc", "beta-web")
#: The fixture's agents and the Obelisk sources they write (manifest ``agents``).
FIXTURE_AGENTS: Final[dict[str, tuple[str, ...]]] = {"claude-agent": ("claude",), "codex-agent": ("codex",)}


@dataclass(frozen=True)
class Cell:
    """One fixture history: the fixture agent(s) writing the scope's sources, in one fixture repository."""

    agents: tuple[str, ...]
    repo: str


@dataclass(frozen=True)
class QualifyScope:
    """The scope a report is issued for, and the fixture histories (cells) that stand in for its own.

    Each cell is qualified with its own temporary config that binds this scope's ids and sources to the
    cell's repository roots, so every case is a same-agent, same-repository question; metrics are pooled.
    """

    agent_id: str
    project_id: str
    repository_id: str
    sources: tuple[str, ...]
    cells: tuple[Cell, ...]

    @property
    def label(self) -> str:
        return f"{self.agent_id}-{self.repository_id}"

    def public(self) -> dict[str, Any]:
        return {"agent_id": self.agent_id, "project_id": self.project_id,
                "repository_id": self.repository_id, "sources": list(self.sources)}


def _cells_for(sources: Sequence[str]) -> tuple[Cell, ...]:
    agents = tuple(a for a, srcs in FIXTURE_AGENTS.items() if set(srcs) & set(sources))
    return tuple(Cell(agents, repo) for repo in DEFAULT_REPOS)


def default_scopes() -> list[QualifyScope]:
    """One scope per fixture agent, qualified on that agent's histories in both fixture repositories."""
    return [QualifyScope(agent_id=agent, project_id="fixture", repository_id="fixture", sources=sources,
                         cells=_cells_for(sources)) for agent, sources in FIXTURE_AGENTS.items()]


def operator_scope(agent_id: str, project_id: str, repository_id: str, sources: Sequence[str]) -> QualifyScope:
    """The operator's scope, qualified on the fixture histories of the agent(s) writing the same sources."""
    known = {s for srcs in FIXTURE_AGENTS.values() for s in srcs}
    if not sources or not set(sources) <= known:
        raise ValueError(f"qualification corpora exist for these sources only: {', '.join(sorted(known))}")
    return QualifyScope(agent_id=agent_id, project_id=project_id, repository_id=repository_id,
                        sources=tuple(dict.fromkeys(sources)), cells=_cells_for(sources))
