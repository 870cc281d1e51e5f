"""The structural `rowwise` op (ir/core.py, a row group of ir/passes/rowfuse.py): the members'
loop nests run row by row, so the data crosses memory once.

`emit_rows`, in order:

1. Shapes. Each member's space is the broadcast of its operands' shapes: an
   outside array's own, a full member value's its maker's space, a per-row
   value's that space with the inner axes 1 (what running the members one
   after another would give). Broadcasting and empty max/min are checked
   member by member, in order, with the members' own messages and locations.
   A row member's space must be the per-row shape; a `sum_to_like`'s target
   the space (identity) or the per-row shape (row sum).
2. The choice. The row loop runs when every member's space is the first's
   and every outside array steps between rows at least as far as between the
   elements of a row (`|outer stride| >= |inner stride|` where both axes are
   longer than 1: a transposed input is read the other way round, so its
   rows are not where the row loop looks for them). Otherwise the region runs
   as a graph (each member its own nests over whole arrays: fused.py), its
   releases included; the two versions' outputs meet in phis. Before both, a
   group that is np.var's or np.std's rows (the squared deviations, the division
   by the degrees of freedom) along the last axis of unit-stride, evenly spaced
   float rows is one call of the runtime's (row_moments.py).
3. Storage, for the row loop. The group's outputs are new C-contiguous arrays
   (owned, as `fused` outputs are). A full value used only inside the group
   lives in the output row that the member reading it last writes (that
   member's `reuse` attr: `e` of a softmax in the output row of `e / s`),
   or else in a scratch buffer of one row (the inner axes), released after
   the loop. Per-row values are registers, and stored (at the outer index)
   when they are outputs. An identity `sum_to_like` is its operand (a new
   reference to the same array when both are outputs, as sum_to_like gives).
4. The loop over the outer axes; inside, each member's nest over the inner
   axes: an elementwise member stores its kernel's results, a reducing one
   runs `reduction_nests.emit_row_reduction` (the register accumulator of the
   plain reductions: `reassoc` sums, the NaN-aware max) and stores its other
   values on the way; a row member runs its kernel once per row, a row sum
   is a register sum like a reduction's. As in fused.py the whole loop is emitted twice: with
   unit innermost strides (every outside array steps by one along the last
   axis; scratch and outputs always do), which vectorizes as it is (by astjit itself
   where its loops allow: widen.py), and
   strided, whose loops LLVM leaves scalar (`loop_metadata.scalar_loops`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.kernels import kernel_of, reduction_of, rowwise_attrs
from ...ir.ops.reductions import REDUCTIONS, empty_message
from ...ir.types import ArrayType
from . import (
    array_layout,
    loop_metadata,
    nests,
    new_arrays,
    owned,
    reduction_nests,
    row_moments,
    widen,
)
from .kernel import (
    AliasScope,
    broadcast_shapes,
    load_element,
    run_kernel,
    space_strides,
    store_element,
)
from .lltypes import ARRAY_STRIDES, I1, I64_T

if TYPE_CHECKING:
    from ...ir.core import Node, Value
    from .emitter import FunctionEmitter


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def emit_rows(em: FunctionEmitter, node: Node) -> list[ir.Value]:
    b = em.builder
    (body,) = node.regions
    args = em.values_of(node.inputs)
    outside = dict(zip(body.params, args))
    members = [m for m in body.nodes if m.op in ("fused", "sum_to_like")]
    roles = rowwise_attrs(node).stages
    space, ok = _spaces(em, node, members, roles, outside)
    how = row_moments.squares_input(node)
    if how is None:
        return _rows_or_graph(em, node, members, roles, outside, space, ok)
    rows = rowwise_attrs(node).rows

    def squares() -> list[ir.Value]:
        (out,) = _RowLoop(em, node, members, roles, outside, space).outputs(body.outputs)
        row_moments.call_squares(em, how, args, space, rows, out)
        return [out]
    called = b.and_(ok, row_moments.contiguous_rows(em, args[0], space, rows))
    if em.fast_only(called):
        return squares()
    return _either(em, node, called, squares,
                   lambda: _rows_or_graph(em, node, members, roles, outside, space, ok))


def _either(em: FunctionEmitter, node: Node, cond: ir.Value, then: Callable[[], list[ir.Value]],
            otherwise: Callable[[], list[ir.Value]]) -> list[ir.Value]:
    """The group's outputs by `then()` where `cond` holds, else by `otherwise()`."""
    b = em.builder
    with b.if_else(cond, likely=True) as (yes, no):
        with yes:
            first = then()
            first_block = b.block
        with no:
            second = otherwise()
            second_block = b.block
    return [em.merge(v.type, [(x, first_block), (y, second_block)])
            for v, x, y in zip(node.outputs, first, second)]


