"""A graph rewritten to run on every example of a batch at once (vmap's batching transform).

`vectorized_call(graph, callee, args, batched)` appends to `graph` the nodes of
`callee` applied to `args`, where `batched[i]` says whether args[i] carries a leading
batch axis (the examples along axis 0). A value whose inputs are all unbatched is
computed once, by a copy of its node; a node with a batched input is replaced by what
its op's batching rule (`OpDef.batch`, ops/batching.py) builds. It returns the result
and whether it is batched (for a tuple, a tuple of such flags), or raises
`NotBatchable` (ops/batching.py), having appended nothing, where an op has no rule
for its operands or where running the function once per batch instead of once per
example would change what it does (a write into an array every example shares, a
callback). A write of batched values into an array the function made batches that
array (`BatchBuilder.writable`); `while` and `if` are rewritten region by region.
"""
from __future__ import annotations

from ..core import Graph, Node, Value
from ..ops import OPS
from ..ops.adjoints import ACCUMULATING
from ..ops.batching import NotBatchable, broadcast, materialized
from ..ops.table import OpTypeError
from ..passes.inline import clone_node
from ..types import I64, ArrayType, ScalarType, TapeType, TupleType, Type, weak
from .builder import GraphBuilder

REPEATED_EFFECTS = ("callback",)
"""Ops whose effect depends on how often they run, beyond the writes into arrays. (A
differentiated loop's tapes are values: with what they record the same for every
example, as a counter, they are made once; a tape recording batched values holds one
batch per entry, `BatchBuilder.recording`.)"""
TAPE_EFFECTS = ("tape_push", "tape_clear", "tape_free")
"""Ops changing a tape: run for an example that does not take the branch or whose loop is
done, they would record for it what it never computed."""
MAY_ALIAS = ("tuple", "array_astype", "sum_to_like", "cast")
"""Ops whose result may be their array operand itself (not as a view op): an array
they took is not copied for each example (`BatchBuilder.writable`)."""
NOT_FRESH = ("getitem", "undef", "const", *MAY_ALIAS)
"""Ops whose array result was not made by the function: an element of a container, or
an array that may be another one."""
MASKED = ("array_get", "add_at")
"""Ops that may run for examples that do not take their branch (or whose loop is done)
once masked: an element read (`_masked_read`), an adjoint added at an element
(`_masked_add`)."""
SHAPED_LIKE = ("array_new_like",)
"""Creations of an array's shape: no error of their own but MemoryError, which an
example's values do not decide (an adjoint's accumulator, made in a branch)."""
COPYING_VIEWS = ("array_reshape",)
"""Views that are copies where the array is not contiguous: a batch of views of a
view may be one where the example's was not."""


def vectorized_call(graph: Graph, callee: Graph, args: list[Value],
                    batched: list[bool]) -> tuple[Value, object]:
    """`callee` applied to the batch `args` (batched along axis 0 where `batched` says),
    built in `graph`: (its result, whether batched)."""
    _check_repeatable(callee)
    scratch = Graph(graph.name, loc=callee.loc)
    b = BatchBuilder(scratch, callee.loc)
    b.size = next(b.op("array_dim", a, axis=0) for a, f in zip(args, batched) if f)
    b.values.update((p, (a, f)) for p, a, f in zip(callee.params, args, batched))
    for node in callee.nodes:
        b.emit(node)
    graph.nodes.extend(scratch.nodes)
    return b.values[callee.outputs[0]]


