"""The package's imports flow one way: each module imports only its own layer and the layers below it.

Layers, lowest first (provider/README.md draws them): the base (errors, paths, inputs, outputs, digests,
redaction, the contract) -> admission -> templates -> index -> retrieval -> bounding -> service -> operator
commands -> cli. Within a layer a module may import another, but never in a circle, and no module takes a
private (``_``-prefixed) name from another. Imports inside functions count like any other.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.devkit.layers import LAYERS, UNPLACED, circles, edges, layer_of, modules, private_names, upward

PROVIDER = Path(__file__).resolve().parents[2] / "provider"


def test_every_module_has_a_layer() -> None:
    assert [name for name in modules(PROVIDER) if layer_of(name) == UNPLACED] == [], "add them to LAYERS"


def test_no_import_runs_up_a_layer() -> None:
    found = [f"{e.src} (layer {LAYERS[layer_of(e.src)][0]}) imports {e.dst} (layer {LAYERS[layer_of(e.dst)][0]}), "
             f"line {e.line}" for e in upward(edges(PROVIDER))]
    assert not found, "\n".join(found)


def test_no_module_takes_a_private_name_from_another() -> None:
    found = [f"{e.src} takes {name} from {e.dst}, line {e.line}" for e, name in private_names(edges(PROVIDER))]
    assert not found, "\n".join(found)


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert not circles(edges(PROVIDER))


@pytest.mark.parametrize(("src", "dst"), [("index.scope_state", "retrieval.engine"),
                                          ("retrieval.snippets", "bounding.bound")])
def test_the_check_sees_an_upward_import(src: str, dst: str) -> None:
    """The layer check itself: an import from a lower layer to a higher one is one it reports."""
    assert layer_of(dst) > layer_of(src)


#: Shipped modules no command imports, each with its reason. Development code (the evaluation, the corpus,
#: the large builder, the replay fixture) lives in ``tools/devkit/`` and never ships.
SHIPPED_UNRUN = {
    "templates.verify.manifest": "writes sql_templates/verified.json (tools/verify-templates); it sits beside "
                                 "the rules whose digest it records",
}


def test_every_shipped_module_is_run_by_a_command() -> None:
    """The wheel carries only what ``query``, ``serve``, the operator commands, ``demo`` and ``qualify`` import."""
    graph: dict[str, set[str]] = {}
    for e in edges(PROVIDER):
        graph.setdefault(e.src, set()).add(e.dst)
    reached: set[str] = set()
    todo = ["cli", "__main__", "__init__"]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            parts = name.split(".")
            todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # a package's __init__ runs first
            todo.extend(graph.get(name, ()))
    unrun = sorted(set(modules(PROVIDER)) - reached - set(SHIPPED_UNRUN))
    assert not unrun, f"shipped, but no command imports them (move them to tools/devkit/ or tests/): {unrun}"


def test_the_checks_see_an_upward_import_a_circle_and_a_private_name(tmp_path: Path) -> None:
    """The graph the tests read, on a small package planted with each fault."""
    for name, text in {"index/__init__.py": "", "retrieval/__init__.py": "",
                       "index/state.py": "from ..retrieval.engine import _roots\n",
                       "retrieval/engine.py": "def _roots():\n    from ..index import state\n    return state\n",
                       "errors.py": "from .index import state\n"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = edges(tmp_path)
    assert {(e.src, e.dst) for e in upward(found)} == {("index.state", "retrieval.engine"), ("errors", "index.state")}
    assert circles(found) == [["index.state", "retrieval.engine"]]
    assert [(e.src, n) for e, n in private_names(found)] == [("index.state", "_roots")]
