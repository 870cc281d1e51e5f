"""The structural `fused` op (ir/core.py): elementwise work over a broadcast iteration space,
and its optional reduction.

`emit_fused` computes the space's shape from the array inputs (NumPy's
broadcasting: trailing axes aligned, a size-1 axis stretches with stride 0,
other sizes must agree, else ValueError "operands could not be broadcast
together with shapes (3,) (4,)", the shapes travelling with the error when they
fit in `MAX_ERROR_VALUES` numbers), allocates every output as a new
C-contiguous array (owned, on the owned list: `new_arrays.allocate`), then runs one
loop nest over the space: each point reads the inputs' elements (scalars are
passed as they are), evaluates the kernel region and stores the outputs. Last axes
that every input steps through as through one axis run as one loop (`_merged`), so
that short last axes (a batch of 3 x 4 examples) still vectorize.

The nest is emitted twice: a version for the common case where every array
input steps by one element along the last axis (the innermost loop then has
constant unit strides, which the loop vectorizer takes as they are), and the
general strided one (broadcast axes, views). An input the `ones` hint says has
length 1 along an axis is read there with the constant stride 0, so a
`keepdims` reduction's result broadcast along the last axis keeps the unit
version. An input lowered as a view whose last axis is seldom unit-stride
(`FunctionEmitter.strided`: np.diag of a matrix) is read at its run-time stride in
the unit version too, and takes no part in the choice: np.trace compiles one nest,
not a first tier that nearly every call would leave for the general one, and that nest,
where only such views step along the last axis, is left scalar as a general one. Only the
unit version is vectorized (by astjit itself where the loop allows, widen.py; else by
LLVM): the general one's loops carry
metadata that keeps LLVM from vectorizing or unrolling them (`loop_metadata.scalar_loops`),
which would about double the code LLVM compiles per nest for the rare strided case.

With a reduction (attr `reduce`), `reduction_nests.emit_reduction` owns the loops
and the reduced output; the kernel's other values are stored at each point it
visits. A reduction of every element of one C-contiguous input as it is (`np.max(x)`)
is a call of the runtime's instead (whole_reductions.py), and so is a kernel that is one
float `+`, `-`, `*` or `/` of two operands over one or two axes, in any layout
(binary_calls.py). Without one, an output with a donor (attr `reuse`, ir/passes/fuse.py)
takes the donor input's memory when `_reusable` says so at run time (a new reference to
its owner, no allocation); that version of the nest reads the donor through the very
address it writes, so LLVM needs no overlap check.
Nor for the other inputs: an output is new memory or a donor of which no view is alive, so
each output's stores are given an alias scope of their own, which the nest's other reads
and the other outputs' stores are marked not to alias, and a donor's reads are in its
output's scope (`kernel.AliasScope`; without it LLVM's vectorizer compared the addresses
each store and read span at run time, and kept a scalar copy of the loop for an overlap). An output
an assignment copies into an input (attr `into`, ir/passes/into.py) is written into
that input's memory the same way, when it has the space's shape and no other input
may overlap it except as its own elements (else a new array, which the assign copies).

The kernel's scalar ops run with NumPy's semantics, not Python's: the emitter's
`numpy_semantics` flag makes `FunctionEmitter.emit_leaf` skip the table's error
checks (math functions give NaN / inf) and take the ops' NumPy lowerings
(`OpDef.llvm_numpy`, routines in `NUMPY_ROUTINES`) where Python's raise: `/`
is a plain IEEE division, float `//` and `%` by zero give `a / b` and NaN,
integer `//` and `%` by zero give 0, `**` on floats is C pow.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.kernels import fused_attrs
from ...ir.types import ArrayType, ScalarType
from . import (
    array_layout,
    binary_calls,
    conversions,
    copies,
    divmod_power,
    loop_metadata,
    nests,
    new_arrays,
    owned,
    parallel,
    reduction_nests,
    ufunc_calls,
    whole_reductions,
    widen,
)
from . import messages as msg
from .compare import compare_const, const_like
from .kernel import (
    AliasScope,
    broadcast_shapes,
    load_element,
    run_kernel,
    space_strides,
    store_element,
)
from .lltypes import ARRAY_OWNER, ARRAY_STRIDES, I1, I64_T

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def broadcast_dims(em: FunctionEmitter, node: Node, arrays_: list[tuple[ir.Value, int]],
                   ndim: int) -> list[ir.Value]:
    """The space's shape, after the check that the arrays' shapes broadcast."""
    shapes = [[array_layout.dim(em.builder, a, j) for j in range(k)] for a, k in arrays_]
    return broadcast_shapes(em, node, shapes, ndim)


def emit_fused(em: FunctionEmitter, node: Node) -> list[ir.Value]:
    spec = fused_attrs(node)
    args = em.values_of(node.inputs)
    dims = broadcast_dims(em, node, [(a, k) for a, k in zip(args, spec.plan) if k is not None],
                          spec.ndim)
    binary = binary_calls.operands(em, node)
    if binary is not None:
        out = _allocate(em, node, node.outputs[0].type, dims)
        binary_calls.emit_call(em, node, binary, args, dims, out)
        return [out]
    source = whole_reductions.source(em, node)
    if source is None:
        return _nests(em, node, args, dims)
    return [whole_reductions.reduce(em, node, source, args[source], dims,
                                    lambda: _nests(em, node, args, dims)[-1])]


def _nests(em: FunctionEmitter, node: Node, args: list[ir.Value],
           dims: list[ir.Value]) -> list[ir.Value]:
    """The node's loop nests over the space `dims`: its outputs."""
    spec = fused_attrs(node)
    b = em.builder
    ndim, plan = spec.ndim, spec.plan
    (kernel,) = node.regions

    # Per input: its element strides over the space's axes (0 where it broadcasts; the
    # constant 0 along the axes the `ones` hint says have length 1).
    ones = spec.ones or (None,) * len(args)
    strides = [None if k is None else space_strides(b, value, k, known, ndim)
               for value, k, known in zip(args, plan, ones)]
    in_types = [v.type for v in node.inputs]
    # Inputs read at their own stride in the unit version too (`FunctionEmitter.strided`);
    # never the input an output is written into (its reads are its writes' addresses).
    strided = [v in em.strided and j != spec.into for j, v in enumerate(node.inputs)]

    def point(unit: bool, same: dict | None = None, scope: AliasScope | None = None):
        """The kernel's results at a point of the space (unit: last-axis strides of 1;
        `same`: input index -> (the strides to read it with, the output in whose memory it
        lies); `scope`: the outputs' stores, which the reads of the other inputs do not
        alias)."""
        def at(indices: list[ir.Value], read: list | None = None) -> list[ir.Value]:
            """(`read`, when given, receives the inputs' elements.)"""
            elements = [] if read is None else read
            for j, (value, t, st) in enumerate(zip(args, in_types, strides)):
                donor = same is not None and j in same
                if donor:
                    st, output = same[j]
                if st is None:
                    elements.append(value)
                    continue
                if unit and not _is_zero(st[-1]) and not (strided[j] and not donor):
                    st = st[:-1] + [_i64(1)]
                elements.append(load_element(em, value, t.dtype, st, indices, scope,
                                             output if donor else None))
            return run_kernel(em, kernel, elements)
        return at

    unit_conds = [b.icmp_signed("==", st[-1], _i64(1))
                  for st, k, apart in zip(strides, plan, strided) if st is not None and k >= 1
                  and not _is_zero(st[-1]) and not apart]
    loops = _merged(em, node, dims, strides)
    fast = None
    if ndim == 0:
        fast = ir.Constant(I1, 0)
    elif unit_conds:
        fast = unit_conds[0]
        for c in unit_conds[1:]:
            fast = b.and_(fast, c)
        # A last loop of one point reads index 0 alone, the same at any stride; an input
        # whose last axis has length 1 has the stride 0 there (`space_strides`), which
        # would leave a first tier for the general one on the first call.
        fast = b.or_(fast, b.icmp_signed("==", loops[-1], _i64(1)))
    if fast is None and any(strided):
        # What steps along the last axis is strided views alone (np.trace's diagonal): the
        # vectorizer would version the loop on a unit stride that does not come.
        made: list[ir.Value] = []
        loop_metadata.scalar_loops(b, lambda: made.extend(_versions(em, node, dims, loops,
                                                                    point, fast, args)))
        return made
    return _versions(em, node, dims, loops, point, fast, args)