def _rows_or_graph(em: FunctionEmitter, node: Node, members: list[Node], roles: tuple[str, ...],
                   outside: dict[Value, ir.Value], space: list[ir.Value],
                   ok: ir.Value) -> list[ir.Value]:
    """The group by the row loop where its layout allows (step 2), else as a graph."""
    args = em.values_of(node.inputs)
    ok = em.builder.and_(ok, _row_layout(em, node, args))

    def by_rows() -> list[ir.Value]:
        return _RowLoop(em, node, members, roles, outside, space).run()
    if em.fast_only(ok):
        return by_rows()
    return _either(em, node, ok, by_rows, lambda: em.emit_graph(node.regions[0], args))


def _spaces(em: FunctionEmitter, node: Node, members: list[Node], roles: tuple[str, ...],
            outside: dict[Value, ir.Value]) -> tuple[list[ir.Value], ir.Value]:
    """The group's space (the first member's) and whether every member's shapes agree with
    it (step 1 of the module docstring), each member checked as its own run would."""
    b = em.builder
    group = rowwise_attrs(node)
    ndim, rows = group.ndim, group.rows
    shape_of = {p: [array_layout.dim(b, a, j) for j in range(p.type.ndim)]
                for p, a in outside.items() if isinstance(p.type, ArrayType)}
    space: list[ir.Value] = []
    ok = ir.Constant(I1, 1)

    def agree(dims: list[ir.Value], want: list[ir.Value]) -> ir.Value:
        result = ok
        for d, w in zip(dims, want):
            result = b.and_(result, b.icmp_signed("==", d, w))
        return result
    for m, role in zip(members, roles):
        per_row = space[:rows] + [_i64(1)] * (ndim - rows)
        if m.op == "sum_to_like":
            g, target = m.inputs
            shape_of[m.outputs[0]] = shape_of[target]
            ok = agree(shape_of[target], space if role == "same" else per_row)
            continue
        shapes = [shape_of[v] for v in m.inputs if isinstance(v.type, ArrayType)]
        dims = broadcast_shapes(em, m, shapes, ndim)
        if not space:
            space = dims
            per_row = space[:rows] + [_i64(1)] * (ndim - rows)
        ok = agree(dims, per_row if role == "row" else space)
        for v in m.outputs:
            shape_of[v] = dims
        if (reduction := reduction_of(m)) is not None:
            count = new_arrays.size_of_dims(b, dims[rows:])
            if REDUCTIONS[reduction.kind].empty_raises:
                em.fail_if(m, b.icmp_signed("==", count, _i64(0)), "ValueError",
                           empty_message(reduction.kind))
            kept = dims[:rows] + ([_i64(1)] * (ndim - rows) if reduction.keepdims else [])
            shape_of[m.outputs[-1]] = kept
    return space, ok