class BatchBuilder(GraphBuilder):
    """Builds the batched nodes (the `Batching` a rule gets, ops/batching.py): the
    rewritten value of each of the function's values and whether it is batched."""

    def __init__(self, graph: Graph, loc):
        super().__init__(graph, loc)
        self.size: Value | None = None
        self.values: dict[Value, tuple[Value, object]] = {}
        self.definitions: dict[Value, Node] = {}
        self.emitted: list[Node] = []
        self.params: dict[Value, Value] = {}
        """A region's parameters (old -> new): writes into them the loop settles."""
        self.mask: Value | None = None
        """Where the nodes emitted now run for examples that do not take them (a branch of
        an `if` whose condition differs per example): the batch of bools saying which
        examples do, for the element reads to check only theirs (`_masked_read`)."""
        self.made_under: dict[Value, Value | None] = {}
        """The mask each of the function's values was computed under: an accumulator made
        under the mask a write into it runs under is one only that branch sees
        (`_masked_add`)."""

    def op(self, name: str, *inputs: Value, **attrs) -> Value:
        """A typed node; a scalar operand is cast to the type the op's rule asks."""
        try:
            operand_types, result = OPS[name].rule([v.type for v in inputs], attrs)
        except OpTypeError as error:  # no form of the op for a batch of these operands
            raise NotBatchable(f"{name}: {error}") from None
        operands = []
        for v, t in zip(inputs, operand_types):
            if v.type != t:
                if not (isinstance(v.type, ScalarType) and isinstance(t, ScalarType)):
                    raise NotBatchable(f"{name} of {v.type} needs a {t}")
                v = super().op("cast", v, to=t)
            operands.append(v)
        return self.graph.add(name, operands, attrs=attrs, loc=self.loc, types=[result]).outputs[0]

    def rebuilt(self, value: Value, base: Value, new_base: Value) -> Value:
        """`value`, a chain of views of `base` (the function's values), made again from
        `new_base`, the batched copy of `base`."""
        if value is base:
            return new_base
        node = self.definitions.get(value)
        if node is None or "view" not in OPS[node.op].traits or OPS[node.op].batch is None:
            raise NotBatchable("an accumulation into an array viewed another way")
        inputs = [self.rebuilt(node.inputs[0], base, new_base),
                  *(self.values[v][0] for v in node.inputs[1:])]
        flags = [True, *(self.values[v][1] for v in node.inputs[1:])]
        ((out, _),) = OPS[node.op].batch(self, node, inputs, flags)
        return out

    def writable(self, dest: Value) -> Value:
        """The batched form of array `dest` (the function's value), which the function
        writes a batched value into. An unbatched `dest` is a view of an array the
        function made (an array of its own per example in a loop): that array is copied
        once per example, here, with what it holds so far, and it and every view of it
        are batched from now on. Refused where the array may be seen another way than
        through those views (an argument every example shares, a container holding it)."""
        new, flag = self.values[dest]
        if flag:
            return new
        root, origin = self._root(dest), self._origin(dest)
        if origin is None:
            raise NotBatchable("a write through a view of a batch that may be a copy (a "
                               "reshape of a view, np.diag)")
        if root is None:
            self._shared(origin, "a write of batched values into an array every example "
                         "shares")
        aliases = [v for v, (_, f) in self.values.items()
                   if not f and isinstance(v.type, ArrayType) and self._root(v) is root]
        for node in self.emitted:
            if node.op in MAY_ALIAS and any(v in aliases for v in node.inputs):
                raise NotBatchable(f"a write into an array that {node.op} may also hold")
        base = materialized(self, self.values[root][0])
        for v in aliases:
            self.values[v] = (self.rebuilt(v, root, base), True)
        return self.values[dest][0]

    def recording(self, tape: Value) -> Value:
        """The batched form of tape `tape` (the function's value) that a batched value is
        pushed onto: a tape the function has just made, with nothing recorded yet, is made
        again to record batches (one entry per iteration holds every example's value). A
        loop's carried tape is for the loop to settle (`SharedWrite`); any other is refused."""
        new, flag = self.values[tape]
        if flag:
            return new
        if tape in self.params:
            raise SharedWrite(tape, "a tape recording per-example values")
        made = self.definitions.get(tape)
        clone = next((n for n in self.graph.nodes if new in n.outputs), None)
        if made is None or made.op != "tape_new" or clone is None \
                or any(new in n.inputs for n in self.graph.nodes):
            raise NotBatchable("a tape holding values every example shares, then per-example ones")
        element = batch_type(tape.type).element
        fresh = Value(new.name, TapeType(element))
        self.graph.nodes[self.graph.nodes.index(clone)] = Node(
            "tape_new", [], [fresh], {**clone.attrs, "element": element}, loc=clone.loc)
        self.values[tape] = (fresh, True)
        return fresh

    def _check_shared_writes(self, node: Node) -> None:
        """A write of the same values for every example, run once for the batch: refused
        where the array is not one the function made (an argument every example shares
        is written once per example by a loop), else a per-example write's no matter."""
        if node.op in OPS:
            if "writes" in OPS[node.op].traits and self._root(node.inputs[0]) is None:
                self._shared(self._origin(node.inputs[0]),
                             f"{node.op} into an array every example shares")
            return
        if any(n.op in OPS and "writes" in OPS[n.op].traits
               for region in node.regions for n in region.walk()):
            for v in node.inputs:
                if isinstance(v.type, ArrayType) and self._root(v) is None:
                    self._shared(self._origin(v),
                                 f"a {node.op} writing an array every example may share")

    def _shared(self, v: Value, why: str):
        """Refuse a write into `v`, not made here: a region's parameter is for the loop
        that holds the region to settle (`SharedWrite`)."""
        if v in self.params:
            raise SharedWrite(v, why)
        raise NotBatchable(why)

    def _while(self, node: Node, inputs: list) -> list:
        """A `while` over the batch: its regions batched for the flags its operands
        settle at (a carried value batched where the body makes it so; an array the body
        writes a batched value into, batched before the loop). Its condition must be the
        same for every example (a condition per example: NotBatchable)."""
        n = node.attrs["n_invariants"]
        flags, written = [f for _, f in inputs], set()
        if any(isinstance(f, tuple) for f in flags):
            raise NotBatchable("a while carrying a container with a batched part")
        for _ in range(2 * len(flags) + 2):
            try:
                cond, cond_flags = self._region(node.regions[0], flags)
                body, body_flags = self._region(node.regions[1], flags, n)
            except SharedWrite as write:
                k = next((k for r in node.regions for k, p in enumerate(r.params)
                          if p is write.param), None)
                if k is None:  # a parameter of a region deeper in (a call's, an `if`'s in the
                    raise NotBatchable(write.why) from None  # condition): not this loop's to batch
                if flags[k] or k in written:
                    raise NotBatchable(write.why) from None
                flags[k] = True
                written.add(k)
                continue
            if cond_flags[0]:
                return self._masked_while(node, inputs)
            carried = [f or o for f, o in zip(flags[n:], body_flags)]
            if carried != flags[n:]:
                flags[n:] = carried
                continue
            for k in written:
                if isinstance(node.inputs[k].type, TapeType):
                    self.recording(node.inputs[k])
                else:
                    self.writable(node.inputs[k])
            now = [self.values[v][1] for v in node.inputs]
            if all(f or not g for f, g in zip(flags, now)):
                break
            flags = [f or g for f, g in zip(flags, now)]
        else:
            raise NotBatchable("a while whose batched values did not settle")
        operands = [_copied_per_example(self, new) if want and not flag else new
                    for (new, flag), want in ((self.values[v], w) for v, w in zip(node.inputs, flags))]
        types = [p.type for p in body.params[n:]]
        out = self.graph.add("while", operands, len(node.outputs), attrs=dict(node.attrs),
                             regions=[cond, body], loc=node.loc, types=types)
        return list(zip(out.outputs, flags[n:]))

    def _if(self, node: Node, inputs: list) -> list:
        """An `if` over the batch. One condition for every example: the branches batched
        for the captured values' flags (a result batched where either branch's is, the
        batch size captured too for the other branch to repeat its value). A condition
        per example: both branches computed for every example and each result chosen
        per example (`where`), where neither branch can raise or write
        (`_runs_for_nothing`), else NotBatchable."""
        (cond, flag), captured = inputs[0], inputs[1:]
        if any(isinstance(f, tuple) for _, f in captured):
            raise NotBatchable("an if capturing a container with a batched part")
        if flag:
            return self._selected(node, cond, captured)
        flags = [f for _, f in captured] + [False]
        operands = [v for v, _ in captured] + [self.size]
        regions = [_with_param(r, self.size) for r in node.regions]
        (then, then_flags), (other, other_flags) = (self._region(r, flags) for r in regions)
        out_flags = [a or b for a, b in zip(then_flags, other_flags)]
        for graph, got in ((then, then_flags), (other, other_flags)):
            e = BatchBuilder(graph, node.loc)
            e.size = graph.params[-1]
            graph.outputs = [_copied_per_example(e, v) if want and not f else v
                             for v, f, want in zip(graph.outputs, got, out_flags)]
        if any(a.type != b.type for a, b in zip(then.outputs, other.outputs)):
            raise NotBatchable("an if whose branches give values of other types")
        out = self.graph.add("if", [cond, *operands], len(node.outputs), attrs=dict(node.attrs),
                             regions=[then, other], loc=node.loc,
                             types=[v.type for v in then.outputs])
        return list(zip(out.outputs, out_flags))

    def _selected(self, node: Node, cond: Value, captured: list) -> list:
        """Both branches of an `if` for every example, each result chosen by its own
        condition. A branch's element reads check the indices of the examples taking it
        only (`_masked_read`): an example that does not take it raises nothing there."""
        if not all(_runs_for_nothing(n) or n.op in MASKED for r in node.regions for n in r.walk()):
            raise NotBatchable("an if whose condition differs per example, a branch raising "
                               "or writing for an example that does not take it")
        results, outer = [], self.mask
        for region, mask in zip(node.regions, (cond, self.op("invert", cond))):
            self.mask = mask if outer is None else self.op("bitand", outer, mask)
            self.values.update(zip(region.params, captured))
            for inner in region.nodes:
                self.emit(inner)
            results.append([self.values[v] for v in region.outputs])
        self.mask = outer
        chosen = []
        for old, (a, fa), (b, fb) in zip(node.outputs, *results):
            if not isinstance(old.type, (ArrayType, ScalarType)):
                raise NotBatchable(f"an if per example giving a {old.type}")
            a, b = (v if f else broadcast(self, v) for v, f in ((a, fa), (b, fb)))
            extra = tuple(range(1, a.type.ndim))
            mask = self.op("array_expand_dims", cond, axes=extra) if extra else cond
            chosen.append((self.op("where", mask, a, b), True))
        return chosen

    def _masked_read(self, node: Node, inputs: list) -> Value:
        """x[i, j] where only the examples of `self.mask` run the read: the others read at
        index 0 (their value is not chosen), so only the indices of those that do are
        checked, and an IndexError is theirs. Not read at all where no example does (an
        axis of length 0 has no index 0): an `if` over the batch, zeros otherwise."""
        zero = self.const(0, I64)
        (x, x_batched), indices = inputs[0], [self.op("where", self.mask, i, zero)
                                             for i, _ in inputs[1:]]
        anyone = self.op("reduce", self.mask, kind="any", axis=None, keepdims=False)
        operands = [x, *indices]
        regions = []
        for name in ("then", "else"):
            region = Graph(name, [Value(v.name, v.type) for v in operands], loc=node.loc)
            rb = BatchBuilder(region, node.loc)
            rb.size = rb.op("array_dim", region.params[1], axis=0)
            if name == "then":
                flags = [x_batched] + [True] * len(indices)
                ((out, _),) = OPS["array_get"].batch(rb, node, region.params, flags)
            else:
                out = rb.op("array_new", rb.size, fill=0, dtype=regions[0].outputs[0].type.dtype)
            region.outputs = [out]
            regions.append(region)
        if regions[0].outputs[0].type != regions[1].outputs[0].type:
            raise NotBatchable("an element read per example of another type")
        return self.graph.add("if", [anyone, *operands], 1, regions=regions, loc=node.loc,
                              types=[regions[0].outputs[0].type]).outputs[0]

    def _masked_add(self, node: Node, inputs: list) -> Value:
        """acc[i, j] += g (`add_at`, the adjoint of a read in the branch) where only the
        examples of `self.mask` run it: into an accumulator made under the same mask (the
        others' accumulators are ones their results do not choose), at the indices of the
        examples that do (the others' at index 0); not at all where no example does (an
        axis of length 0 has no index 0). An accumulator made before the branch: NotBatchable."""
        if self.made_under.get(self._accumulated(node.inputs[0])) is not self.mask:
            raise NotBatchable("an accumulation under a condition per example into an array "
                               "made before it")
        (acc, acc_batched), (g, g_batched) = inputs[:2]
        acc = acc if acc_batched else materialized(self, acc)
        zero = self.const(0, I64)
        indices = [(self.op("where", self.mask, i, zero), True) if f else (i, False)
                   for i, f in inputs[2:]]
        anyone = self.op("reduce", self.mask, kind="any", axis=None, keepdims=False)
        operands = [acc, g, *(i for i, _ in indices)]
        regions = []
        for name in ("then", "else"):
            region = Graph(name, [Value(v.name, v.type) for v in operands], loc=node.loc)
            if name == "then":
                rb = BatchBuilder(region, node.loc)
                rb.size = rb.op("array_dim", region.params[0], axis=0)
                flags = [True, g_batched, *(f for _, f in indices)]
                ((out, _),) = OPS[node.op].batch(rb, node, region.params, flags)
            else:
                out = region.params[0]
            region.outputs = [out]
            regions.append(region)
        return self.graph.add("if", [anyone, *operands], 1, regions=regions, loc=node.loc,
                              types=[acc.type]).outputs[0]

    def _accumulated(self, v: Value) -> Value:
        """The array accumulator `v` was made as, through the accumulations into it and
        the views of it."""
        node = self.definitions.get(v)
        while node is not None and (node.op in ACCUMULATING or "view" in OPS[node.op].traits):
            v = node.inputs[0]
            node = self.definitions.get(v)
        return v

    def _masked_while(self, node: Node, inputs: list) -> list:
        """A `while` whose condition differs per example: it runs while some example's
        holds, each example's carried values kept once its own condition fails (JAX's
        way). The body then runs for examples that are done: allowed only where that
        can neither raise nor write (`_runs_for_nothing`), but for element reads, which
        check the indices of the examples still running only (`_masked_read`); else
        NotBatchable. (The condition, run again on a done example's kept values, reads
        what it read when it failed.)"""
        if not all(_runs_for_nothing(n) or n.op in MASKED for r in node.regions for n in r.walk()):
            raise NotBatchable("a while whose condition differs per example, its body "
                               "raising or writing for an example that is done")
        n = node.attrs["n_invariants"]
        flags = [f for _, f in inputs[:n]] + [True] * (len(inputs) - n)
        cond, _ = self._region(node.regions[0], flags)
        e = BatchBuilder(cond, node.loc)
        cond.outputs = [e.op("reduce", cond.outputs[0], kind="any", axis=None, keepdims=False)]
        combined = _then(node.regions[0], node.regions[1])  # which examples run, then the body
        body, (_, *out_flags) = self._region(combined, flags,
                                             masked_after=len(node.regions[0].nodes))
        e = BatchBuilder(body, node.loc)
        e.size = e.op("array_dim", body.params[n], axis=0)
        active, *news = body.outputs
        kept = []
        for old, new, flag in zip(body.params[n:], news, out_flags):
            new = new if flag else _copied_per_example(e, new)
            extra = tuple(range(1, old.type.ndim))
            mask = e.op("array_expand_dims", active, axes=extra) if extra else active
            kept.append(e.op("where", mask, new, old))
        body.outputs = kept
        operands = [_copied_per_example(self, new) if want and not flag else new
                    for (new, flag), want in zip(inputs, flags)]
        types = [p.type for p in body.params[n:]]
        out = self.graph.add("while", operands, len(node.outputs), attrs=dict(node.attrs),
                             regions=[cond, body], loc=node.loc, types=types)
        return [(v, True) for v in out.outputs]

    def _region(self, region: Graph, flags: list, n_invariants: int | None = None,
                masked_after: int | None = None):
        """`region` rewritten for operands batched where `flags` say: the new region and
        whether each of its outputs is batched. A body's (`n_invariants` given) output is
        made batched where its carried operand is (the loop's types are the operands').
        `masked_after`: the nodes after the first `masked_after` run for the examples whose
        region output 0 holds (`mask`)."""
        params = [Value(p.name, batch_type(p.type) if f else p.type)
                  for p, f in zip(region.params, flags)]
        graph = Graph(region.name, params, loc=region.loc)
        rb = BatchBuilder(graph, region.loc)
        rb.params = dict(zip(region.params, params))
        rb.values.update((p, (q, f)) for p, q, f in zip(region.params, params, flags))
        first = next((q for q, f in zip(params, flags)
                      if f is True and isinstance(q.type, ArrayType)), None)
        rb.size = rb.op("array_dim", first, axis=0) if first is not None else None
        for k, node in enumerate(region.nodes):
            if k == masked_after:
                rb.mask = _batched_mask(rb.values[region.outputs[0]])
            rb.emit(node)
        results = [rb.values[v] for v in region.outputs]
        graph.outputs = [value for value, _ in results]
        if n_invariants is not None:
            for k, (value, flag) in enumerate(results):
                if flags[n_invariants + k] and not flag:
                    graph.outputs[k] = _copied_per_example(rb, value)
        return graph, [flag for _, flag in results]

    def _root(self, v: Value) -> Value | None:
        """The array made by the function that `v` is a view of, through views that stay
        views of a batch; None if it is no such array."""
        origin = self._origin(v)
        node = self.definitions.get(origin) if origin is not None else None
        if node is None or node.op in NOT_FRESH or node.op not in OPS:
            return None
        return origin

    def _origin(self, v: Value) -> Value | None:
        """What `v` is a view of, through views that stay views of a batch (None past
        one that may not)."""
        node = self.definitions.get(v)
        while _is_view(node):
            if node.op in COPYING_VIEWS and _is_view(self.definitions.get(node.inputs[0])) \
                    or node.op == "diag":
                return None
            v = node.inputs[0]
            node = self.definitions.get(v)
        return v

    def emit(self, node: Node) -> None:
        """`node` for the whole batch: a copy if no input is batched, else its rule's nodes."""
        inputs = [self.values[v] for v in node.inputs]
        for v in node.outputs:
            self.definitions[v] = node
            self.made_under[v] = self.mask
        self.emitted.append(node)
        if node.op in MASKED and self.mask is not None:
            masked = self._masked_read if node.op == "array_get" else self._masked_add
            self.values[node.outputs[0]] = (masked(node, inputs), True)
            return
        if not any(_some(flag) for _, flag in inputs):
            self._check_shared_writes(node)
            mapping = {old: new for old, (new, _) in zip(node.inputs, inputs)}
            self.graph.nodes.append(clone_node(node, mapping))
            self.values.update((v, (mapping[v], False)) for v in node.outputs)
            return
        if node.op in ("while", "if"):
            results = (self._while if node.op == "while" else self._if)(node, inputs)
            self.values.update(zip(node.outputs, results))
            return
        rule = OPS[node.op].batch if node.op in OPS else None
        if rule is None:
            raise NotBatchable(f"{node.op} has no batching rule")
        results = rule(self, node, [v for v, _ in inputs], [f for _, f in inputs])
        for old, (new, flag) in zip(node.outputs, results):
            if not _batched_type(old.type, new.type, flag):
                raise NotBatchable(f"{node.op} of a batch gives a {new.type}, not a batch of "
                                   f"{old.type}")
            self.values[old] = (new, flag)


