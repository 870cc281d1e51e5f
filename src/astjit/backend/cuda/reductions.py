"""A reducing `fused` node as CUDA kernels: the elementwise region and the reduction in one
pass over the input, block reductions by warp shuffles and shared memory.

The space's axes split into kept ones (an output index `o`, C order) and reduced
ones (an index `r` of `n_red`). A *job* is one output's reduction over one chunk of
`r`: block `b` takes jobs `b, b + gridDim.x, ...`, its threads stride over the
chunk, the block combines their accumulators. With one chunk per output the job
writes the finished result; with more (few outputs, long reductions: a full sum),
`_r` writes per-chunk partials and the `_f` kernel combines each output's partials
and finishes it. Two passes, no atomics, so a float result does not depend on
timing. The elementwise outputs the node also stores are written in the first
pass, each point once.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...ir.core import Node
from ...ir.kernels import fused_attrs
from ...ir.ops import CExpr, lowering_for
from ...ir.ops.complexes import part_type
from ...ir.ops.reductions import REDUCTIONS
from ...ir.types import ArrayType, ScalarType
from .csource import Source, c_literal, c_type
from .scalars import emit_region
from .space import coordinates, linear_index, load_inputs, parameters

BLOCK = 256
"""Threads per block of the reduction kernels (a multiple of 32, at most 32 warps)."""


@dataclass(frozen=True)
class ReductionCode:
    """What the host needs to launch a reduction's kernels."""

    accumulator: ScalarType
    result: ScalarType
    kept: tuple[int, ...]
    reduced: tuple[int, ...]


def reduction_code(node: Node) -> ReductionCode:
    spec = fused_attrs(node)
    out = node.outputs[-1].type
    result = out.dtype if isinstance(out, ArrayType) else out
    reduced = spec.reduce.axes
    kept = tuple(a for a in range(spec.ndim) if a not in reduced)
    accumulator = node.regions[0].outputs[-1].type
    assert accumulator == result, "the fusion pass casts the reduced element to the result dtype"
    return ReductionCode(accumulator, result, kept, reduced)


def emit_reduction(src: Source, node: Node, name: str) -> list[str]:
    """The `_r` and `_f` kernels of reducing `node` into `src`; their names."""
    code = reduction_code(node)
    row = REDUCTIONS[fused_attrs(node).reduce.kind]
    acc, combine = c_type(code.accumulator), _combine(row.cuda_combine, code.accumulator)
    identity = c_literal(row.start(code.accumulator), code.accumulator)
    stored = [v.type.dtype for v in node.outputs[:-1]]
    extra = [f"{acc}* __restrict__ red", "long long n_out", "long long n_red", "long long chunks",
             "long long chunk_len"]
    src.open(f'extern "C" __global__ void {name}_r({", ".join(parameters(node, stored, extra))})')
    src.line(f"__shared__ {acc} warp_results[32];")
    src.open("for (long long job = blockIdx.x; job < n_out * chunks; job += gridDim.x)")
    src.line("const long long o = job / chunks, part = job % chunks;")
    src.line("const long long begin = part * chunk_len;")
    src.line("const long long end = begin + chunk_len < n_red ? begin + chunk_len : n_red;")
    coordinates(src, fused_attrs(node).ndim, "o", list(code.kept))
    src.line(f"{acc} acc = {identity};")
    src.open("for (long long r = begin + threadIdx.x; r < end; r += blockDim.x)")
    coordinates(src, fused_attrs(node).ndim, "r", list(code.reduced))
    results = emit_region(src, node.regions[0], load_inputs(src, node, False, ""))
    if stored:
        src.line(f"const long long i = {linear_index(fused_attrs(node).ndim)};")
    for j, value in enumerate(results[:-1]):
        src.line(f"o{j}[i] = {value};")
    src.line(f"acc = {combine.format('acc', results[-1])};")
    src.close()
    _block_reduce(src, acc, combine, identity)
    finish = _finish(row.cuda_finish, code, "acc", "n_red")
    src.line(f"if (threadIdx.x == 0) red[job] = chunks == 1 ? {finish} : acc;")
    src.line("__syncthreads();  // warp_results is reused by the next job")
    src.close()
    src.close()
    _emit_finish(src, name, code, combine, identity, row.cuda_finish)
    return [name + "_r", name + "_f"]


def _emit_finish(src: Source, name: str, code: ReductionCode, combine: str, identity: str,
                 finish: CExpr | None) -> None:
    acc, result = c_type(code.accumulator), c_type(code.result)
    src.open(f'extern "C" __global__ void {name}_f(const {acc}* __restrict__ partials, '
             f'{result}* __restrict__ out, long long n_out, long long chunks, long long n_red)')
    src.line(f"__shared__ {acc} warp_results[32];")
    src.open("for (long long o = blockIdx.x; o < n_out; o += gridDim.x)")
    src.line(f"{acc} acc = {identity};")
    src.open("for (long long part = threadIdx.x; part < chunks; part += blockDim.x)")
    src.line(f"acc = {combine.format('acc', 'partials[o * chunks + part]')};")
    src.close()
    _block_reduce(src, acc, combine, identity)
    src.line(f"if (threadIdx.x == 0) out[o] = {_finish(finish, code, 'acc', 'n_red')};")
    src.line("__syncthreads();")
    src.close()
    src.close()


def _block_reduce(src: Source, acc: str, combine: str, identity: str) -> None:
    """Combine the block's `acc`s into thread 0's: within each warp by shuffles, then the
    warps' results by warp 0."""
    src.line("const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;")
    src.line(f"for (int d = 16; d > 0; d >>= 1) acc = {combine.format('acc', 'astjit_shfl_down(acc, d)')};")
    src.line("if (lane == 0) warp_results[warp] = acc;")
    src.line("__syncthreads();")
    src.open("if (warp == 0)")
    src.line(f"acc = lane < (int)(blockDim.x / 32) ? warp_results[lane] : {identity};")
    src.line(f"for (int d = 16; d > 0; d >>= 1) acc = {combine.format('acc', 'astjit_shfl_down(acc, d)')};")
    src.close()


def _combine(row: dict[str, CExpr], accumulator: ScalarType) -> str:
    return lowering_for(row, accumulator).template


def _finish(finish: CExpr | None, code: ReductionCode, acc: str, count: str) -> str:
    """The finished result of accumulator `acc` over `count` elements (np.mean's division:
    of a complex, each part by the count in the parts' type, as the CPU's)."""
    if finish is None:
        return f"({c_type(code.result)}){acc}"
    value = finish.template.format(acc, f"({c_type(part_type(code.accumulator))}){count}")
    return f"({c_type(code.result)}){value}"
