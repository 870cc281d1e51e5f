"""The fast call path of a specialization taking containers the compiled entry cannot take
natively (a registered class's: backend/llvm/runtime/trees.py takes the others).

The entry of such a signature takes a container argument as its leaves (api.with_flat_entry),
so a call passing containers cannot go to it directly: the slow path (`Dispatcher.call_slow`)
binds the call, types every leaf, looks the specialization up and flattens. For each
such signature `make_tree_entry` generates (with `exec`) a Python function that does only
what the signature needs, in straight-line code:

    def tree_entry(p0=MISSING, p1=MISSING, /, *rest, **keywords):
        if rest or keywords or p1 is MISSING:
            return fallback(*given(p0, p1), *rest, **keywords)
        try:
            # p0: Linear{w: array<f64, 2>, b: array<f64, 1>}
            if type(p0) is not C_p0:
                raise MISMATCH
            p0_0 = p0.w
            p0_1 = p0.b
        except Exception:
            return fallback(p0, p1)
        try:
            return call(p0_0, p0_1, p1)
        except Rejected:
            return fallback(p0, p1)

It checks the structure: each container's class by identity, a tuple's, list's or
namedtuple's length (by unpacking), a dict's length and keys (by looking each up), an
object's attribute count and static attributes (by identity). The leaves are then
handed to the compiled entry (`call`, which rebuilds a container result), which checks
each of them natively, exactly as it checks flat arguments (backend/llvm/runtime/
wrapper.py: an `ndarray` itself of the right dtype and ndim, native byte order,
aligned; a float `float` itself ...). The entry of a tree signature is built with
`reject` as its fallback, which raises `Rejected`: a leaf it does not take sends the
call, with its original arguments, to `fallback` (the target the jitted entry had
before, ending in the slow path), as does any structure that differs or anything
raised while reading the structure. So a call the fast path does not take behaves
as it did before: same results, same errors, same specializations.

Known difference: an object (a model) whose attributes were set in another order is a
new specialization on the slow path; the fast path reads them by name, so it runs
the specialization already compiled (the same values reach the same code).
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from .ir.types import TupleType, Type


class Rejected(Exception):
    """Raised by the fallback of a tree signature's compiled entry: a leaf it does not take."""


def reject(*leaves: Any) -> Any:
    """The fallback compiled into a tree signature's entry (see the module's docstring)."""
    raise Rejected


class _Mismatch(Exception):
    """A structure that is not the signature's (raised and caught in the generated code)."""


MISSING = object()
"""The default of every generated parameter: a call with fewer positional arguments."""

MISMATCH = _Mismatch()

KINDS = ("tuple", "list", "namedtuple", "dict", "dataclass", "object", "registered")


def given(*args: Any) -> tuple:
    """The positional arguments a call gave (those not MISSING: a prefix)."""
    return tuple(a for a in args if a is not MISSING)


def make_tree_entry(types: tuple[Type, ...], call: Callable, fallback: Callable,
                    name: str = "tree_entry") -> Callable | None:
    """A function taking a positional call of argument types `types` (some of them
    containers) to `call` with the leaves, else to `fallback` with the call's arguments;
    None when some container has no fast check (then the slow path keeps the call)."""
    params = [f"p{i}" for i in range(len(types))]
    namespace: dict[str, Any] = {"call": call, "fallback": fallback, "given": given,
                                 "MISSING": MISSING, "MISMATCH": MISMATCH,
                                 "Rejected": Rejected, "__name__": __name__}
    lines: list[str] = []
    leaves: list[str] = []
    for p, t in zip(params, types):
        if isinstance(t, TupleType):
            lines.append(f"# {p}: {t}")
        if not _emit(p, t, lines, leaves, namespace):
            return None
    args = ", ".join(params)
    body = [f"def tree_entry({', '.join(p + '=MISSING' for p in params)}, /, *rest, **keywords):",
            f'    """The fast path of the signature ({", ".join(map(str, types))})."""',
            f"    if rest or keywords or {params[-1]} is MISSING:",
            f"        return fallback(*given({args}), *rest, **keywords)",
            "    try:",
            *("        " + line for line in lines),
            "    except Exception:",
            f"        return fallback({args})",
            "    try:",
            f"        return call({', '.join(leaves)})",
            "    except Rejected:",
            f"        return fallback({args})"]
    source = "\n".join(body) + "\n"
    exec(compile(source, f"<astjit tree entry {name}>", "exec"), namespace)  # noqa: S102
    entry = namespace["tree_entry"]
    entry.__name__ = entry.__qualname__ = name
    entry.source = source
    entry.namespace = namespace  # `call` is replaced when the general tier is compiled
    return entry