class SharedWrite(NotBatchable):
    """A write into a region's parameter that is not batched: the loop holding the region
    batches the operand before it (if it is an array the function made) and tries again."""

    def __init__(self, param: Value, why: str):
        super().__init__(why)
        self.param, self.why = param, why


def batch_type(t: Type) -> Type:
    """The type of a batch of values of type `t`."""
    if isinstance(t, ArrayType):
        return ArrayType(t.dtype, t.ndim + 1)
    if isinstance(t, ScalarType):
        return ArrayType(weak(t), 1)
    if isinstance(t, TapeType):  # a tape of batches: an entry holds every example's value
        element = t.element
        if isinstance(element, TupleType):
            return TapeType(TupleType(tuple(map(_recorded_batch, element.elements))))
        return TapeType(_recorded_batch(element))
    raise NotBatchable(f"a batch of {t} values")


def _batched_mask(value: tuple[Value, object]) -> Value:
    """A batch of bools (a rewritten value and its flag) to mask reads with."""
    mask, flag = value
    if flag is not True:
        raise NotBatchable("a condition the same for every example, as a mask")
    return mask


def _recorded_batch(t: Type) -> Type:
    """What a tape of batches records for a value of type `t`: a batch of floats (or of
    arrays); an int or a bool the same for every example, as a loop's counter is (the
    tape's push refuses a per-example one: ops/tapes.py), so that what reads it back
    indexes and counts as the function did."""
    if isinstance(t, ScalarType) and not (t.is_float or t.is_complex):
        return t
    return batch_type(t)


