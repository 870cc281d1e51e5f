"""An elementwise `fused` node (no reduction) as one CUDA kernel: a grid-stride loop over
the broadcast space, each thread computing the region at its points and storing every
output; fused intermediates stay in registers. Where every input spans the whole space
contiguously, a `_c` variant indexes by the linear index alone and unrolls its loop."""
from __future__ import annotations

from ...ir.core import Node
from ...ir.kernels import fused_attrs
from .csource import Source, c_type
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


UNROLL = 4
"""Elements a thread of a contiguous kernel loads before it computes any of them: more
loads in flight hide more of the memory's latency (on an H200 the fused expression went
from 62% to 73% of the memory bandwidth, docs/gpu.md)."""


def _emit(src: Source, node: Node, name: str, contiguous: bool) -> None:
    spec = fused_attrs(node)
    outputs = [v.type.dtype for v in node.outputs]
    src.open(f'extern "C" __global__ void {name}({", ".join(parameters(node, outputs, []))})')
    src.line("const long long stride = (long long)gridDim.x * blockDim.x;")
    src.line("long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;")
    if contiguous:
        _unrolled(src, node)
    src.open("for (; i < total; i += stride)")  # a contiguous kernel's last elements
    if not contiguous:
        coordinates(src, spec.ndim, "i", list(range(spec.ndim)))
    _store(src, emit_region(src, node.regions[0], load_inputs(src, node, contiguous, "i")), "i")
    src.close()
    src.close()


def _unrolled(src: Source, node: Node) -> None:
    """A contiguous kernel's main loop: UNROLL elements a thread, `stride` apart (each
    load still coalesced across the warp), all loaded before the region computes any."""
    operands = operands_of(node)
    arrays = [k for k, op in enumerate(operands) if op.ndim is not None]
    src.open(f"for (; i + {UNROLL - 1} * stride < total; i += {UNROLL} * stride)")
    for k in arrays:
        src.line(f"{c_type(operands[k].dtype)} x{k}_u[{UNROLL}];")
    src.line("#pragma unroll")
    src.open(f"for (int u = 0; u < {UNROLL}; ++u)")
    for k in arrays:
        src.line(f"x{k}_u[u] = a{k}[i + u * stride];")
    src.close()
    src.line("#pragma unroll")
    src.open(f"for (int u = 0; u < {UNROLL}; ++u)")
    names = []
    for k, op in enumerate(operands):
        if op.ndim is None:
            names.append(f"s{k}")
        else:
            src.line(f"const {c_type(op.dtype)} x{k} = x{k}_u[u];")
            names.append(f"x{k}")
    _store(src, emit_region(src, node.regions[0], names), "i + u * stride")
    src.close()
    src.close()


def _store(src: Source, results: list[str], index: str) -> None:
    for j, value in enumerate(results):
        src.line(f"o{j}[{index}] = {value};")