def _versions(em: FunctionEmitter, node: Node, dims: list[ir.Value], loops: list[ir.Value],
              point, fast: ir.Value | None, args: list[ir.Value]) -> list[ir.Value]:
    """The kernel's nests: its reduction, or its elementwise outputs (per exponent)."""
    if fused_attrs(node).reduce is not None:
        return _reduction(em, node, dims, loops, point,
                          None if isinstance(fast, ir.Constant) else fast)
    exponent = _run_time_exponent(em, node, args)
    if exponent is not None:
        return _by_exponent(em, node, exponent,
                            lambda: _elementwise(em, node, dims, loops, point, fast))
    return _elementwise(em, node, dims, loops, point, fast)


def _merged(em: FunctionEmitter, node: Node, dims: list[ir.Value],
            strides: list[list[ir.Value] | None]) -> list[ir.Value]:
    """The shape the nest loops over: `dims`, where every array input steps through a run
    of last axes as through one axis (stride[k] == stride[k+1] * dims[k+1]; the outputs
    are C-contiguous), with that run as one loop: its axes but the last of length 1, the
    last their product. A batch of small examples (3 x 4 each) then gives the vectorizer
    loops as long as an example, not as its last axis. A reduction merges only reduced
    axes (the last one reduced: its output's shape stays). A parallel nest merges as the
    serial one does, so that it runs the serial nest's loops (parallel.py splits the last
    where it is all of them)."""
    spec, n = fused_attrs(node), len(dims)
    lowest = 0
    if spec.reduce is not None:
        axes, top = spec.reduce.axes, n - 1
        while top - 1 >= lowest and top in axes and top - 1 in axes:
            top -= 1
        lowest = top
    if lowest >= n - 1:
        return dims
    b = em.builder
    loops, merging = list(dims), ir.Constant(I1, 1)
    for k in reversed(range(lowest, n - 1)):
        for st in strides:
            if st is not None and not (_is_zero(st[k]) and _is_zero(st[k + 1])):
                step = b.mul(st[k + 1], dims[k + 1], flags=["nsw"])
                merging = b.and_(merging, b.icmp_signed("==", st[k], step))
        loops[k] = b.select(merging, _i64(1), dims[k])
        loops[-1] = b.select(merging, b.mul(dims[k], loops[-1], flags=["nsw"]), loops[-1])
    return loops


