"""The import graph of src/astjit: no cycles, and the dependency direction STYLE.md asks for.

Edges are the `import` and `from ... import` statements of every module, at module level or
inside functions (a function-level import is still a dependency); imports under
`if TYPE_CHECKING:` are not. `from pkg import name` counts as an edge to `pkg.name` where that
is a module, else to `pkg`.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import astjit

ROOT = Path(astjit.__file__).parent


def module_files() -> dict[str, Path]:
    """Dotted module name -> its file, for every module of the astjit package."""
    modules = {}
    for path in ROOT.rglob("*.py"):
        parts = ("astjit", *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _type_checking_nodes(nodes: list[ast.AST]) -> set[int]:
    skipped = set()
    for node in nodes:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(sub) for sub in ast.walk(node))
    return skipped


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The astjit modules `module` imports."""
    nodes = [node for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, (ast.If, ast.Import, ast.ImportFrom))]  # one walk of the tree
    skipped = _type_checking_nodes(nodes)
    targets = set()
    for node in nodes:
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            target = _absolute(module, path.name == "__init__.py", node)
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                targets.add(candidate if candidate in modules else target)
        elif isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
    return {t for t in targets if t in modules and t != module}


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Parsed once per process: the four tests that read it share it (reading every module's
    source and walking its syntax tree is most of this file's CPU time). The tests do not
    mutate it."""
    modules = module_files()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_cycles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]


def _crossings(source: str, forbidden: tuple[str, ...]) -> list[tuple[str, str]]:
    return sorted((module, target) for module, targets in import_graph().items()
                  if module.startswith(source) for target in targets
                  if target.startswith(forbidden))


def test_ir_imports_neither_frontend_nor_backend():
    assert _crossings("astjit.ir", ("astjit.frontend", "astjit.backend")) == []


def test_backend_never_imports_frontend():
    assert _crossings("astjit.backend", ("astjit.frontend",)) == []


def test_emitter_core_imports_no_lowering():
    """The LLVM emitter core imports only IR helpers beneath it, never a lowering."""
    backend = {t for t in import_graph()["astjit.backend.llvm.emitter"]
               if t.startswith("astjit.backend")}
    assert backend <= {"astjit.backend.llvm.lltypes", "astjit.backend.llvm.vecmath",
                       "astjit.backend.llvm.folding", "astjit.backend.llvm.unused",
                       "astjit.backend.llvm.aggregate_abi"}


def test_the_runtime_caches_key_covers_what_the_llvm_backend_imports():
    """The runtime cache keys a checkout by the files outside `NOT_RUNTIME` alone: no module
    the LLVM backend imports, directly or through others, may be in those folders."""
    from astjit.backend.llvm.jit.runtime_cache import NOT_RUNTIME

    graph = import_graph()
    reached = set()
    stack = [module for module in graph if module.startswith("astjit.backend.llvm")]
    while stack:
        module = stack.pop()
        if module not in reached:
            reached.add(module)
            stack.extend(graph[module])
    skipped = tuple("astjit." + folder.replace("/", ".") for folder in sorted(NOT_RUNTIME))
    assert len(reached) > 100  # the walk found the backend
    assert sorted(m for m in reached if m.startswith(skipped)) == []