def _row_layout(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """Whether every outside array steps between rows at least as far as within one."""
    b = em.builder
    group = rowwise_attrs(node)
    ndim, rows = group.ndim, group.rows
    ok = ir.Constant(I1, 1)
    for value, k in zip(args, group.plan):
        outer = rows - 1 - (ndim - (k or 0))
        if k is None or outer < 0:
            continue  # a scalar, or the same data for every row

        def step(j: int) -> tuple[ir.Value, ir.Value]:
            stride = b.extract_value(value, [ARRAY_STRIDES, j])
            negative = b.icmp_signed("<", stride, _i64(0))
            long = b.icmp_signed(">", array_layout.dim(b, value, j), _i64(1))
            return b.select(negative, b.neg(stride), stride), long
        far, long_rows = step(outer)
        for j in range(outer + 1, k):
            near, long = step(j)
            ok = b.and_(ok, b.not_(b.and_(b.and_(long_rows, long),
                                          b.icmp_signed("<", far, near))))
    return ok


class _RowLoop:
    """Steps 3 and 4 of the module docstring for one group."""

    def __init__(self, em: FunctionEmitter, node: Node, members: list[Node],
                 roles: tuple[str, ...], outside: dict[Value, ir.Value], dims: list[ir.Value]):
        self.em, self.node, self.outside, self.dims = em, node, outside, dims
        self.members = list(zip(members, roles))
        self.rows = rowwise_attrs(node).rows
        self.ndim = rowwise_attrs(node).ndim
        self.same = {m.outputs[0]: m.inputs[0] for m, role in self.members if role == "same"}
        """A `sum_to_like` that is the identity: its result -> its operand."""
        self.storage: dict[Value, tuple[ir.Value, list[ir.Value]]] = {}
        """Each full member value (the first of its aliases) -> the array holding it and its
        strides over the space."""
        self.scratch: list[ir.Value] = []
        self.row_values: dict[Value, ir.Value] = {}
        """Each per-row value -> its register, in the current row."""
        self.written: dict[int, int] = {}
        """Each array the loop writes (an output, a scratch buffer), by id -> its alias scope
        in `scope`."""
        self.scope: AliasScope | None = None

    def root(self, v: Value) -> Value:
        while v in self.same:
            v = self.same[v]
        return v

    def run(self) -> list[ir.Value]:
        em, b = self.em, self.em.builder
        body = self.node.regions[0]
        results = self.outputs(body.outputs)
        self._place()
        self._scopes()
        strides = [self._outside_strides(m) for m, _ in self.members]
        fast = ir.Constant(I1, 1)
        for per_member in strides:
            for st in per_member:
                if st is not None and not _is_zero(st[-1]):
                    fast = b.and_(fast, b.icmp_signed("==", st[-1], _i64(1)))

        def nest(unit: bool) -> None:
            def rows() -> None:
                nests.loop_nest(em, self.dims[:self.rows],
                                lambda outer: self._row(outer, strides, unit), "rows")
            if unit:
                widen.widened_nest(em, rows)
            else:
                rows()
        loop_metadata.unit_or_strided(em, fast, nest)
        for buffer in self.scratch:
            owned.release_now(em, buffer)
        return results

    def outputs(self, values: list[Value]) -> list[ir.Value]:
        """The group's outputs: new arrays; aliases of one value share it (a new reference)."""
        b = self.em.builder
        self.results: dict[Value, ir.Value] = {}
        """Each value (the first of its aliases) that is an output -> its array."""
        outputs = []
        for v in values:
            root = self.root(v)
            if root in self.results:
                outputs.append(owned.retained(self.em, self.results[root]))
                continue
            dims = self.dims if self.kind(v) == "full" else self.dims[:self.rows] + (
                [_i64(1)] * (self.ndim - self.rows) if v.type.ndim == self.ndim else [])
            t = ArrayType(v.type.dtype, len(dims))
            new_arrays.check_dims(self.em, self.node, t.dtype, dims)
            array = self.results[root] = new_arrays.allocate(self.em, self.node, t, dims, zeroed=False)
            if self.kind(v) == "full":
                self.storage[root] = (array, [b.extract_value(array, [ARRAY_STRIDES, j])
                                              for j in range(self.ndim)])
            outputs.append(array)
        return outputs

    def kind(self, v: Value) -> str:
        """"full" or "per row" (a reduction's result, a row member's or a row sum's)."""
        for m, role in self.members:
            if v in m.outputs:
                if role in ("row", "row sum") or reduction_of(m) and v is m.outputs[-1]:
                    return "per row"
                return "full"
        raise AssertionError(v)

    def _place(self) -> None:
        """Where each full value lives (step 3), the last members first."""
        b = self.em.builder
        taker: dict[Value, Value] = {}  # a donor -> the output that takes its memory
        shared = set(self.same.values())
        for m, role in reversed(self.members):
            if role != "full":
                continue
            for v in m.outputs[:-1] if reduction_of(m) else m.outputs:
                if v in self.storage:
                    continue
                if v in taker:
                    self.storage[v] = self.storage[taker[v]]
                    continue
                inner = self.dims[self.rows:]
                t = ArrayType(v.type.dtype, len(inner))
                new_arrays.check_dims(self.em, self.node, t.dtype, inner)
                array = new_arrays.allocate(self.em, self.node, t, inner, zeroed=False)
                self.scratch.append(array)
                own = [b.extract_value(array, [ARRAY_STRIDES, j]) for j in range(len(inner))]
                self.storage[v] = (array, [_i64(0)] * self.rows + own)
            for k, donor in enumerate(kernel_of(m).reuse or ()):
                if donor is None:
                    continue
                v = m.inputs[donor]
                if v not in self.results and v not in shared and v not in self.same:
                    taker[v] = m.outputs[k]

    def _scopes(self) -> None:
        """An alias scope for each array the loop writes: new memory, which no outside
        array shares, nor another of them. The reads of outside arrays alias none; each
        array's stores, and the reads of the values stored there, are in its own scope: so
        LLVM vectorizes the rows' loops without comparing at run time the addresses each
        store and read spans (and keeping a scalar copy of each loop for an overlap)."""
        arrays = [array for array, _ in self.storage.values()] + list(self.results.values())
        for array in arrays:
            self.written.setdefault(id(array), len(self.written))
        self.scope = AliasScope(self.em.module, len(self.written)) if self.written else None

    def _outside_strides(self, m: Node) -> list[list[ir.Value] | None]:
        """Per input of member `m`: its strides over the space if it is an outside array."""
        b = self.em.builder
        spec = kernel_of(m)  # None for a sum_to_like
        ones = (spec.ones if spec else None) or (None,) * len(m.inputs)
        return [space_strides(b, self.outside[v], v.type.ndim, known, self.ndim)
                if v in self.outside and isinstance(v.type, ArrayType) else None
                for v, known in zip(m.inputs, ones)]

    def _row(self, outer: list[ir.Value], strides: list, unit: bool) -> None:
        for (m, role), member_strides in zip(self.members, strides):
            if role != "same":
                self._member(m, role, member_strides, outer, unit)

    def _load(self, v: Value, st: list[ir.Value] | None, indices: list[ir.Value],
              unit: bool) -> ir.Value:
        """Element `indices` of operand `v`: a register, a stored value, an outside one."""
        if v in self.row_values:
            return self.row_values[v]
        root = self.root(v)
        written = None
        if root in self.storage:
            array, st = self.storage[root]
            written = self.written[id(array)]
        elif st is None:
            return self.outside[v]  # a scalar
        else:
            array = self.outside[v]
        if unit and not _is_zero(st[-1]):
            st = st[:-1] + [_i64(1)]
        return load_element(self.em, array, v.type.dtype, st, indices, self.scope, written)

    def _member(self, m: Node, role: str, strides: list, outer: list[ir.Value],
                unit: bool) -> None:
        em = self.em
        inner = self.dims[self.rows:]
        if role == "row sum":
            g = m.inputs[0]
            total = reduction_nests.emit_row_reduction(
                em, "sum", g.type.dtype, inner, lambda ix: self._load(g, None, ix, unit), outer)
            self._per_row(m.outputs[0], total, outer)
            return
        (kernel,) = m.regions
        if role == "row":
            corner = list(outer) + [_i64(0)] * (self.ndim - self.rows)
            elements = [self._load(v, st, corner, False) for v, st in zip(m.inputs, strides)]
            for v, value in zip(m.outputs, run_kernel(em, kernel, elements)):
                self._per_row(v, value, outer)
            return
        reduction = reduction_of(m)
        stored = m.outputs[:-1] if reduction else m.outputs

        def at(indices: list[ir.Value]) -> list[ir.Value]:
            elements = [self._load(v, st, indices, unit) for v, st in zip(m.inputs, strides)]
            values = run_kernel(em, kernel, elements)
            for v, value in zip(stored, values):
                array, st = self.storage[v]
                if unit:
                    st = st[:-1] + [_i64(1)]
                store_element(em, array, v.type.dtype, st, indices, value, self.scope,
                              self.written[id(array)])
            return values

        if reduction is None:
            nests.loop_nest(em, inner, at, "rows.inner", outer)
            return
        element = kernel.outputs[-1].type
        value = reduction_nests.emit_row_reduction(em, reduction.kind, element, inner,
                                              lambda indices: at(indices)[-1], outer)
        self._per_row(m.outputs[-1], value, outer)

    def _per_row(self, v: Value, value: ir.Value, outer: list[ir.Value]) -> None:
        """A per-row value: a register, stored at the outer index when it is an output."""
        self.row_values[v] = value
        if v in self.results:
            array = self.results[v]
            st = [self.em.builder.extract_value(array, [ARRAY_STRIDES, j])
                  for j in range(self.rows)]
            store_element(self.em, array, v.type.dtype, st, outer, value, self.scope,
                          self.written[id(array)])


def _is_zero(stride: ir.Value) -> bool:
    return isinstance(stride, ir.Constant) and stride.constant == 0
