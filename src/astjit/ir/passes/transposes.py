"""Elementwise work on transposed arrays runs in memory order: f(a.T) becomes f(a).T.

An elementwise kernel (a `fused` node without a reduction) all of whose array operands
are transposes (`x.T`) of the kernel's rank, or an `astype` of a transpose, computes on
the arrays as they lie in memory and transposes its result: f(a.T, b.T, s) = f(a, b, s).T
for any elementwise f, and the result is the one NumPy gives, laid out as NumPy lays it
out (its ufuncs and `astype` default to order='K': a transposed C-ordered operand gives a
result in Fortran order). The kernel then reads and writes contiguous memory instead of
striding across rows (`a.T.astype(np.float32)` of a 1000 x 1000 array ran 3.6-3.9x
NumPy's time, `a.T + 1.0` 2.9-3.7x; docs/measurements.md).

Copies keep C order (`x.copy()`, `np.ascontiguousarray`): NumPy's are C-ordered too.
A kernel with a reduction, an operand of lower rank (broadcast along the trailing axes,
which a transpose would misalign) or an operand that is not a transpose stays as it is.
Runs after fusion, before row groups are formed, on every graph and region.
"""
from __future__ import annotations

import dataclasses

from ..core import Graph, Module, Node, Value
from ..kernels import kernel_of
from ..types import ArrayType


def commute_transposes(module: Module) -> Module:
    """Rewrite every elementwise kernel and astype of transposes in `module` (see above)."""
    for graph in module.graphs.values():
        _commute(graph)
    return module


def _commute(graph: Graph) -> None:
    made: dict[Value, Node] = {}
    nodes: list[Node] = []
    for node in graph.nodes:
        for region in node.regions:
            _commute(region)
        sources = _sources(node, made)
        nodes.append(node)
        if sources is not None:
            _untranspose(node, sources)
            for k, out in enumerate(node.outputs):  # the old outputs become the transposes
                inner = Value(out.name, out.type)
                node.outputs[k] = inner
                nodes.append(Node("array_transpose", [inner], [out], {}, [], node.loc))
                made[out] = nodes[-1]
        made.update((out, node) for out in node.outputs)
    graph.nodes = nodes


def _sources(node: Node, made: dict[Value, Node]) -> dict[int, Value] | None:
    """Input position -> the array whose transpose it is, where `node` may be rewritten."""
    def source(value: Value) -> Value | None:
        definition = made.get(value)
        return definition.inputs[0] if definition is not None \
            and definition.op == "array_transpose" else None

    if node.op == "array_astype":
        found = source(node.inputs[0])
        return {0: found} if found is not None and node.inputs[0].type.ndim >= 2 else None
    kernel = kernel_of(node)
    if kernel is None or kernel.reduce is not None or kernel.reuse is not None \
            or kernel.ndim < 2 or not node.outputs \
            or any(not isinstance(out.type, ArrayType) or out.type.ndim != kernel.ndim
                   for out in node.outputs):
        return None
    sources = {}
    for k, (value, rank) in enumerate(zip(node.inputs, kernel.plan)):
        if rank is None:
            continue
        found = source(value) if rank == kernel.ndim else None
        if found is None:
            return None
        sources[k] = found
    return sources or None


def _untranspose(node: Node, sources: dict[int, Value]) -> None:
    """`node` reading the sources in place of their transposes; a kernel's hints of
    length-1 axes turned around with them."""
    for k, value in sources.items():
        node.inputs[k] = value
    kernel = kernel_of(node)
    if kernel is not None and kernel.ones is not None:
        last = kernel.ndim - 1
        ones = tuple(None if axes is None else tuple(sorted(last - a for a in axes))
                     for axes in kernel.ones)
        node.attrs["fused"] = dataclasses.replace(kernel, ones=ones)