def _emit(x: str, t: Type, lines: list[str], leaves: list[str], namespace: dict) -> bool:
    """Checks of the value named `x` against `t` and the names of its leaves; False when
    `t` holds a container this cannot check."""
    if not isinstance(t, TupleType):
        leaves.append(x)  # checked by the compiled entry
        return True
    node = t.node
    kind = "tuple" if node is None else node.kind
    if kind not in KINDS:
        return False
    parts = [f"{x}_{i}" for i in range(len(t.elements))]
    cls = f"C_{x}"
    namespace[cls] = node.cls if node is not None else tuple

    def unpack(source: str) -> None:
        if parts:
            lines.append(f"{', '.join(parts)}, = {source}")
        else:
            lines.append(f"if len({source}):")
            lines.append("    raise MISMATCH")

    if kind in ("tuple", "list", "namedtuple"):
        lines.append(f"if type({x}) is not {cls}:")
        lines.append("    raise MISMATCH")
        unpack(x)
    elif kind == "dict":
        lines.append(f"if type({x}) is not dict or len({x}) != {len(parts)}:")
        lines.append("    raise MISMATCH")
        _lookup(x, x, parts, node.keys, lines, namespace)
    elif kind == "dataclass":
        lines.append(f"if type({x}) is not {cls}:")
        lines.append("    raise MISMATCH")
        for part, field in zip(parts, node.keys):
            if not field.isidentifier():
                return False
            lines.append(f"{part} = {x}.{field}")
    elif kind == "object":
        attributes = f"{x}_vars"
        lines.append(f"if type({x}) is not {cls}:")
        lines.append("    raise MISMATCH")
        lines.append(f"{attributes} = {x}.__dict__")
        lines.append(f"if len({attributes}) != {len(parts) + len(node.aux)}:")
        lines.append("    raise MISMATCH")
        _lookup(x, attributes, parts, node.keys, lines, namespace)
        for i, (key, value) in enumerate(node.aux):  # static attributes: the same objects
            namespace[f"S_{x}_{i}"], namespace[f"V_{x}_{i}"] = key, value
            lines.append(f"if {attributes}[S_{x}_{i}] is not V_{x}_{i}:")
            lines.append("    raise MISMATCH")
    else:  # registered: its flatten function, and the same aux data
        from .tree import _REGISTERED

        if node.cls not in _REGISTERED:
            return False
        namespace[f"F_{x}"], namespace[f"A_{x}"] = _REGISTERED[node.cls][0], node.aux
        lines.append(f"if type({x}) is not {cls}:")
        lines.append("    raise MISMATCH")
        lines.append(f"{x}_kids, {x}_aux = F_{x}({x})")
        lines.append(f"if {x}_aux != A_{x}:")
        lines.append("    raise MISMATCH")
        unpack(f"{x}_kids")
    return all(_emit(part, e, lines, leaves, namespace) for part, e in zip(parts, t.elements))


def _lookup(x: str, mapping: str, parts: list[str], keys: tuple, lines: list[str],
            namespace: dict) -> None:
    """`parts` read from the dict named `mapping` by `keys`: one `itemgetter` call for
    several (a C loop, where a Python lookup each cost the dict of 10 its 2x target)."""
    if len(parts) < 2:
        for i, (part, key) in enumerate(zip(parts, keys)):
            namespace[f"K_{x}_{i}"] = key
            lines.append(f"{part} = {mapping}[K_{x}_{i}]")
        return
    namespace[f"G_{x}"] = operator.itemgetter(*keys)
    lines.append(f"{', '.join(parts)} = G_{x}({mapping})")