def _runs_for_nothing(node: Node) -> bool:
    """Whether `node` may run for an example whose loop is done: no error it could raise
    (an elementwise op computing as NumPy does, on arrays or NumPy scalars, raises none)
    and no effect."""
    opdef = OPS.get(node.op)
    if opdef is None or "writes" in opdef.traits or node.op in REPEATED_EFFECTS \
            or node.op in TAPE_EFFECTS:
        return False
    if "raises" not in opdef.traits or node.op in SHAPED_LIKE:
        return True
    numpy = node.attrs.get("numpy") or any(isinstance(v.type, ArrayType) for v in node.inputs)
    return "elementwise" in opdef.traits and bool(numpy)


def _with_param(region: Graph, v: Value) -> Graph:
    """`region` with one more parameter, of `v`'s type, last (unused by its nodes)."""
    return Graph(region.name, [*region.params, Value(v.name, v.type)], region.nodes,
                 region.outputs, region.loc)


def _then(first: Graph, then: Graph) -> Graph:
    """A region computing `first`'s outputs and then `then`'s (same parameters), named as
    `then`: a loop's condition on the values an iteration starts from, then its body."""
    params = [Value(p.name, p.type) for p in first.params]
    nodes, outputs = [], []
    for region in (first, then):
        mapping = dict(zip(region.params, params))
        nodes += [clone_node(node, mapping) for node in region.nodes]
        outputs += [mapping[v] for v in region.outputs]
    return Graph(then.name, params, nodes, outputs, then.loc)


