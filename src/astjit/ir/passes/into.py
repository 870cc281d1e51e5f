"""Kernels that write their result straight into the array an assignment copies it to.

`x[m] = 0` is `x[...] = where(m, 0, x)` (ops/advanced_index.py) and `x += y` is
`x[...] = x + y`: after fusion, a `fused` node F makes a new array that an
`array_assign D, F` copies into D, an array F also reads, and a release then gives
back. Writing F's results into D directly saves the new array (its page faults) and
the copy: `x[x < c] = 0` becomes one pass over x.

The pass (after fusion and row grouping: pipeline.FINAL) sets the Kernel field
`into` of such an F to the index of D among its inputs when:

- F is elementwise (no reduction) with one output, of D's type, and D is one of its
  inputs (so D is defined before F, and F's space has D's rank);
- F's output is used only by that assign (as its value) and by releases, not returned;
- the nodes between F and the assign neither read array elements nor raise (releases,
  shape queries, effect-free scalar ops): writing D earlier than the program does is
  then unseen, and no exception the program raises before the assign finds D changed;
- F's kernel cannot raise part-way (an integer `**` does, for a negative exponent),
  which would leave D partly written where NumPy raises before writing.

The backend (backend/llvm/fused.py) still checks at run time that D has the space's
shape and that no other input may overlap D's memory (unless it is D's own elements,
read at the very place they are written); otherwise it allocates as before. Backends
that ignore the field (CUDA, the interpreter, row groups) stay exact: the assign copies.
`array_assign` finds its value to be D's own elements and copies nothing.
"""
from __future__ import annotations

import dataclasses

from ..core import Graph, Module, Node, Value
from ..kernels import kernel_of
from ..ops import OPS
from ..types import ArrayType, ScalarType
from .effects import has_effects

SHAPE_QUERIES = frozenset({"array_dim", "array_shape", "array_size", "array_ndim"})


def write_into_targets(module: Module) -> Module:
    """Mark the `fused` nodes of every graph of `module` (and of their `if` / `while`
    regions) whose result an assignment copies into one of their inputs."""
    for graph in module.graphs.values():
        _mark_graph(graph)
    return module


def _mark_graph(graph: Graph) -> None:
    for node in graph.nodes:
        if node.op not in ("fused", "rowwise"):
            for region in node.regions:
                _mark_graph(region)
    uses: dict[Value, list[int]] = {}
    for k, node in enumerate(graph.nodes):
        for v in node.inputs:
            uses.setdefault(v, []).append(k)
    for i, node in enumerate(graph.nodes):
        spec = kernel_of(node)
        if spec is None or spec.reduce is not None or len(node.outputs) != 1 \
                or node.outputs[0] in graph.outputs or _may_raise(node.regions[0]):
            continue
        out = node.outputs[0]
        later = uses.get(out, [])
        if not later or any(graph.nodes[k].op != "array_release" for k in later[1:]):
            continue
        assign = graph.nodes[later[0]]
        if assign.op != "array_assign" or assign.inputs[1] is not out \
                or assign.inputs[0].type != out.type or assign.inputs[0] not in node.inputs:
            continue
        if not all(_harmless(between) for between in graph.nodes[i + 1:later[0]]):
            continue
        node.attrs["fused"] = dataclasses.replace(
            spec, into=node.inputs.index(assign.inputs[0]), reuse=None)


def _harmless(node: Node) -> bool:
    """Whether `node` neither reads array elements nor raises (nor writes)."""
    if node.op in ("array_release", "array_retain") or node.op in SHAPE_QUERIES:
        return True
    return (node.op in OPS and not node.regions and not has_effects(node)
            and not any(isinstance(v.type, ArrayType) for v in node.inputs))


def _may_raise(kernel: Graph) -> bool:
    """Whether a kernel's scalar ops may raise under NumPy's semantics (fused.py): an
    integer power, for a negative exponent."""
    return any(n.op == "pow" and isinstance(n.outputs[0].type, ScalarType)
               and not n.outputs[0].type.is_float for n in kernel.nodes)
