"""The reverse sweep over one region: a forward copy, then adjoints in reverse node order.

`Differentiator.sweep_region(src, dst, inputs, output_adjoints)` appends to
graph `dst` the forward computation of region `src` (its parameters bound to
`inputs`), then walks `src`'s nodes backwards keeping a map from each active
`src` value to its adjoint (a `dst` value), and returns the adjoints of
`src`'s parameters. Adjoints along different paths are summed (`add`,
elementwise for tuples); the chain rule along a path is each op's VJP rule.

- Leaf ops: `OPS[op].vjp(GraphBuilder, g, inputs, out, needs)`. Only active
  values get adjoints, and activity analysis makes a leaf's result active
  only when it reads an active value through an op with a rule, so every
  leaf reached here has one (ops of zero derivative never are).
- `tuple` / `getitem`, by hand: an element's adjoint is `getitem` of the
  tuple's adjoint; a `getitem`'s adjoint is a tuple of zeros with it in place.
- `if`: an `if` on the same condition, each region taking (captured values,
  output adjoints) and returning the captured values' adjoints. A region
  recomputes its branch's forward from the captured values and sweeps it
  back, so nothing crosses a region boundary but parameters; what it
  recomputes and does not read is dropped (`recomputation.py`).
- `while`: a taped forward loop and a counted backward loop (`loops.py`).
- `call` of a recursive graph F: `call F.vjp(args, g)`, a tuple of the
  adjoints of all F's arguments (the graph comes from `Differentiator.callee_vjp`).

Arrays: an array's adjoint is an array of its shape and dtype; where no
adjoint reached one, its zero is `zeros_like` of the primal value. Rules of
element reads and views ask for their contribution to be added *in place*
(`ops.adjoints.AddAt`, `AddIntoView`), into an *accumulator*: an adjoint array
this sweep made for one value alone, that nothing else holds (`exclusive`).
The sweep keeps that true: an adjoint is exclusive when it is a new array a
rule made for that input only (an elementwise result, a `matmul`, a
`sum_to_like` that must sum or convert; not `g` passed on or given to two
inputs, not a view or a `sum_to_like` onto a value like `g`, which may alias), a sum of
two adjoints, `zeros_like`, or an accumulation into an exclusive one; the
first in-place contribution to a value whose adjoint is not exclusive copies
it once (adds it to zeros). Within a loop, the accumulators of the
invariants are carried by the backward loop (`loops.py`), so reading `x[i]`
costs O(1) per iteration in the backward pass.

Writes (`y[i] = v`, `y[a:b] = v`; `writes.py`): `y`'s adjoint is that of its
memory, an accumulator; a write's backward moves the adjoint at the written
place into `v`'s and zeroes it there (`set_at`, `zero_into`), and puts back
the value the forward copy saw overwritten, so that every array holds, at
each point of the backward sweep, what it held at that point of the forward.
Scatters (`x[idx] = v`, `x[mask] = array`, `np.add.at`) the same way, by index
arrays (`scatters.py`: the last of repeated indices wins; add.at accumulates).

Bounds checks: the forward copy keeps its own. What the backward sweep indexes, the
forward indexed already with the same index into an array of the same shape: `add_at`,
`set_at`, the reads of overwritten values in a recomputed body and everything that body
recomputes carry `boundscheck=False` (a negative index still counts from the end).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core import Graph, Node, Value
from ..ops import OPS
from ..ops.adjoints import AddAt, AddIntoView
from ..ops.elementwise import is_array_elementwise
from ..ops.vjp import call_vjp
from ..passes.boundscheck import drop_bounds_checks_in
from ..passes.inline import clone_node
from ..types import I64, ArrayType, TupleType
from . import scatters
from .builder import GraphBuilder
from .errors import NotDifferentiableError
from .recomputation import drop_unused_recomputation
from .values import add_adjoints, adjoint_name, adjoint_or_zero, fresh_copies, zero
from .writes import (
    WRITE_OPS,
    check_views_of_written,
    defining_nodes,
    emit_undo,
    log_type,
    pass_log,
    unread_writes,
    view_chain,
    written_captures,
)

if TYPE_CHECKING:
    from .loops import TapedLoop


class Differentiator:
    """What the sweeps of one differentiated graph share.

    `active`: the graph's active values (`activity.active_values`);
    `callee_vjp(name)`: the name of the vjp graph of callee `name`.
    """

    def __init__(self, active: set[Value], callee_vjp: Callable[[str], str]):
        self.active = active
        self.callee_vjp = callee_vjp

    def sweep_region(self, src: Graph, dst: Graph, inputs: list[Value],
                     output_adjoints: list[Value | None]) -> tuple[list[Value], list[Value | None]]:
        """Emit `src`'s forward and backward into `dst`: (its outputs, its params' adjoints).

        `inputs` are `dst` values for `src`'s parameters; `output_adjoints[j]`
        is the adjoint of output j (None: nothing flows back from it).
        """
        sweep = self.sweep(src, dst, inputs, output_adjoints)
        return [sweep.primal[v] for v in src.outputs], [sweep.adjoints.get(p) for p in src.params]

    def sweep(self, src: Graph, dst: Graph, inputs: list[Value],
              output_adjoints: list[Value | None],
              accumulators: dict[Value, Value] | None = None,
              recomputing: bool = False) -> RegionSweep:
        """`sweep_region`, returning the whole sweep (what each node of `src` became in `dst`).

        `accumulators`: `src` parameters whose adjoints start from these `dst`
        arrays, exclusive (a loop's accumulators of its invariants' adjoints).
        `recomputing`: `src` ran already (a loop body swept back), so a write nothing
        reads afterwards need not run again (nor be undone).
        """
        sweep = RegionSweep(self, src, dst, dict(zip(src.params, inputs)))
        sweep.recomputing = recomputing
        for param, accumulator in (accumulators or {}).items():
            sweep.adjoints[param] = accumulator
            sweep.exclusive.add(param)
        sweep.run_forward()
        sweep.run_backward(output_adjoints)
        return sweep

    def wants_adjoint(self, value: Value) -> bool:
        return value in self.active


class RegionSweep:
    """The forward copy and the adjoint map of one region swept into one graph."""

    def __init__(self, ad: Differentiator, src: Graph, dst: Graph, primal: dict[Value, Value]):
        self.ad = ad
        self.src = src
        self.dst = dst
        self.primal = primal
        """`src` value -> the `dst` value holding it in the forward copy."""
        self.adjoints: dict[Value, Value] = {}
        """Active `src` value -> the `dst` value holding its adjoint so far."""
        self.tapes: dict[Node, TapedLoop] = {}
        """A taped `while` of `src` -> its forward copy, which records a tape."""
        self.copies: dict[Node, Node] = {}
        """A node of `src` -> the node computing the same in the forward copy (for a
        taped `while`, the taped loop)."""
        self.exclusive: set[Value] = set()
        """Array values of `src` whose adjoint is an accumulator only they hold (may be
        written in place)."""
        self.olds: dict[Node, Value | None] = {}
        """A write of `src` -> what it overwrote (an element, or a copy of the slice); None
        for a write the recomputation leaves out."""
        self.if_logs: dict[Node, list[Value]] = {}
        """An `if` of `src` that writes into arrays it captures -> the undo logs of those
        (`written_captures` order) after its forward copy."""
        self.recomputing = False
        """Whether `src` ran already: writes nothing reads afterwards are left out."""
        self.defs = defining_nodes(src)

    def run_forward(self) -> None:
        check_views_of_written(self.src, self.ad.active)
        unread = unread_writes(self.src) if self.recomputing else set()
        for node in self.src.nodes:
            if node.op == "while" and _loops().carries_active(node, self.ad.active):
                _loops().emit_taped_while(self, node)
            elif node.op in WRITE_OPS:
                self.olds[node] = None if node in unread else self.emit_write(node)
            else:
                self.copies[node] = clone_node(node, self.primal)
                if self.recomputing:
                    drop_bounds_checks_in(self.copies[node])
                if node.op == "if" and written_captures(node):
                    self.if_logs[node] = self.log_if(node, self.copies[node])
                self.dst.nodes.append(self.copies[node])

    def run_backward(self, output_adjoints: list[Value | None]) -> None:
        e = GraphBuilder(self.dst, self.src.loc)
        for value, adjoint in zip(self.src.outputs, output_adjoints):
            self.accumulate(e, value, adjoint)
        for node in reversed(self.src.nodes):
            if node.op == "while":
                _loops().backward_while(self, node)
                continue
            if node.op in WRITE_OPS:
                self.backward_write(node)
                continue
            if node in self.if_logs:
                self.backward_logged_if(node)
                continue
            grads = [self.adjoints.get(v) for v in node.outputs]
            if all(g is None for g in grads):
                continue
            e = GraphBuilder(self.dst, node.loc)
            if node.op == "if":
                self.backward_if(node, grads)
            elif node.op == "call":
                self.backward_call(e, node, grads[0])
            elif node.op == "tuple":
                self.backward_tuple(e, node, grads[0])
            elif node.op == "getitem":
                self.backward_getitem(e, node, grads[0])
            else:
                self.backward_leaf(e, node, grads[0])

    def accumulate(self, e: GraphBuilder, value: Value, adjoint, fresh: bool = False) -> None:
        """Add `adjoint` to `value`'s adjoint (sum over paths); inactive values take none.

        `adjoint` is a Value, or an in-place contribution (`AddAt`, `AddIntoView`);
        `fresh`: it is a new array made for `value` alone.
        """
        if adjoint is None or not self.ad.wants_adjoint(value):
            return
        if isinstance(adjoint, (AddAt, AddIntoView)):
            self.accumulate_in_place(e, value, adjoint)
            return
        before = self.adjoints.get(value)
        if before is None:
            self.adjoints[value] = adjoint
            if fresh and isinstance(adjoint.type, ArrayType):
                self.exclusive.add(value)
            return
        self.adjoints[value] = add_adjoints(e, before, adjoint)
        if isinstance(value.type, ArrayType):
            self.exclusive.add(value)

    def accumulator(self, e: GraphBuilder, value: Value) -> Value:
        """`value`'s adjoint as an accumulator only it holds: the adjoint itself if it is
        one, else a new array (zeros, plus the adjoint so far)."""
        before = self.adjoints.get(value)
        if before is not None and value in self.exclusive:
            return before
        accumulator = zero(e, self.primal[value])
        if before is not None:
            accumulator = add_adjoints(e, before, accumulator)
        self.exclusive.add(value)
        return accumulator

    def accumulate_in_place(self, e: GraphBuilder, value: Value, part: AddAt | AddIntoView) -> None:
        """Add an element's or a view's adjoint into `value`'s accumulator, in place."""
        accumulator = self.accumulator(e, value)
        if isinstance(part, AddAt):
            # The forward read of those indices checked them; negative ones still wrap.
            self.adjoints[value] = e.op("add_at", accumulator, part.g, *part.indices,
                                        boundscheck=False)
        else:
            view = e.op(part.op, accumulator, *part.parts, **part.attrs)
            self.adjoints[value] = e.op("add_into", accumulator, view, part.g)

    # ---- writes ----------------------------------------------------------------------

    def emit_write(self, node: Node) -> Value:
        """The forward copy of a write, after reading what it overwrites; return that."""
        e = GraphBuilder(self.dst, node.loc)
        dest = self.primal[node.inputs[0]]
        ran = {"boundscheck": False} if self.recomputing else {}  # else the write's own check
        if node.op == "array_set":
            old = e.op("array_get", dest, *[self.primal[v] for v in node.inputs[2:]], **ran)
        elif node.op == "scatter":
            old = scatters.read_overwritten(e, dest, [self.primal[v] for v in node.inputs[2:]],
                                            node, checked=self.recomputing)
        else:
            old = e.op("array_new_like", dest, dtype=None, fill=None)
            e.op("array_assign", old, dest)
        self.copies[node] = clone_node(node, self.primal)
        if self.recomputing:
            drop_bounds_checks_in(self.copies[node])
        self.dst.nodes.append(self.copies[node])
        return old

    def backward_write(self, node: Node) -> None:
        """Move the adjoint at the written place to the value written, zero it there, and put
        back what the write overwrote."""
        e = GraphBuilder(self.dst, node.loc)
        dest, value = node.inputs[:2]
        root, chain = view_chain(dest, self.defs)
        indices = [self.primal[v] for v in node.inputs[2:]]
        if self.ad.wants_adjoint(root):
            self.flush_views(e, chain)
            accumulator = self.accumulator(e, root)
            target = accumulator
            for view in chain:
                target = e.op(view.op, target, *[self.primal[v] for v in view.inputs[1:]],
                              **view.attrs)
            if node.op == "scatter":
                self.backward_scatter(e, node, target, indices, chain)
                self.adjoints[root] = accumulator
            elif node.op == "array_set":
                if self.ad.wants_adjoint(value):
                    read = e.op("array_get", target, *indices, boundscheck=False)
                    self.accumulate(e, value, written_adjoint(e, chain, read))
                zeroed = e.op("set_at", target, e.const(0.0, target.type.dtype), *indices,
                              boundscheck=False)
                self.adjoints[root] = zeroed if not chain else accumulator
            else:
                if self.ad.wants_adjoint(value):
                    part = written_adjoint(e, chain, target)
                    if part is target and isinstance(value.type, ArrayType):  # a copy: target
                        part = e.op("mul", target, e.const(1.0, target.type.dtype))  # is zeroed
                    self.accumulate(e, value, e.op("sum_to_like", part, self.primal[value]))
                self.adjoints[root] = e.op("zero_into", accumulator, target)
        old = self.olds[node]
        if old is None:
            return
        if node.op == "array_set":
            e.op("array_set", self.primal[dest], old, *indices, boundscheck=False)
        elif node.op == "scatter":
            scatters.restore(e, self.primal[dest], old, indices, node)
        else:
            e.op("array_assign", self.primal[dest], old)

    def flush_views(self, e: GraphBuilder, chain: list[Node]) -> None:
        """Pass the adjoints that reads through the views `chain` after a write through them
        left there on to the written array's, before the write's backward: those reads saw
        what the write wrote (the views' own backward, later, passes on the earlier reads')."""
        for view in reversed(chain):
            g = self.adjoints.pop(view.outputs[0], None)
            self.exclusive.discard(view.outputs[0])
            if g is not None:
                self.backward_leaf(e, view, g)

    def backward_scatter(self, e: GraphBuilder, node: Node, target: Value,
                         indices: list[Value], chain: list[Node]) -> None:
        """A scatter's backward (`scatters.py`): the written value's adjoint read from
        `target` (the written array's accumulator through the scatter's views `chain`),
        then, unless it accumulates, `target` zeroed at the written places."""
        value = node.inputs[1]
        if self.ad.wants_adjoint(value):
            unique = scatters.unique_indices(node.inputs[2:], self.defs)
            read = scatters.value_adjoint(e, target, self.primal[value], indices, node, unique)
            self.accumulate(e, value, written_adjoint(e, chain, read), fresh=True)
        if not node.attrs["accumulate"]:
            scatters.zero_written(e, target, indices, node)

    def log_if(self, node: Node, copy: Node) -> list[Value]:
        """Make `copy`, the forward copy of an `if` that writes into arrays it captures, log
        those writes (`writes.py`); return the logs after it."""
        captures = written_captures(node)
        for k in captures:
            if view_chain(node.inputs[1 + k], self.defs)[1]:
                raise NotDifferentiableError(
                    "cannot differentiate a write inside an `if` into a view taken outside it "
                    "yet: take the view inside the branch", "if", node.loc)
        e = GraphBuilder(self.dst, node.loc)
        logs = [e.op("tape_new", element=log_type(node.inputs[1 + k].type).element)
                for k in captures]
        return pass_log(copy, captures, logs)

    def backward_logged_if(self, node: Node) -> None:
        """Undo the writes of the `if`'s forward copy, then sweep it back (its recomputed
        branch writes again and puts back), the written arrays' accumulators passed through."""
        e = GraphBuilder(self.dst, node.loc)
        captures = written_captures(node)
        for k, log in zip(captures, self.if_logs[node]):
            emit_undo(self.dst, node.loc, log, self.primal[node.inputs[1 + k]],
                      e.const(0, I64), e.op("tape_len", log))
            e.op("tape_free", log)
        grads = [self.adjoints.get(v) for v in node.outputs]
        written = [k for k in captures if self.ad.wants_adjoint(node.regions[0].params[k])]
        if written or any(g is not None for g in grads):
            self.backward_if(node, grads, written)

    # ---- leaf ops --------------------------------------------------------------------

    def backward_leaf(self, e: GraphBuilder, node: Node, g: Value) -> None:
        needs = [self.ad.wants_adjoint(v) for v in node.inputs]
        inputs = [self.primal[v] for v in node.inputs]
        start = len(self.dst.nodes)
        with e.derivative_of(node):
            adjoints = call_vjp(node.op, e, g, inputs, self.primal[node.outputs[0]], needs,
                                node.attrs)
        made = {n.outputs[0] for n in self.dst.nodes[start:] if _makes_new_array(n)}
        given = [a for a in adjoints if isinstance(a, Value)]
        for value, adjoint in zip(node.inputs, adjoints):
            fresh = (isinstance(adjoint, Value) and adjoint in made
                     and sum(a is adjoint for a in given) == 1)
            self.accumulate(e, value, adjoint, fresh)

    def backward_tuple(self, e: GraphBuilder, node: Node, g: Value) -> None:
        for i, value in enumerate(node.inputs):
            if self.ad.wants_adjoint(value):
                self.accumulate(e, value, e.op("getitem", g, index=i))

    def backward_getitem(self, e: GraphBuilder, node: Node, g: Value) -> None:
        whole = node.inputs[0]
        elements = whole.type.elements
        index = node.attrs["index"] % len(elements)
        primal = self.primal[whole]
        parts = [g if i == index else zero(e, e.op("getitem", primal, index=i))
                 for i in range(len(elements))]
        self.accumulate(e, whole, e.op("tuple", *parts))

    # ---- structural ops --------------------------------------------------------------

    def backward_call(self, e: GraphBuilder, node: Node, g: Value) -> None:
        """The adjoints of a call's arguments: `call F.vjp(args..., g)`, unpacked; for a
        function with a user rule (custom_vjp), `call rule(args..., out, g)`."""
        arguments = [self.primal[v] for v in node.inputs]
        result_type = TupleType(tuple(v.type for v in node.inputs))
        rule = node.attrs.get("custom_vjp")
        if rule is not None:
            arguments.append(self.primal[node.outputs[0]])
        callee = rule or self.ad.callee_vjp(node.attrs["callee"])
        result = self.dst.add("call", [*arguments, g], attrs={"callee": callee}, loc=node.loc,
                              types=[result_type]).outputs[0]
        for i, value in enumerate(node.inputs):
            if self.ad.wants_adjoint(value):
                self.accumulate(e, value, e.op("getitem", result, index=i))

    def backward_if(self, node: Node, grads: list[Value | None], written: list[int] = ()
                    ) -> None:
        """An `if` on the same condition whose regions sweep the branches back; the
        accumulators of the captured arrays `written` go in and come back out."""
        captured = node.inputs[1:]
        wanted = [k for k, p in enumerate(node.regions[0].params) if self.ad.wants_adjoint(p)]
        flowing = [j for j, g in enumerate(grads) if g is not None]
        regions = [self.backward_branch(region, flowing, wanted, written)
                   for region in node.regions]
        e = GraphBuilder(self.dst, node.loc)
        inputs = ([self.primal[v] for v in node.inputs] + [grads[j] for j in flowing]
                  + [self.accumulator(e, captured[k]) for k in written])
        backward = self.dst.add("if", inputs, len(wanted), regions=regions, loc=node.loc,
                                names=[adjoint_name(captured[k]) for k in wanted],
                                types=[captured[k].type for k in wanted])
        for k, adjoint in zip(wanted, backward.outputs):
            if k in written:  # the accumulator, written into by the branch
                self.adjoints[captured[k]] = adjoint
                self.exclusive.add(captured[k])
            else:
                self.accumulate(e, captured[k], adjoint)

    def backward_branch(self, region: Graph, flowing: list[int], wanted: list[int],
                        written: list[int] = ()) -> Graph:
        """A region taking (captured values, adjoints of outputs `flowing`, accumulators of
        captured arrays `written`), returning the adjoints of the captured values `wanted`,
        by recomputing and sweeping `region`."""
        params = fresh_copies(region.params)
        adjoint_params = fresh_copies([region.outputs[j] for j in flowing], adjoint_name)
        accumulators = fresh_copies([region.params[k] for k in written], adjoint_name)
        branch = Graph(region.name, params + adjoint_params + accumulators, loc=region.loc)
        output_adjoints: list[Value | None] = [None] * len(region.outputs)
        for j, adjoint in zip(flowing, adjoint_params):
            output_adjoints[j] = adjoint
        sweep = self.ad.sweep(region, branch, params, output_adjoints,
                              {region.params[k]: a for k, a in zip(written, accumulators)},
                              recomputing=bool(written))
        param_adjoints = [sweep.adjoints.get(p) for p in region.params]
        e = GraphBuilder(branch, region.loc)
        branch.outputs = [adjoint_or_zero(e, param_adjoints[k], params[k]) for k in wanted]
        drop_unused_recomputation(branch, deep=True)
        return branch


