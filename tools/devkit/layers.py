"""The package's import graph and the size of its functions, read from the source (``ast``), nothing imported.

``tests/unit/test_layers.py`` holds the package to its layers with these functions, and ``tools/layers``
prints the same graph for a person (and for any checkout, such as an old commit's, to compare). Layers, lowest
first, are drawn in provider/README.md.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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
UNPLACED = len(LAYERS)


@dataclass(frozen=True)
class Edge:
    """``src`` imports ``dst`` (module names relative to the package), taking ``names`` from it, at ``line``."""

    src: str
    dst: str
    names: tuple[str, ...]
    line: int


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> int:
    """The rank of ``module``'s layer in LAYERS, or UNPLACED."""
    for rank, (_, members) in enumerate(LAYERS):
        if any(module == m or module.startswith(m + ".") for m in members):
            return rank
    return UNPLACED


def layer_name(rank: int) -> str:
    return LAYERS[rank][0] if rank < UNPLACED else "(no layer)"


def modules(root: Path) -> dict[str, Path]:
    return {module_name(root, p): p for p in sorted(root.rglob("*.py"))}


def _imports_of(root: Path, path: Path, known: set[str]) -> Iterator[Edge]:
    src = module_name(root, path)
    own = src.split(".")
    package = own if path.name == "__init__.py" else own[:-1]
    if path.name == "__init__.py" and own == ["__init__"]:
        package = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
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
                yield Edge(src, sub, (), node.lineno)
            rest = tuple(n for n in names if f"{target}.{n}".strip(".") not in known)
            if rest and target in known:
                yield Edge(src, target, rest, node.lineno)
        elif target in known or target == "":
            yield Edge(src, target or "__init__", names, node.lineno)


def edges(root: Path) -> list[Edge]:
    """Every import of one package module by another, imports inside functions included."""
    found = modules(root)
    known = set(found)
    return [edge for path in found.values() for edge in _imports_of(root, path, known) if edge.dst != edge.src]


def upward(found: list[Edge]) -> list[Edge]:
    """Imports from a lower layer into a higher one (a module in no layer is in none of them)."""
    return [e for e in found if UNPLACED > layer_of(e.dst) > layer_of(e.src)]


def private_names(found: list[Edge]) -> list[tuple[Edge, str]]:
    return [(e, n) for e in found for n in e.names if n.startswith("_") and not n.startswith("__")]


def circles(found: list[Edge]) -> list[list[str]]:
    """The modules that import each other in a circle (strongly connected components of two or more)."""
    graph: dict[str, set[str]] = {}
    for e in found:
        graph.setdefault(e.src, set()).add(e.dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    result: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan
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
                result.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return result


@dataclass(frozen=True)
class Function:
    """A function's size: its lines and its decision points plus one (McCabe's count, as radon counts it)."""

    module: str
    name: str
    lines: int
    complexity: int


_DECISIONS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.IfExp, ast.ExceptHandler, ast.match_case)


def _complexity(node: ast.AST) -> int:
    """Decision points of ``node``'s own body (a nested function counts on its own), plus one."""
    count = 1
    todo = list(ast.iter_child_nodes(node))
    while todo:
        child = todo.pop()
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(child, _DECISIONS):
            count += 1
        elif isinstance(child, ast.BoolOp):
            count += len(child.values) - 1
        elif isinstance(child, ast.comprehension):
            count += 1 + len(child.ifs)
        todo.extend(ast.iter_child_nodes(child))
    return count


def functions(root: Path) -> list[Function]:
    """Every function and method of the package (nested ones on their own), largest complexity first."""
    found: list[Function] = []
    for name, path in modules(root).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append(Function(name, node.name, lines, _complexity(node)))
    return sorted(found, key=lambda f: (-f.complexity, -f.lines, f.module, f.name))