def _copied_per_example(b: BatchBuilder, v: Value) -> Value:
    """Unbatched `v` as a batch: a loop's operand or result, which the loop may write into
    (an array copied per example, not a broadcast view)."""
    if isinstance(v.type, TapeType):
        raise NotBatchable("a tape that records per-example values on some paths only")
    return materialized(b, v) if isinstance(v.type, ArrayType) else broadcast(b, v)


def _some(flag) -> bool:
    """Whether a value of flag `flag` has a batched part."""
    return any(map(_some, flag)) if isinstance(flag, tuple) else bool(flag)


def _batched_type(example: Type, t: Type, flag) -> bool:
    """Whether `t` is the type of a batch of `example`s (where `flag`) or `example`."""
    if isinstance(flag, tuple):
        return isinstance(t, TupleType) and len(flag) == len(t.elements) == len(example.elements) \
            and all(map(_batched_type, example.elements, t.elements, flag))
    if not flag:
        return t == example
    if isinstance(example, TapeType):
        return t == batch_type(example)  # a tape of batches: the parts it batches
    dtype = example.dtype if isinstance(example, ArrayType) else example
    ndim = example.ndim if isinstance(example, ArrayType) else 0
    return isinstance(t, ArrayType) and t.ndim == ndim + 1 and t.dtype == dtype


def _check_repeatable(graph: Graph) -> None:
    """Refuse a function whose effects depend on how often it runs: computing a value
    once for every example, not once per example, must not change them."""
    for node in graph.walk():
        opdef = OPS.get(node.op)
        if opdef and ("writes" in opdef.traits and opdef.batch is None
                      or node.op in REPEATED_EFFECTS):
            raise NotBatchable(f"{node.op}: an effect per example")


def _is_view(node: Node | None) -> bool:
    """Whether `node` is a leaf op whose result may be a view of its first input (a
    structural node's results, an `if`'s array included, are not followed)."""
    return node is not None and node.op in OPS and "view" in OPS[node.op].traits