def _makes_new_array(node: Node) -> bool:
    """Whether `node` makes a new array, which no other value holds yet: a `matmul` does
    (BLAS writes a new result), and so does a `sum_to_like` onto an array of fewer axes or
    another dtype (it must sum or convert; onto one like `g` it may be `g` itself)."""
    if node.op == "sum_to_like":
        g, x = (v.type for v in node.inputs)
        return isinstance(x, ArrayType) and (x.ndim < g.ndim or x.dtype != g.dtype)
    return (is_array_elementwise(node)
            or node.op in ("array_new", "array_new_like")
            or (node.op == "matmul" and isinstance(node.outputs[0].type, ArrayType)))


def written_adjoint(e: GraphBuilder, chain: list[Node], read: Value) -> Value:
    """The adjoint of a value written through the views `chain`, from `read`, what the same
    views of the written array's adjoint hold at the written place: each view's
    `write_adjoint` rule (np.imag's negates: ops/complex_rules.py), else `read` itself."""
    for view in chain:
        rule = OPS[view.op].write_adjoint
        if rule is not None:
            read = rule(e, read, view.attrs)
    return read


def _loops():
    """The module of taped loops (loops.py), imported by the first graph with a `while` to
    differentiate: the gradient of straight-line code does without it, and it was most
    of the AD transforms' import time on a first call (docs/benchmarks.md)."""
    from . import loops

    return loops