# ---- NumPy's powers of one run-time exponent ---------------------------------------------------

FAST_POWERS = {0.5: lambda em, a: em.call_intrinsic("llvm.sqrt", [a]),
               2.0: lambda em, a: em.builder.fmul(a, a),
               -1.0: lambda em, a: em.builder.fdiv(const_like(a, 1), a),
               1.0: lambda em, a: a,
               0.0: lambda em, a: const_like(a, 1)}
"""The exponents NumPy's float power loop computes without pow where the exponent is one
number for every element (stride 0), and how: sqrt, a * a, 1 / a, a, 1. Its results,
bit for bit (pow differs at 0.5: -0.0 and -inf; the others are C pow's correctly rounded
results, which libmvec's vector pow need not give)."""

_FAST_EXPONENT: dict[int, bool] = {}
"""While `_by_exponent` emits one version of a kernel: its power node (by id) -> whether
that version's exponent is one of FAST_POWERS."""


def _run_time_exponent(em: FunctionEmitter, node: Node, args: list[ir.Value]):
    """(the kernel's power node, its exponent as the power's operand) where the kernel has
    one float power of NumPy's stride-0 exponent (`sqrt_at_half`) that is a scalar input
    (a run-time number, not an element), else None."""
    (kernel,) = node.regions
    plan = fused_attrs(node).plan
    powers = [n for n in kernel.nodes if n.op == "pow" and n.attrs.get("sqrt_at_half")
              and isinstance(n.outputs[0].type, ScalarType) and n.outputs[0].type.is_float]
    if len(powers) != 1:
        return None
    (power,) = powers
    exponent, cast_to = power.inputs[1], None
    producer = next((n for n in kernel.nodes if exponent in n.outputs), None)
    if producer is not None and producer.op == "cast":
        exponent, cast_to = producer.inputs[0], producer.attrs["to"]
    if exponent not in kernel.params:
        return None
    k = kernel.params.index(exponent)
    if plan[k] is not None or not isinstance(exponent.type, ScalarType):
        return None
    value = args[k]
    if cast_to is not None:
        value = conversions.cast_value(em.builder, value, exponent.type, cast_to)
    return power, value


