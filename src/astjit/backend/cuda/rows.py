"""A `rowwise` group (passes/rowfuse.py) as one CUDA kernel: one block per row, the
members run one after another inside it, so the matrix crosses memory once.

Each thread holds `ROW_SLOTS` points of its row, `j = threadIdx.x + k * blockDim.x`,
in registers: the outside arrays the members read (loaded once) and every full
member value (`e` of a softmax). A member reducing the row ends in a block
reduction whose result every thread then reads from shared memory (a per-row value,
a register); a row member runs once per thread on per-row values; a `sum_to_like`
is its operand ("same") or a row sum. The group's outputs are stored as they are
computed: full values at their point (C-contiguous over the space), per-row values
by thread 0 (C-contiguous over the outer axes).

Rows longer than `ROW_SLOTS * 1024` points, or shapes that do not give every member
the same space, run the region as a graph instead (host.py), each member its own
kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...ir.core import Node, Value
from ...ir.kernels import fused_attrs, kernel_of, rowwise_attrs
from ...ir.ops import lowering_for
from ...ir.ops.reductions import REDUCTIONS
from ...ir.types import ArrayType, ScalarType
from .csource import Source, c_literal, c_type
from .scalars import emit_region, needs_error_flag

ROW_SLOTS = 8
"""Points of a row each thread keeps in registers."""

LAUNCH_BOUNDS = "__launch_bounds__(1024, 2)"
"""Blocks of up to 1024 threads (host.py picks 32 to 1024 by the row's length), registers
few enough for two of the largest on a multiprocessor: more rows in flight hide more of
the memory's latency than the few values spilled cost (the softmax of 16384×4096 float32
on an H200: 29% to 35% of the memory bandwidth, docs/gpu.md)."""

MEMBER_OPS = ("fused", "sum_to_like", "array_release", "array_retain")
"""What a group's region may hold for the one-kernel form."""


@dataclass(frozen=True)
class RowMember:
    node: Node
    role: str
    """A `STAGES` role (passes/rowfuse.py)."""


def members_of(node: Node) -> list[RowMember]:
    """The group's members with their roles (retains and releases left out)."""
    found = [n for n in node.regions[0].nodes if n.op in ("fused", "sum_to_like")]
    return [RowMember(n, role) for n, role in zip(found, rowwise_attrs(node).stages)]


def has_row_kernel(node: Node) -> bool:
    region = node.regions[0]
    return (all(n.op in MEMBER_OPS for n in region.nodes)
            and not any(needs_error_flag(n.regions[0]) for n in region.nodes if n.regions)
            and all(isinstance(p.type, ArrayType) or isinstance(p.type, ScalarType)
                    for p in region.params))


def emit_rows(src: Source, node: Node, name: str) -> list[str]:
    """The kernel `<name>_rows` of group `node` into `src`; its name."""
    spec = rowwise_attrs(node)
    region = node.regions[0]
    ndim, rows = spec.ndim, spec.rows
    params = []
    for k, p in enumerate(region.params):
        if isinstance(p.type, ArrayType):
            params.append(f"const {c_type(p.type.dtype)}* __restrict__ a{k}")
            params += [f"long long a{k}_s{j}" for j in range(p.type.ndim)]
        else:
            params.append(f"{c_type(p.type)} s{k}")
    for j, v in enumerate(region.outputs):
        params.append(f"{c_type(_dtype(v))}* __restrict__ o{j}")
    params += [f"long long n{axis}" for axis in range(ndim)] + ["long long n_rows", "long long n_inner"]
    src.open(f'extern "C" __global__ void {LAUNCH_BOUNDS} {name}_rows({", ".join(params)})')
    emitter = _RowEmitter(src, node)
    src.open("for (long long row = blockIdx.x; row < n_rows; row += gridDim.x)")
    _outer_coordinates(src, rows)
    emitter.body()
    src.line("__syncthreads();  // shared memory is reused by the next row")
    src.close()
    src.close()
    return [name + "_rows"]


def _dtype(v: Value) -> ScalarType:
    return v.type.dtype if isinstance(v.type, ArrayType) else v.type


