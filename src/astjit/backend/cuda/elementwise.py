"""An elementwise `fused` node (no reduction) as one CUDA kernel: a grid-stride loop over
the broadcast space, each thread computing the region at its points and storing every
output; fused intermediates stay in registers."""
from __future__ import annotations

from ...ir.core import Node
from ...ir.kernels import fused_attrs
from .csource import Source
from .scalars import emit_region
from .space import coordinates, load_inputs, operands_of, parameters


def has_contiguous_variant(node: Node) -> bool:
    """Whether the node gets a `_c` kernel: every array input spans the whole space."""
    ndim = fused_attrs(node).ndim
    return all(op.ndim in (None, ndim) and not op.ones for op in operands_of(node))


def emit_elementwise(src: Source, node: Node, name: str) -> list[str]:
    """The kernels of `node` (its `_s` variant, and `_c` where it has one) into `src`;
    their names."""
    names = [name + "_s"]
    _emit(src, node, name + "_s", contiguous=False)
    if has_contiguous_variant(node):
        names.append(name + "_c")
        _emit(src, node, name + "_c", contiguous=True)
    return names


def _emit(src: Source, node: Node, name: str, contiguous: bool) -> None:
    spec = fused_attrs(node)
    outputs = [v.type.dtype for v in node.outputs]
    src.open(f'extern "C" __global__ void {name}({", ".join(parameters(node, outputs, []))})')
    src.open("for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; "
             "i += (long long)gridDim.x * blockDim.x)")
    if not contiguous:
        coordinates(src, spec.ndim, "i", list(range(spec.ndim)))
    results = emit_region(src, node.regions[0], load_inputs(src, node, contiguous, "i"))
    for j, value in enumerate(results):
        src.line(f"o{j}[i] = {value};")
    src.close()
    src.close()