def _by_exponent(em: FunctionEmitter, node: Node, exponent, emit) -> list[ir.Value]:
    """`emit()`'s nest twice, chosen before the loops as NumPy's loop chooses: where the
    exponent is one of FAST_POWERS (each formula computed, the exponent's selected: a
    sqrt and a division per element, vectorized), and where it is none (pow alone). A
    kernel selecting between pow and the others would compute pow, the costly one, at
    every element; a version per exponent compiled six nests (three times the time)."""
    power, value = exponent
    b = em.builder
    fast = None
    for at in FAST_POWERS:
        equal = b.fcmp_ordered("==", value, ir.Constant(value.type, at))
        fast = equal if fast is None else b.or_(fast, equal)
    versions = []
    with b.if_else(fast) as (then, otherwise):
        for is_fast, branch in ((True, then), (False, otherwise)):
            with branch:
                _FAST_EXPONENT[id(power)] = is_fast
                try:
                    versions.append((emit(), b.block))
                finally:
                    del _FAST_EXPONENT[id(power)]
    return [em.merge(out.type, [(outputs[j], block) for outputs, block in versions])
            for j, out in enumerate(node.outputs)]


def _reduction(em: FunctionEmitter, node: Node, dims: list[ir.Value], loops: list[ir.Value],
               point, unit: ir.Value | None) -> list[ir.Value]:
    """The kernel's last value reduced (reduction_nests.py); its other values stored, at each
    point the reduction's loops visit (every point once)."""
    b = em.builder
    stored = [_allocate(em, node, out.type, dims) for out in node.outputs[:-1]]
    types = [out.type for out in node.outputs[:-1]]
    strides = [[b.extract_value(o, [ARRAY_STRIDES, j]) for j in range(len(dims))]
               for o in stored]

    def at_point(unit_strides: bool):
        # new arrays: no input's memory
        scope = AliasScope(em.module, len(stored)) if stored else None
        at = point(unit_strides, None, scope)

        def value(indices: list[ir.Value]) -> ir.Value:
            *values, reduced = at(indices)
            for k, (o, t, st, r) in enumerate(zip(stored, types, strides, values)):
                store_element(em, o, t.dtype, st[:-1] + [_i64(1)] if unit_strides else st,
                              indices, r, scope, k)
            return reduced
        return value
    return [*stored, reduction_nests.emit_reduction(em, node, loops, at_point, unit)]


def _is_zero(stride: ir.Value) -> bool:
    return isinstance(stride, ir.Constant) and stride.constant == 0


def _elementwise(em: FunctionEmitter, node: Node, dims: list[ir.Value], loops: list[ir.Value],
                 point, fast: ir.Value | None) -> list[ir.Value]:
    """The outputs (new arrays, or inputs' memory: `reuse`), then one nest storing the
    kernel's results at every point."""
    b = em.builder
    spec = fused_attrs(node)
    if spec.into is not None:
        return _into(em, node, dims, loops, point, fast, spec.into)
    donors = spec.reuse or (None,) * len(node.outputs)
    types = [out.type for out in node.outputs]
    if all(d is None for d in donors):
        outputs = [_allocate(em, node, t, dims) for t in types]
        _store_all(em, node, loops, point, fast, outputs, {})
        return outputs
    # Two versions: in the one writing into the donors' memory, a donor is read through
    # the very address it is written to, so LLVM sees no overlap to check at run time.
    args = em.values_of(node.inputs)
    ok = ir.Constant(I1, 1)
    for donor in donors:
        if donor is not None:
            ok = b.and_(ok, _reusable(em, args[donor], dims))
    reused_map = {d: k for k, d in enumerate(donors) if d is not None}
    if em.fast_only(ok):
        reused = [_allocate(em, node, t, dims) if d is None else
                  owned.retained(em, args[d]) for t, d in zip(types, donors)]
        _store_all(em, node, loops, point, fast, reused, reused_map)
        return reused
    with b.if_else(ok) as (then, otherwise):
        with then:
            reused = [_allocate(em, node, t, dims) if d is None else
                      owned.retained(em, args[d]) for t, d in zip(types, donors)]
            _store_all(em, node, loops, point, fast, reused, reused_map)
            reused_block = b.block
        with otherwise:
            fresh = [_allocate(em, node, t, dims) for t in types]
            _store_all(em, node, loops, point, fast, fresh, {})
            fresh_block = b.block
    return [em.merge(t, [(r, reused_block), (f, fresh_block)])
            for t, r, f in zip(types, reused, fresh)]