def _outer_coordinates(src: Source, rows: int) -> None:
    src.line("long long rest_row = row;")
    for axis in reversed(range(1, rows)):
        src.line(f"const long long c{axis} = rest_row % n{axis}; rest_row /= n{axis};")
    src.line("const long long c0 = rest_row;")


class _RowEmitter:
    """The members' code, inside the row loop."""

    def __init__(self, src: Source, node: Node):
        self.src, self.node = src, node
        spec = rowwise_attrs(node)
        self.ndim, self.rows = spec.ndim, spec.rows
        region = node.regions[0]
        self.full: dict[Value, str] = {}
        """A full value -> the C name of its register array (one entry per slot)."""
        self.per_row: dict[Value, str] = {}
        """A per-row value -> its C name (a register, the same in every thread)."""
        self.scalars: dict[Value, str] = {}
        self.outputs = {v: j for j, v in enumerate(region.outputs)}
        self.params = {p: k for k, p in enumerate(region.params)}

    # ---- values ---------------------------------------------------------------------

    def slots(self, body) -> None:
        """`body(k)` for each slot k holding a point of the row (`j`, inner coordinates)."""
        src = self.src
        src.line("#pragma unroll")
        src.open(f"for (int k = 0; k < {ROW_SLOTS}; ++k)")
        src.line("const long long j = threadIdx.x + (long long)k * blockDim.x;")
        src.open("if (j < n_inner)")
        src.line("long long rest_j = j;")
        for axis in reversed(range(self.rows + 1, self.ndim)):
            src.line(f"const long long c{axis} = rest_j % n{axis}; rest_j /= n{axis};")
        src.line(f"const long long c{self.rows} = rest_j;")
        body()
        src.close()
        src.close()

    def load_param(self, k: int, p: Value) -> None:
        """An outside array, read once into registers (a per-row one reads one element)."""
        name = f"p{k}"
        self.src.line(f"{c_type(p.type.dtype)} {name}[{ROW_SLOTS}];")
        lead = self.ndim - p.type.ndim
        terms = [f"c{lead + j} * a{k}_s{j}" for j in range(p.type.ndim)]
        offset = " + ".join(terms) or "0"
        self.slots(lambda: self.src.line(f"{name}[k] = a{k}[{offset}];"))
        self.full[p] = name

    def read(self, v: Value) -> str:
        """`v`'s C expression at slot k (inside `slots`)."""
        if v in self.full:
            return f"{self.full[v]}[k]"
        if v in self.per_row:
            return self.per_row[v]
        return self.scalars[v]

    def store_full(self, v: Value, expression: str) -> None:
        if v in self.outputs:
            index = "row * n_inner + j"
            self.src.line(f"o{self.outputs[v]}[{index}] = {expression};")

    # ---- members ---------------------------------------------------------------------

    def body(self) -> None:
        for k, p in enumerate(self.node.regions[0].params):
            if isinstance(p.type, ArrayType):
                self.load_param(k, p)
            else:
                self.scalars[p] = f"s{k}"
        for member in members_of(self.node):
            if member.node.op == "sum_to_like":
                self.sum_to_like(member)
            elif member.role == "row":
                self.row_member(member.node)
            else:
                self.full_member(member.node)

    def full_member(self, node: Node) -> None:
        src, spec = self.src, fused_attrs(node)
        stored = node.outputs if spec.reduce is None else node.outputs[:-1]
        for v in stored:
            name = src.fresh("f")
            src.line(f"{c_type(v.type.dtype)} {name}[{ROW_SLOTS}];")
            self.full[v] = name
        acc = None
        if spec.reduce is not None:
            acc_type = node.regions[0].outputs[-1].type
            row = REDUCTIONS[spec.reduce.kind]
            combine = lowering_for(row.cuda_combine, acc_type).template
            identity = c_literal(row.start(acc_type), acc_type)
            acc = src.fresh("acc")
            src.line(f"{c_type(acc_type)} {acc} = {identity};")

        def point() -> None:
            values = emit_region(src, node.regions[0], [self.read(v) for v in node.inputs])
            for v, value in zip(stored, values):
                src.line(f"{self.full[v]}[k] = {value};")
                self.store_full(v, value)
            if acc is not None:
                src.line(f"{acc} = {combine.format(acc, values[-1])};")
        self.slots(point)
        if acc is not None:
            self.finish_reduction(node, acc, acc_type, combine, identity)

    def finish_reduction(self, node: Node, acc: str, acc_type: ScalarType, combine: str,
                         identity: str) -> None:
        """Combine the block's accumulators; every thread gets the row's value."""
        src, spec = self.src, fused_attrs(node)
        row = REDUCTIONS[spec.reduce.kind]
        shared = src.fresh("shared")
        src.line(f"__shared__ {c_type(acc_type)} {shared}[32];")
        src.line("{")
        src.depth += 1
        src.line("const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;")
        src.line(f"for (int d = 16; d > 0; d >>= 1) {acc} = "
                 f"{combine.format(acc, f'astjit_shfl_down({acc}, d)')};")
        src.line(f"if (lane == 0) {shared}[warp] = {acc};")
        src.line("__syncthreads();")
        src.line(f"{acc} = {identity};")
        src.line(f"for (int w = 0; w < (int)(blockDim.x / 32); ++w) {acc} = "
                 f"{combine.format(acc, f'{shared}[w]')};")
        src.line("__syncthreads();  // every thread has read the warps' results")
        src.depth -= 1
        src.line("}")
        out = node.outputs[-1]
        value = acc
        if row.cuda_finish is not None:
            value = row.cuda_finish.template.format(acc, f"({c_type(acc_type)})n_inner")
        name = src.fresh("r")
        src.line(f"const {c_type(_dtype(out))} {name} = {value};")
        self.per_row[out] = name
        if out in self.outputs:
            src.line(f"if (threadIdx.x == 0) o{self.outputs[out]}[row] = {name};")

    def row_member(self, node: Node) -> None:
        """Once per row, on per-row values (each thread computes it: no barrier needed)."""
        src = self.src
        inputs = []
        for v in node.inputs:
            if v in self.params and isinstance(v.type, ArrayType):  # an outside per-row array
                k, lead = self.params[v], self.ndim - v.type.ndim
                terms = [f"c{lead + j} * a{k}_s{j}" for j in range(v.type.ndim) if lead + j < self.rows]
                inputs.append(f"a{k}[{' + '.join(terms) or '0'}]")
            else:
                inputs.append(self.per_row.get(v) or self.scalars[v])
        values = emit_region(src, node.regions[0], inputs)
        for v, value in zip(node.outputs, values):
            self.per_row[v] = value
            if v in self.outputs:
                src.line(f"if (threadIdx.x == 0) o{self.outputs[v]}[row] = {value};")

    def sum_to_like(self, member: RowMember) -> None:
        g, _ = member.node.inputs
        (out,) = member.node.outputs
        if member.role == "same":
            self.full[out] = self.full[g]
            if out in self.outputs:
                self.slots(lambda: self.store_full(out, f"{self.full[g]}[k]"))
            return
        src = self.src
        acc = src.fresh("acc")
        src.line(f"double {acc} = 0.0;")
        self.slots(lambda: src.line(f"{acc} = {acc} + {self.full[g]}[k];"))
        shared = src.fresh("shared")
        src.line(f"__shared__ double {shared}[32];")
        src.line("{")
        src.depth += 1
        src.line("const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;")
        src.line(f"for (int d = 16; d > 0; d >>= 1) {acc} = {acc} + astjit_shfl_down({acc}, d);")
        src.line(f"if (lane == 0) {shared}[warp] = {acc};")
        src.line("__syncthreads();")
        src.line(f"{acc} = 0.0;")
        src.line(f"for (int w = 0; w < (int)(blockDim.x / 32); ++w) {acc} = {acc} + {shared}[w];")
        src.line("__syncthreads();")
        src.depth -= 1
        src.line("}")
        self.per_row[out] = acc
        if out in self.outputs:
            src.line(f"if (threadIdx.x == 0) o{self.outputs[out]}[row] = {acc};")


def reducing_members(node: Node) -> list[Node]:
    """The members that reduce (host.py checks their empty-reduction errors)."""
    return [m.node for m in members_of(node) if (k := kernel_of(m.node)) is not None and k.reduce]
