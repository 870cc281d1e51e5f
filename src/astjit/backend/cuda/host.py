"""The host program: the optimized graph run by the reference interpreter (ir/interp.py),
with a `fused` node's step launching its kernels (program.py) on the device.

Scalar code, control flow (`if`, `while`, calls), views and the other ops the op
table marks `OnHost` run here, between launches, with each op's `evaluate` on the
device's arrays: NumPy's functions dispatch to CuPy's for CuPy arrays (NEP 18), so a
matrix product is cuBLAS through `cupy.matmul`, a view a CuPy view. An array such an
op makes on the host (`np.zeros`) is moved to the device at once (`to_device`). A
`rowwise` group runs as its region, each member kernel over all rows at once.

Each launch checks what compiled CPU code checks first, with the same messages:
operands that do not broadcast, a reduction of nothing with no identity. Errors a
kernel records (prelude.py) are raised after it.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

from ...errors import Loc
from ...ir.core import Node
from ...ir.interp import Step, coercion
from ...ir.kernels import fused_attrs, rowwise_attrs
from ...ir.ops import EXCEPTIONS
from ...ir.ops.elementwise import broadcast_shape
from ...ir.ops.reductions import REDUCTIONS, empty_message
from ...ir.types import NUMPY_NAMES, ArrayType, ScalarType
from .elementwise import UNROLL, has_contiguous_variant
from .loop_launch import ElementLoopLaunch
from .prelude import ERROR_MESSAGES
from .reductions import BLOCK, reduction_code
from .rows import ROW_SLOTS, members_of
from .scalars import needs_error_flag
from .space import element_strides, kernel_scalar, operands_of

THREADS = 256
"""Threads per block of the elementwise kernels."""


class Device(Protocol):
    """Where kernels run: its array module and its compiled kernels."""

    xp: Any
    """The module making the device's arrays: CuPy, or the simulator's NumPy stand-in."""
    max_blocks: int
    """The most blocks a grid-stride launch uses (a few per multiprocessor)."""

    def launch(self, name: str, grid: int, block: int, args: list) -> None: ...

    def to_device(self, value: Any) -> Any:
        """`value` with a host array (NumPy's) replaced by a device array."""


def device_steps(device: Device, launches: dict[Node, list[str]]) -> Callable:
    """The interpreter's step factory (ir/interp.py `steps`) for `device`."""
    def step(node: Node, inputs: list[int], outputs: list[int], own: Callable[[], Step]) -> Step | None:
        if node in launches and node.op == "while":  # an element loop (loop_launch.py)
            return ElementLoopLaunch(device, node, launches[node][0], inputs, outputs, own()).step
        if node in launches and node.op == "rowwise":
            return RowLaunch(device, node, launches[node][0], inputs, outputs, own()).step
        if node in launches:
            run = FusedLaunch(device, node, launches[node])

            def launch(frame: list) -> None:
                results = run([frame[i] for i in inputs])
                for slot, value in zip(outputs, results):
                    frame[slot] = value
            return launch
        if node.op in ("array_get", "array_set"):  # x[i] on the host: the CPU's message
            return _located_index_errors(own(), node.loc)
        made = [slot for slot, v in zip(outputs, node.outputs) if isinstance(v.type, ArrayType)]
        if not made or node.regions:
            return None
        on_host = own()

        def to_device(frame: list) -> None:
            on_host(frame)
            for slot in made:
                frame[slot] = device.to_device(frame[slot])
        return to_device
    return step


def located(exc: type[Exception] | str, message: str, loc: Loc | None) -> Exception:
    """The exception compiled CPU code raises, with its source line."""
    where = f" (at {loc.filename}:{loc.line}: {loc.text.strip()})" if loc is not None else ""
    cls = EXCEPTIONS.get(exc, RuntimeError) if isinstance(exc, str) else exc
    return cls(message + where)


def _located_index_errors(step: Step, loc: Loc | None) -> Step:
    """`step` (an element access) raising its IndexError with the source line, as the CPU."""
    def run(frame: list) -> None:
        try:
            step(frame)
        except IndexError as error:
            raise located(IndexError, str(error), loc) from None
    return run


class FusedLaunch:
    """A `fused` node's launches: the space from its inputs' shapes, then its kernels."""

    def __init__(self, device: Device, node: Node, names: list[str]):
        self.device, self.node, self.names = device, node, names
        self.spec = fused_attrs(node)
        self.operands = operands_of(node)
        self.contiguous = has_contiguous_variant(node)
        self.error_flag = needs_error_flag(node.regions[0])

    def __call__(self, args: list) -> list:
        xp, spec = self.device.xp, self.spec
        arrays = [a for a, op in zip(args, self.operands) if op.ndim is not None]
        try:
            space = broadcast_shape([a.shape for a in arrays])
        except ValueError as error:
            raise located(ValueError, str(error), self.node.loc) from None
        space = (1,) * (spec.ndim - len(space)) + space
        kernel_args = self.input_args(args, space)
        contiguous = self.contiguous and all(a.shape == space and a.flags.c_contiguous
                                             for a in arrays)
        stored = self.node.outputs if spec.reduce is None else self.node.outputs[:-1]
        results = [xp.empty(space, dtype=NUMPY_NAMES[v.type.dtype.name]) for v in stored]
        kernel_args += results
        error = xp.zeros(1, dtype="int32") if self.error_flag else None
        total = math.prod(space)
        if spec.reduce is None:
            if total:  # a contiguous kernel's thread takes UNROLL elements at a time
                name, work = (self.names[1], -(-total // UNROLL)) if contiguous else \
                    (self.names[0], total)
                self.launch(name, work, THREADS, kernel_args + list(space) + [total], error)
        else:
            results.append(self.reduce(kernel_args, space, error))
        if error is not None and int(error[0]):
            exc, message = ERROR_MESSAGES[int(error[0])]
            raise located(exc, message, self.node.loc)
        return results

    def input_args(self, args: list, space: tuple[int, ...]) -> list:
        """Each input as the kernel takes it: an array and its element strides (0 where it
        is broadcast), or a scalar of its dtype."""
        found = []
        for a, op in zip(args, self.operands):
            if op.ndim is None:
                found.append(kernel_scalar(a, op.dtype))
            else:
                found += [a, *element_strides(a, space)]
        return found

    def launch(self, name: str, work: int, block: int, args: list, error) -> None:
        grid = max(1, min(-(-work // block), self.device.max_blocks))
        self.device.launch(name, grid, block, args + ([error] if error is not None else []))

    def reduce(self, kernel_args: list, space: tuple[int, ...], error):
        """Launch the `_r` kernel (and `_f` when it writes partials); the reduction's result."""
        xp, code = self.device.xp, reduction_code(self.node)
        reduction = self.spec.reduce
        n_out = math.prod(space[a] for a in code.kept)
        n_red = math.prod(space[a] for a in code.reduced)
        if n_red == 0 and REDUCTIONS[reduction.kind].empty_raises:
            raise located(ValueError, empty_message(reduction.kind), self.node.loc)
        dtype = NUMPY_NAMES[code.result.name]
        shape = tuple(1 if a in code.reduced else n for a, n in enumerate(space)
                      if reduction.keepdims or a in code.kept)
        out = xp.empty(shape, dtype=dtype)
        if n_out:
            chunks = 1
            if n_out < self.device.max_blocks:
                chunks = max(1, min(-(-self.device.max_blocks // n_out), -(-n_red // (BLOCK * 4))))
            chunk_len = -(-n_red // chunks)
            red = out if chunks == 1 else xp.empty(n_out * chunks, dtype=dtype)
            counts = [n_out, n_red, chunks, chunk_len, *space, math.prod(space)]
            self.launch(self.names[0], n_out * chunks * BLOCK, BLOCK, kernel_args + [red] + counts,
                        error)
            if chunks > 1:
                self.device.launch(self.names[1], max(1, min(n_out, self.device.max_blocks)), BLOCK,
                                   [red, out, n_out, chunks, n_red])
        result = self.node.outputs[-1].type
        if isinstance(result, ArrayType):
            return out
        return coercion(result)(out.reshape(-1)[0].item())



class RowLaunch:
    """A `rowwise` node's launch of its one kernel (rows.py), one block per row, when the
    shapes at run time give every member the same space and a row fits the registers;
    else `graph`, the region run as a graph (its members' kernels and their checks)."""

    def __init__(self, device: Device, node: Node, name: str, inputs: list[int],
                 outputs: list[int], graph: Step):
        self.device, self.node, self.name = device, node, name
        self.inputs, self.outputs, self.graph = inputs, outputs, graph
        self.group = rowwise_attrs(node)
        self.members = members_of(node)

    def step(self, frame: list) -> None:
        args = [frame[i] for i in self.inputs]
        shapes = self.shapes(args)
        if shapes is None:
            return self.graph(frame)
        space, out_shapes = shapes
        rows = self.group.rows
        n_rows, n_inner = math.prod(space[:rows]), math.prod(space[rows:])
        block = 32
        while block * ROW_SLOTS < n_inner:
            block *= 2
        if block > 1024:
            return self.graph(frame)
        xp = self.device.xp
        region = self.node.regions[0]
        results = [xp.empty(shape, dtype=NUMPY_NAMES[_element(v).name])
                   for v, shape in zip(region.outputs, out_shapes)]
        kernel_args = []
        for p, a in zip(region.params, args):
            if not isinstance(p.type, ArrayType):
                kernel_args.append(kernel_scalar(a, p.type))
                continue
            kernel_args += [a, *element_strides(a, space)]
        kernel_args += results + list(space) + [n_rows, n_inner]
        if n_rows:
            grid = max(1, min(n_rows, self.device.max_blocks))
            self.device.launch(self.name, grid, block, kernel_args)
        for slot, value, v in zip(self.outputs, results, region.outputs):
            frame[slot] = value if isinstance(v.type, ArrayType) else \
                coercion(v.type)(value.reshape(-1)[0].item())

    def shapes(self, args: list) -> tuple[tuple[int, ...], list[tuple[int, ...]]] | None:
        """The members' common space and the group outputs' shapes, or None: run the region
        as a graph (members of other spaces, shapes that do not broadcast, an empty
        reduction that raises: the graph's kernels say so with their own messages)."""
        region, ndim, rows = self.node.regions[0], self.group.ndim, self.group.rows
        shapes = {p: a.shape for p, a in zip(region.params, args) if isinstance(p.type, ArrayType)}
        space = None
        for member in self.members:
            node = member.node
            if node.op == "sum_to_like":
                g, x = node.inputs
                if space is None or shapes.get(x) != (shapes[g] if member.role == "same"
                                                      else _per_row(space, rows)):
                    return None
                shapes[node.outputs[0]] = shapes[x]
                continue
            try:
                found = broadcast_shape([shapes[v] for v in node.inputs if v in shapes])
            except ValueError:
                return None
            found = (1,) * (ndim - len(found)) + found
            if member.role == "row":
                if space is None or found != _per_row(space, rows):
                    return None
            elif space is None:
                space = found
            elif found != space:
                return None
            reduction = fused_attrs(node).reduce
            stored = node.outputs if reduction is None else node.outputs[:-1]
            shapes.update((v, found) for v in stored)
            if reduction is not None:
                if math.prod(found[rows:]) == 0 and REDUCTIONS[reduction.kind].empty_raises:
                    return None
                out = node.outputs[-1]
                keep = reduction.keepdims
                shapes[out] = _per_row(found, rows) if keep else (found[:rows] if isinstance(
                    out.type, ArrayType) else ())
        if space is None or any(v not in shapes for v in region.outputs):
            return None
        return space, [shapes[v] for v in region.outputs]


def _per_row(space: tuple[int, ...], rows: int) -> tuple[int, ...]:
    return space[:rows] + (1,) * (len(space) - rows)


def _element(v) -> ScalarType:
    return v.type.dtype if isinstance(v.type, ArrayType) else v.type