def _into(em: FunctionEmitter, node: Node, dims: list[ir.Value], loops: list[ir.Value], point,
          fast: ir.Value | None, target: int) -> list[ir.Value]:
    """The one output written into input `target`'s memory (attr `into`, ir/passes/into.py),
    read there through the very address written, when it has the space's shape and no
    other input may overlap it but as its own elements; else a new array."""
    b = em.builder
    args = em.values_of(node.inputs)
    dest, dest_t = args[target], node.inputs[target].type
    ok = ir.Constant(I1, 1)
    for axis, d in enumerate(dims):
        ok = b.and_(ok, b.icmp_signed("==", array_layout.dim(b, dest, axis), d))
    for j, (value, source) in enumerate(zip(args, node.inputs)):
        if j != target and isinstance(source.type, ArrayType):
            apart = b.not_(copies.may_overlap(b, value, source.type, dest, dest_t))
            if source.type.ndim == dest_t.ndim:
                apart = b.or_(apart, copies.same_elements(b, value, dest, dest_t.ndim))
            ok = b.and_(ok, apart)
    (t,) = [out.type for out in node.outputs]
    if em.fast_only(ok):
        written = owned.retained(em, dest)
        _store_into(em, node, loops, point, fast, written, target)
        return [written]
    with b.if_else(ok, likely=True) as (then, otherwise):
        with then:
            written = owned.retained(em, dest)
            _store_into(em, node, loops, point, fast, written, target)
            written_block = b.block
        with otherwise:
            fresh = _allocate(em, node, t, dims)
            _store_all(em, node, loops, point, fast, [fresh], {})
            fresh_block = b.block
    return [em.merge(t, [(written, written_block), (fresh, fresh_block)])]


def _allocate(em: FunctionEmitter, node: Node, t: ArrayType, dims: list[ir.Value]) -> ir.Value:
    new_arrays.check_dims(em, node, t.dtype, dims)
    return new_arrays.allocate(em, node, t, dims, zeroed=False)


def _store_all(em: FunctionEmitter, node: Node, dims: list[ir.Value], point,
               fast: ir.Value | None, outputs: list[ir.Value], donors: dict[int, int]) -> None:
    """One nest storing the kernel's results into `outputs` at every point; `fast` (None:
    always) chooses the unit-stride version, emitted twice; `donors`: input -> output in
    whose memory it lies."""
    b = em.builder
    ndim = fused_attrs(node).ndim
    out_strides = [[b.extract_value(o, [ARRAY_STRIDES, j]) for j in range(ndim)] for o in outputs]
    out_types = [o.type for o in node.outputs]

    def nest(unit: bool) -> None:
        shown = [st[:-1] + [_i64(1)] if unit else st for st in out_strides]
        scope = AliasScope(em.module, len(outputs))
        at = point(unit, {j: (shown[k], k) for j, k in donors.items()}, scope)

        def body(indices: list[ir.Value]) -> None:
            for k, (o, t, st, r) in enumerate(zip(outputs, out_types, shown, at(indices))):
                store_element(em, o, t.dtype, st, indices, r, scope, k)
        if unit and not parallel.in_parallel(em, node):
            widen.widened_nest(em, lambda: nests.loop_nest(em, dims, body, "fused"))
        else:
            parallel.nest(em, node, dims, body, "fused")

    _unit_or_strided(em, fast, nest)


