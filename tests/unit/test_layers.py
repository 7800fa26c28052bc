"""The package's imports flow one way: each module imports only its own layer and the layers below it.

Layers, lowest first (provider/README.md draws them): the base (errors, paths, inputs, outputs, digests,
redaction, the contract) -> admission -> templates -> index -> retrieval -> bounding -> service -> operator
commands -> cli. Within a layer a module may import another, but never in a circle, and no module takes a
private (``_``-prefixed) name from another. Imports inside functions count like any other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PROVIDER = Path(__file__).resolve().parents[2] / "provider"

#: (layer, the dotted modules or packages in it), lowest first.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("errors", "_version", "_resources", "paths", "inputs", "outputs", "digest", "progress",
              "redaction", "contract")),
    ("admission", ("admission",)),
    ("templates", ("templates",)),
    ("index", ("index",)),
    ("retrieval", ("retrieval",)),
    ("bounding", ("bounding",)),
    ("service", ("service",)),
    ("commands", ("commands", "fixtures")),
    ("cli", ("cli", "__main__", "__init__")),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PROVIDER).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> int:
    for rank, (_, members) in enumerate(LAYERS):
        if any(module == m or module.startswith(m + ".") for m in members):
            return rank
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS")


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PROVIDER.rglob("*.py"))}


def imports_of(path: Path, known: set[str]) -> Iterator[tuple[str, tuple[str, ...], int]]:
    """(imported module, names taken from it, line) for every import of a package module in ``path``."""
    own = module_name(path).split(".")
    package = own if path.name == "__init__.py" else own[:-1]
    if path.name == "__init__.py" and own == ["__init__"]:
        package = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and node.module.startswith("obelisk_session_evidence"):
                target = node.module.removeprefix("obelisk_session_evidence").lstrip(".")
            else:
                continue
            names = tuple(alias.name for alias in node.names)
            submodules = [f"{target}.{n}".strip(".") for n in names if f"{target}.{n}".strip(".") in known]
            if submodules:
                for sub in submodules:
                    yield sub, (), node.lineno
                rest = tuple(n for n in names if f"{target}.{n}".strip(".") not in known)
                if rest and target in known:
                    yield target, rest, node.lineno
            elif target in known or target == "":
                yield target or "__init__", names, node.lineno


def edges() -> list[tuple[str, str, tuple[str, ...], int]]:
    found = modules()
    known = set(found)
    return [(name, target, names, line) for name, path in found.items()
            for target, names, line in imports_of(path, known) if target != name]


def test_every_module_has_a_layer() -> None:
    for name in modules():
        layer_of(name)


def test_no_import_runs_up_a_layer() -> None:
    upward = [f"{src} (layer {LAYERS[layer_of(src)][0]}) imports {dst} (layer {LAYERS[layer_of(dst)][0]}), "
              f"line {line}" for src, dst, _, line in edges() if layer_of(dst) > layer_of(src)]
    assert not upward, "\n".join(upward)


def test_no_module_takes_a_private_name_from_another() -> None:
    private = [f"{src} takes {name} from {dst}, line {line}" for src, dst, names, line in edges()
               for name in names if name.startswith("_") and not name.startswith("__")]
    assert not private, "\n".join(private)


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph: dict[str, set[str]] = {}
    for src, dst, _, _ in edges():
        graph.setdefault(src, set()).add(dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                top = stack.pop()
                members.append(top)
                if top == node:
                    break
            if len(members) > 1:
                circles.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not circles, circles


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
    for src, dst, _, _ in edges():
        graph.setdefault(src, set()).add(dst)
    reached: set[str] = set()
    todo = ["cli", "__main__", "__init__"]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            parts = name.split(".")
            todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # a package's __init__ runs first
            todo.extend(graph.get(name, ()))
    unrun = sorted(set(modules()) - reached - set(SHIPPED_UNRUN))
    assert not unrun, f"shipped, but no command imports them (move them to tools/devkit/ or tests/): {unrun}"
