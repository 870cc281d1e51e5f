"""A kernel region's scalar ops as C statements, from each op's `CExpr` (ir/ops/table.py).

A kernel computes array elements, so every op has NumPy's semantics here (the
templates say so); the region's values become `const` locals named after their
IR ids, so the source reads like the optimized dump.
"""
from __future__ import annotations

from ...errors import CompileError
from ...ir.core import Graph, Node, Value
from ...ir.ops import OPS, CExpr, lowering_for
from ...ir.types import ScalarType
from .csource import Source, c_literal, c_type


def local_name(v: Value) -> str:
    """The C name of region value `v`."""
    return f"v{v.id}"


def emit_region(src: Source, region: Graph, params: list[str]) -> list[str]:
    """Statements computing `region` (a kernel: scalar params in, scalar outputs yielded)
    from the C expressions `params`; the C expressions of its outputs."""
    names: dict[Value, str] = dict(zip(region.params, params))
    for node in region.nodes:
        (out,) = node.outputs
        operands = [names[v] for v in node.inputs]
        expression = c_expression(node.op, node.attrs, operands,
                                  [v.type for v in node.inputs], out.type, node.loc)
        name = local_name(out)
        src.line(f"const {c_type(out.type)} {name} = {expression};")
        names[out] = name
    return [names[v] for v in region.outputs]


def c_expression(op: str, attrs: dict, operands: list[str], types: list[ScalarType],
                 result: ScalarType, loc, where: str = "inside a GPU kernel",
                 python: bool = False) -> str:
    """`op` on the C expressions `operands` (of `types`), from its `CExpr` (its
    `cuda_python` one where `python` semantics differ: python_lowering); a CompileError
    saying `where` it cannot run if it has none."""
    lowering = OPS[op].lowering("cuda")
    template = python_lowering(op, attrs, types) if python else None
    if template is None and isinstance(lowering, dict):
        template = lowering_for(lowering, types[0] if types else result)
    if types and getattr(types[0], "is_complex", False) and not _cpu_computes(op, types[0]):
        raise CompileError(f"'{op}' has no GPU lowering for operands of type {types[0]}", loc)
    if not isinstance(template, CExpr):
        raise CompileError(f"'{op}' cannot run {where}", loc)
    value = c_literal(attrs["value"], result) if op == "const" else ""
    return template.template.format(*operands, T=c_type(result), value=value,
                                    attrs=_AttrFlags(attrs))


def python_lowering(op: str, attrs: dict, types: list[ScalarType]) -> CExpr | None:
    """The op's `cuda_python` template for Python's semantics on operands of `types` (none
    with NumPy's: attr `numpy`)."""
    if attrs.get("numpy") or not types:
        return None
    return lowering_for(OPS[op].cuda_python, types[0])


def numpy_computes(node: Node) -> bool:
    """Whether the CPU computes `node` as its `CExpr` does, NumPy's way: with NumPy's
    semantics (attr `numpy`, ops/strong.py), or on operands whose Python semantics are
    NumPy's. Those of a Python complex are not where the op has a NumPy lowering of its own:
    `abs`, `/` and `**` are CPython's algorithms (backend/llvm/python_complex.py)."""
    types = [v.type for v in node.inputs]
    if node.attrs.get("numpy") or not any(getattr(t, "is_complex", False) for t in types):
        return True
    return lowering_for(OPS[node.op].llvm_numpy, types[0]) is None


def _cpu_computes(op: str, t: ScalarType) -> bool:
    """Whether the CPU backend computes `op` on complex operands of type `t`: a '*' template
    (a C operator, which complexes.h overloads: `+`, `==`) takes complex numbers only then
    (`<` of complex numbers is refused on both)."""
    return any(lowering_for(table, t) is not None for table in (OPS[op].llvm_numpy, OPS[op].llvm))


class _AttrFlags(dict):
    """A node's attrs as C int literals for a template's `{attrs[name]}`: 1 where set, 0
    where false or absent (pow's `sqrt_at_half`, ops/scalar.py)."""

    def __init__(self, attrs: dict):
        super().__init__({k: int(bool(v)) for k, v in attrs.items() if isinstance(v, bool)})

    def __missing__(self, key):
        return 0


def needs_error_flag(region: Graph) -> bool:
    """Whether the region's C code records errors in `astjit_error` (prelude.py)."""
    return any("astjit_error" in template.template
               for node in region.nodes
               for template in _templates(node.op))


def _templates(op: str) -> list[CExpr]:
    lowering = OPS[op].lowering("cuda")
    return list(lowering.values()) if isinstance(lowering, dict) else []