def _unit_or_strided(em: FunctionEmitter, fast: ir.Value | None, nest) -> None:
    """`nest(unit)`: the unit-stride version where `fast` holds (None: always)."""
    if fast is None:
        nest(True)
    elif isinstance(fast, ir.Constant):
        nest(bool(fast.constant))
    else:
        loop_metadata.unit_or_strided(em, fast, nest)


BLOCK = 64
"""Points per block of a kernel that keeps the target's element where a condition fails."""


def _store_into(em: FunctionEmitter, node: Node, dims: list[ir.Value], point,
                fast: ir.Value | None, dest: ir.Value, target: int) -> None:
    """The kernel's one result stored into `dest`, the memory of input `target`, at every
    point. A kernel that keeps the element it read where a condition fails (`x[m] = 0`:
    `where(m, 0, x)`) stores only where the condition holds: writing back unchanged
    memory costs as much again as reading it. Its unit-stride version runs the last axis
    in blocks of `BLOCK` points: a loop over the block finds whether any condition holds
    (an `or` reduction, vectorized), and only then a second loop stores the block's
    results (vector stores of the selects; a vector masked store per element, which is
    what LLVM makes of a conditional store, is slow on many CPUs)."""
    b = em.builder
    ndim = len(dims)
    strides = [b.extract_value(dest, [ARRAY_STRIDES, j]) for j in range(ndim)]
    dtype = node.outputs[0].type.dtype
    keeps = _keeps_element(node.regions[0], target)

    def nest(unit: bool) -> None:
        st = strides[:-1] + [_i64(1)] if unit else strides
        at = point(unit, {target: (st, 0)})

        def store(indices: list[ir.Value]) -> None:
            (result,) = at(indices)
            store_element(em, dest, dtype, st, indices, result)

        def one(indices: list[ir.Value]) -> None:
            b = em.builder  # (a parallel chunk's body is emitted by a builder of its own)
            read: list[ir.Value] = []
            (result,) = at(indices, read)
            kept = _kept_where(b, result, read[target])
            if kept is None:
                store_element(em, dest, dtype, st, indices, result)
                return
            with b.if_then(kept[0]):
                store_element(em, dest, dtype, st, indices, kept[1])

        if not keeps:
            parallel.nest(em, node, dims, store, "fused")
            return
        if not (unit and ndim):
            parallel.nest(em, node, dims, one, "fused")
            return
        n = dims[-1]

        def changed(indices: list[ir.Value]) -> ir.Value:
            b = em.builder
            read: list[ir.Value] = []
            (result,) = at(indices, read)
            kept = _kept_where(b, result, read[target])
            return ir.Constant(I1, 1) if kept is None else kept[0]

        def block(indices: list[ir.Value]) -> None:
            b = em.builder
            *outer, q = indices
            start = b.mul(q, _i64(BLOCK), flags=["nsw"])
            stop = b.add(start, _i64(BLOCK), flags=["nsw"])
            stop = b.select(b.icmp_signed("<", stop, n), stop, n)
            found = _any(b, start, stop, lambda i: changed([*outer, i]))
            with b.if_then(found):
                nests.count_up(b, start, stop, lambda i: store([*outer, i]),
                               ("fused.block", "fused.block.body", "fused.block.done"))
        blocks = b.sdiv(b.add(n, _i64(BLOCK - 1), flags=["nsw"]), _i64(BLOCK))
        parallel.nest(em, node, [*dims[:-1], blocks], block, "fused")

    _unit_or_strided(em, fast, nest)


