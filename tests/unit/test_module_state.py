"""No module of the package remembers anything between requests: what a warm process may remember lives in one
``service.WarmState`` that its caller creates and passes (provider/README.md, "The warm path").

Read from the source, as tests/unit/test_layers.py reads imports. A module-level container (a dict, list or set
display or comprehension, or ``dict()``, ``OrderedDict()``, ``Counter()``, ... ) that a function mutates is
module state, and so is a ``functools.cache``/``lru_cache`` function fed anything but constants: only a lazily
compiled constant (a regular expression of the code's own text, a class built once) may be cached at module level.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PROVIDER = Path(__file__).resolve().parents[2] / "provider"

#: Modules that still keep state, and why (strict: a module that no longer does must leave this list).
PENDING: dict[str, str] = {}
#: Cached functions fed only constants in a way this check does not follow (a loop over a constant table, a
#: function returning one), by module.
LAZY_CONSTANTS: dict[str, frozenset[str]] = {
    "redaction/redact.py": frozenset({"_trigger_index", "_joinable"}),  # the rule tuples
    "retrieval/outcome.py": frozenset({"_compiled"}),  # the patterns of _INNER
}
_CONTAINERS = frozenset({"dict", "list", "set", "OrderedDict", "defaultdict", "Counter", "deque"})
_MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "pop", "popitem", "clear",
                       "remove", "discard", "move_to_end", "appendleft", "popleft", "sort", "reverse"})
_CACHES = frozenset({"cache", "lru_cache"})


def _name(node: ast.expr) -> str | None:
    """``cache`` for ``cache``, ``functools.cache`` and ``lru_cache(maxsize=8)``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _containers(tree: ast.Module) -> set[str]:
    found = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AnnAssign) and node.value is not None else []
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        mutable = isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp) or (
            isinstance(value, ast.Call) and _name(value) in _CONTAINERS)
        if mutable:
            found.update(t.id for t in targets if isinstance(t, ast.Name))
    return found


def _constants(tree: ast.Module) -> set[str]:
    """Module-level names bound to a constant (a string, number or tuple of them)."""
    def constant(value: ast.expr) -> bool:
        return isinstance(value, ast.Constant) or (isinstance(value, ast.Tuple) and all(map(constant, value.elts)))

    return {t.id for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
            and constant(node.value) for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(t, ast.Name)}


def module_state(source: str, lazy: frozenset[str] = frozenset()) -> list[str]:
    """What in ``source`` keeps state at module level, one line each (``lazy``: cached functions known to be fed
    constants only)."""
    tree = ast.parse(source)
    containers, constants = _containers(tree), _constants(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found += [f"line {node.lineno}: global {', '.join(node.names)}"]
        target = node.value if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del) else \
            node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr in _MUTATORS else None
        if isinstance(target, ast.Name) and target.id in containers:
            found.append(f"line {node.lineno}: {target.id} is mutated")
    cached = {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.args.args
              and any(_name(d) in _CACHES for d in node.decorator_list)} - lazy
    for statement in tree.body:  # lru_cache(...)(function) at module level (one inside a function is its own)
        if not isinstance(statement, ast.FunctionDef | ast.ClassDef):
            found += [f"line {node.lineno}: a cache made at module level" for node in ast.walk(statement)
                      if isinstance(node, ast.Call) and _name(node.func) in _CACHES and node.args]
    found += [f"{name} caches what any module gives it" for name in sorted(cached) if not name.startswith("_")]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in cached:
            given = [*node.args, *(k.value for k in node.keywords)]
            if not all(isinstance(a, ast.Constant) or (isinstance(a, ast.Name) and a.id in constants)
                       for a in given):
                found.append(f"line {node.lineno}: {node.func.id} caches what it is given")
    return found


def _modules() -> dict[str, str]:
    return {str(p.relative_to(PROVIDER)): p.read_text(encoding="utf-8") for p in sorted(PROVIDER.rglob("*.py"))}


def test_no_module_keeps_state_between_requests() -> None:
    found = {name: state for name, source in _modules().items()
             if (state := module_state(source, LAZY_CONSTANTS.get(name, frozenset())))}
    kept = {name: state for name, state in found.items() if name not in PENDING}
    assert not kept, "\n".join(f"{name}: {line}" for name, state in kept.items() for line in state)
    assert sorted(found) == sorted(PENDING), "a PENDING module no longer keeps state: take it off the list"


@pytest.mark.parametrize("source", [
    "from collections import OrderedDict\n_M = OrderedDict()\ndef f(k, v):\n    _M[k] = v\n",
    "_SEEN = set()\ndef f(x):\n    _SEEN.add(x)\n",
    "_STATS = {'hits': 0}\ndef f():\n    _STATS['hits'] += 1\n",
    "_N = 0\ndef f():\n    global _N\n    _N += 1\n",
    "import functools\n@functools.cache\ndef f(path):\n    return path\ndef g(p):\n    return f(p)\n",
    "import functools\n@functools.lru_cache(maxsize=8)\ndef f(spec, *, query):\n    return spec\n"
    "def g(s):\n    return f(s, query=True)\n",
    "from functools import lru_cache\ndef f(x):\n    return x\ng = lru_cache(maxsize=4)(f)\n",
    "import functools\n@functools.lru_cache(maxsize=8)\ndef tokens(spec):\n    return spec\n",
])
def test_the_check_sees_module_state(source: str) -> None:
    assert module_state(source)


def test_a_lazily_compiled_constant_is_no_state() -> None:
    source = ("import functools, re\n_P = r'a+'\n@functools.cache\ndef _compiled(p):\n    return re.compile(p)\n"
              "def f(t):\n    return _compiled(_P).search(t)\n_TABLE = {'a': 1}\ndef g(k):\n    return _TABLE[k]\n")
    assert module_state(source) == []