def _any(b: ir.IRBuilder, start: ir.Value, stop: ir.Value, condition) -> ir.Value:
    """Whether `condition(i)` holds for some i in range(start, stop): a loop or-reducing
    every one (no early exit, so that LLVM vectorizes it)."""
    before = b.block
    head, body, done = (b.function.append_basic_block(f"fused.any.{name}")
                        for name in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    i, found = b.phi(I64_T), b.phi(I1)
    i.add_incoming(start, before)
    found.add_incoming(ir.Constant(I1, 0), before)
    b.cbranch(b.icmp_signed("<", i, stop), body, done)
    b.position_at_end(body)
    more = b.or_(found, condition(i))
    i.add_incoming(b.add(i, _i64(1), flags=["nsw"]), b.block)
    found.add_incoming(more, b.block)
    loop_metadata.no_runtime_unroll(b.branch(head))
    b.position_at_end(done)
    return found


def _keeps_element(kernel, target: int) -> bool:
    """Whether the kernel's one result is a `select` whose one side is the element of
    input `target` it read (`where(m, 0, x)` into x)."""
    (result,) = kernel.outputs
    node = next((n for n in kernel.nodes if result in n.outputs), None)
    old = kernel.params[target]
    return node is not None and node.op == "select" and (node.inputs[1] is old) != (
        node.inputs[2] is old)


def _kept_where(b: ir.IRBuilder, result: ir.Value, old: ir.Value):
    """(condition, new value) when `result` is a select between a new value and `old`,
    the element already in memory: the store then only where the condition holds."""
    if not isinstance(result, ir.SelectInstr):
        return None
    condition, then, otherwise = result.operands
    if otherwise is old and then is not old:
        return condition, then
    if then is old and otherwise is not old:
        return b.not_(condition), otherwise
    return None


def _reusable(em: FunctionEmitter, donor: ir.Value, dims: list[ir.Value]) -> ir.Value:
    """Whether an output may take `donor`'s memory: C-contiguous, of shape `dims`, and its
    owner has no other reference (no view of it is alive). See ir/passes/fuse.py."""
    b = em.builder
    owner = b.extract_value(donor, ARRAY_OWNER)
    refcount = b.load(b.bitcast(owner, I64_T.as_pointer()))
    ok = b.icmp_signed("==", refcount, _i64(1))
    stride = _i64(1)
    for axis in reversed(range(len(dims))):
        d = dims[axis]
        ok = b.and_(ok, b.icmp_signed("==", array_layout.dim(b, donor, axis), d))
        ok = b.and_(ok, b.or_(b.icmp_signed("<=", d, _i64(1)), b.icmp_signed(
            "==", b.extract_value(donor, [ARRAY_STRIDES, axis]), stride)))
        stride = b.mul(stride, d, flags=["nsw"])
    return ok


def reduce_routine(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """A `reduce` leaf (IR the fusion pass has not run on): as its one-node `fused` form."""
    from ...ir.passes.fuse import reduction_node

    (result,) = emit_fused(em, reduction_node(node))
    return result


# ---- the kernel's scalar ops with NumPy's semantics -------------------------------------------

def _divmod_float(op: str):
    """NumPy's float `//` or `%`: by zero `a / b` and `fmod`'s NaN, else Python's."""
    def routine(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
        b = em.builder
        a, d = args
        quotient, remainder = divmod_power.divmod_float(em, a, d)
        if op == "floordiv":
            return b.select(compare_const(b, "==", d, 0), b.fdiv(a, d), quotient)
        return remainder  # by zero fmod's NaN, as NumPy's npy_divmod returns it
    return routine


def _fmod_float(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    return divmod_power.fmod_float(em, *args)


def _divmod_int(op: str, signed: bool = True):
    """NumPy's integer `//` or `%`, 0 by zero: signed as Python floors, unsigned LLVM's
    unsigned division."""
    def routine(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
        b = em.builder
        a, d = args
        zero = compare_const(b, "==", d, 0)
        safe = b.select(zero, const_like(d, 1), d)
        if signed:
            quotient, remainder = divmod_power.divmod_int(b, a, safe)
            result = quotient if op == "floordiv" else remainder
        else:
            result = b.udiv(a, safe) if op == "floordiv" else b.urem(a, safe)
        return b.select(zero, const_like(a, 0), result)
    return routine


def _fmod_int(signed: bool):
    """NumPy's integer fmod: C's remainder, 0 by zero.

    A signed one divides the magnitudes unsigned and gives the remainder a's sign: by -1
    that is 0 without the trap `srem` has at the lowest value, and LLVM's 64-bit division,
    which takes a 32-bit divide where both operands' upper halves are zero, chooses it
    by the operands' magnitudes, not their signs: on mixed-sign data `srem`'s choice was
    mispredicted at every other element (benchmarks/breadth_run.py `fmod_int`)."""
    def routine(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
        b = em.builder
        a, d = args
        zero = compare_const(b, "==", d, 0)
        if not signed:
            return b.select(zero, const_like(a, 0), b.urem(a, b.select(zero, const_like(d, 1), d)))
        negative = compare_const(b, "<", a, 0)
        magnitude = b.select(negative, b.neg(a), a)
        divisor = b.select(compare_const(b, "<", d, 0), b.neg(d), d)
        remainder = b.urem(magnitude, b.select(zero, const_like(d, 1), divisor))
        return b.select(zero, const_like(a, 0), b.select(negative, b.neg(remainder), remainder))
    return routine


def _cast(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """NumPy's float to int: the conversion instruction, no NaN or range check."""
    source, to = node.inputs[0].type, node.attrs["to"]
    if isinstance(source, ScalarType) and isinstance(to, ScalarType):
        return conversions.cast_value(em.builder, args[0], source, to) \
            if not (source.is_complex or to.is_complex) \
            else conversions.complex_cast(em.builder, args[0], source, to)
    return conversions.cast(em, node, args)


def pow_int_numpy(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """NumPy's integer a ** b: a negative b is a ValueError whatever a is (an unsigned b is
    never negative: uint8 255 is 255, not -1)."""
    a, b = args
    if isinstance(b, ir.Constant) and b.constant >= 0:
        return divmod_power.pow_by_constant(em.builder, a, b.constant)
    exponent = node.inputs[1].type
    if not getattr(exponent, "dtype", exponent).is_unsigned:
        em.fail_if(node, compare_const(em.builder, "<", b, 0), "ValueError",
                   msg.NUMPY_INT_NEGATIVE_POWER)
    return divmod_power.pow_loop(em, a, b)


def pow_float_numpy(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """NumPy's float a ** b: C pow, but where NumPy's loop has the exponent as one number
    (`sqrt_at_half`, ops/scalar.py `_pow_operands`) and it is 0.5, 2, -1, 1 or 0, that
    exponent's FAST_POWERS formula (-0.0 ** 0.5 is -0.0 and -inf ** 0.5 NaN there). A
    constant exponent picks one here, a run-time one of a kernel selects one in
    `_by_exponent`'s version for them; elsewhere a run-time 0.5 selects sqrt (both
    computed). np.power of scalars outside a kernel runs NumPy's own loop, whose pow is
    SVML's on some CPUs, not C's (docs/arrays.md)."""
    a, b = args
    if id(node) in _FAST_EXPONENT:
        if not _FAST_EXPONENT[id(node)]:
            return em.call_intrinsic("llvm.pow", [a, b])
        result = FAST_POWERS[0.0](em, a)
        for at, formula in FAST_POWERS.items():
            if at != 0.0:
                equal = em.builder.fcmp_ordered("==", b, ir.Constant(b.type, at))
                result = em.builder.select(equal, formula(em, a), result)
        return result
    if node.attrs.get("sqrt_at_half") and isinstance(b, ir.Constant) and b.constant in FAST_POWERS:
        return FAST_POWERS[b.constant](em, a)
    if node.attrs.get("sqrt_at_half"):
        loop = ufunc_calls.numpy_loop_call(em, "power", node.outputs[0].type, args)
        if loop is not None:
            return loop
    power = em.call_intrinsic("llvm.pow", [a, b])
    if not node.attrs.get("sqrt_at_half") or isinstance(b, ir.Constant):
        return power
    half = compare_const(em.builder, "==", b, 0.5)
    return em.builder.select(half, em.call_intrinsic("llvm.sqrt", [a]), power)


NUMPY_ROUTINES = {
    "floordiv_float_numpy": _divmod_float("floordiv"), "mod_float_numpy": _divmod_float("mod"),
    "floordiv_int_numpy": _divmod_int("floordiv"), "mod_int_numpy": _divmod_int("mod"),
    "floordiv_uint_numpy": _divmod_int("floordiv", signed=False),
    "mod_uint_numpy": _divmod_int("mod", signed=False),
    "fmod_float_numpy": _fmod_float, "fmod_int_numpy": _fmod_int(signed=True),
    "fmod_uint_numpy": _fmod_int(signed=False),
    "pow_int_numpy": pow_int_numpy, "pow_float_numpy": pow_float_numpy, "cast_numpy": _cast,
}
"""The routines of the ops' NumPy-semantics lowerings (`OpDef.llvm_numpy`)."""
