"""Type inference: untyped Module + argument types -> a typed Module of specializations.

Each (graph, argument types) pair becomes one typed Graph named `name[t1,t2]`.
The typed IR is explicit: every leaf op's operands have exactly the types its
rule in `ops/` asks for, because inference inserts `cast` nodes (Python's
int -> float promotion), and values merging at an `if` or carried by a `while`
are converted to their joined type inside the regions.

Arrays flow like any value: returned, carried by loops, merged by `if` when
both paths give the same array type (dtype and ndim).

What is particular to an op is declared with it (ir/ops/): its type rule, and
the hooks through which inference settles what the types decide (`x is None`
is a constant, `x op= v` of an array an update in place, a shape the frontend
could not see into one int per axis, an implicit dtype explicit): `OpDef.decide`,
`expand` and `operands`, which `infer_leaf` calls with itself as their `Inference`.

Loops are inferred to a fixed point (a variable that starts as an int and
becomes a float in the body is a float throughout, as in Numba). Recursion is
inferred to a fixed point too: a call to a specialization still being inferred
gives the current estimate of its result (BOTTOM at first, which joins with
anything), and the whole module is re-inferred until no estimate changes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Loc, TypingError
from .core import Graph, Module, Node, Value
from .ops import OPS, OpTypeError
from .ops.strong import NUMPY_ONLY, numpy_semantics
from .types import (
    BOOL,
    BOTTOM,
    I64,
    INT_OR_BOOL,
    NONE,
    NUMPY_NAMES,
    ArrayType,
    TupleType,
    Type,
    TypeKey,
    exact,
    int_range,
    is_numeric,
    join,
)
from .unroll import unroll

MAX_ROUNDS = 20


def infer_types(module: Module, arg_types: list[Type]) -> Module:
    """Specialize `module.entry` for `arg_types`; return the typed Module.

    A specialization whose every return waits on its own recursion (`return
    f(n + 1) + 1`) never returns: once the fixed point leaves it so, its result
    is estimated an int and typing goes on from there (any type the body agrees
    with is sound, since no value ever comes back); at run time the recursion
    raises RecursionError, as in CPython.
    """
    estimates: dict[tuple, Type] = {}
    seeded = False
    for _ in range(MAX_ROUNDS):
        inferencer = _Inferencer(module, estimates)
        entry = inferencer.specialize(module.entry, list(arg_types), module.entry_graph.loc)
        if not inferencer.changed:
            never = {k: t for k, t in estimates.items() if contains_bottom(t)}
            if never and not seeded:
                estimates.update({k: _without_bottom(t) for k, t in never.items()})
                seeded = True
                continue
            typed = inferencer.out
            typed.entry = entry
            _check_resolved(typed)
            return typed
    raise TypingError(f"type inference of '{module.entry}' did not converge",
                      module.entry_graph.loc)


def specialization_name(name: str, arg_types: list[Type]) -> str:
    return f"{name}[{','.join(map(str, arg_types))}]"


def _without_bottom(t: Type) -> Type:
    """`t` with an int wherever it has BOTTOM (the estimate of a result never returned)."""
    if isinstance(t, TupleType):
        return TupleType(tuple(_without_bottom(e) for e in t.elements))
    return I64 if t == BOTTOM else t


def contains_bottom(t: Type) -> bool:
    if isinstance(t, TupleType):
        return any(contains_bottom(e) for e in t.elements)
    return t == BOTTOM


@dataclass
class _Inferencer:
    """One round of inference over the call graph reachable from the entry."""

    src: Module
    estimates: dict[tuple, Type]
    out: Module = field(default_factory=Module)
    in_progress: set = field(default_factory=set)
    done: dict = field(default_factory=dict)
    consulted: dict = field(default_factory=dict)
    """Estimates read for specializations still in progress (recursion), by key."""
    static_truth: dict = field(default_factory=dict)
    """Bool values that types decide (`b is None`), and their value: an `if` on one
    types only the branch taken (the other may not type: `b.reshape` of None)."""

    @property
    def changed(self) -> bool:
        """Whether a recursive call was typed with an estimate that proved wrong."""
        return any(exact(self.estimates[key]) != exact(t) for key, t in self.consulted.items())

    def lower_callee(self, fn: object, loc: Loc | None) -> str:
        if self.src.lower_callee is None:
            raise TypingError(f"cannot compile {getattr(fn, '__qualname__', fn)}() here: this "
                              "module was not made by the frontend", loc)
        return self.src.lower_callee(fn)

    def specialize(self, name: str, arg_types: list[Type], loc: Loc | None) -> str:
        key = (name, TypeKey(arg_types))
        typed_name = specialization_name(name, arg_types)
        if key in self.done or key in self.in_progress:
            return typed_name
        if name not in self.src.graphs:
            raise TypingError(f"call to unknown function '{name}'", loc)
        self.in_progress.add(key)
        graph = self.src.graphs[name]
        if len(graph.params) != len(arg_types):
            raise TypingError(f"'{name}' takes {len(graph.params)} arguments, got {len(arg_types)}",
                              loc)
        typed = self.infer_graph(graph, arg_types, typed_name)
        self.out.graphs[typed_name] = typed
        self.estimates[key] = typed.outputs[0].type
        self.in_progress.discard(key)
        self.done[key] = typed_name
        return typed_name

    def result_type(self, name: str, arg_types: list[Type]) -> Type:
        key = (name, TypeKey(arg_types))
        estimate = self.estimates.get(key, BOTTOM)
        if key in self.in_progress:
            self.consulted.setdefault(key, estimate)
        return estimate

    # ---- graphs and regions ----------------------------------------------------

    def infer_graph(self, graph: Graph, param_types: list[Type], name: str) -> Graph:
        """A typed copy of `graph` with its parameters of `param_types`."""
        out = Graph(name, [Value(p.name, t) for p, t in zip(graph.params, param_types)],
                    loc=graph.loc)
        env = {p: q for p, q in zip(graph.params, out.params)}
        for node in graph.nodes:
            self.infer_node(node, env, out)
        out.outputs = [env[v] for v in graph.outputs]
        return out

    def infer_node(self, node: Node, env: dict, out: Graph) -> None:
        inputs = [env[v] for v in node.inputs]
        if node.op == "if":
            results = self.infer_if(node, inputs, out)
        elif node.op == "while":
            results = "iterate" in node.attrs and unroll(self, node, inputs, out) \
                or self.infer_while(node, inputs, out)
        elif node.op == "call":
            results = self.infer_call(node, inputs, out)
        else:
            results = self.infer_leaf(node, inputs, out)
        for old, new in zip(node.outputs, results):
            env[old] = new

    def infer_leaf(self, node: Node, inputs: list[Value], out: Graph) -> list[Value]:
        """A leaf node typed: its op's inference hooks (`OpDef.decide`, `expand`,
        `operands`: ir/ops/table.py) where it has them, then its type rule."""
        opdef = OPS[node.op]
        attrs = dict(node.attrs)
        if node.op not in KEEPS_INT_OR_BOOL:  # every other op reads an int|bool as its int
            inputs = [coerce(out, v, I64, node.loc) if v.type == INT_OR_BOOL else v
                      for v in inputs]
        decided = opdef.decide(self, node, inputs, out) if opdef.decide else None
        if decided is not None:
            return decided
        if node.op != "tuple" and any(contains_bottom(v.type) for v in inputs):
            # Depends on a recursive result not known yet: a placeholder this round.
            return [self.undef(out, BOTTOM, node.loc) for _ in node.outputs]
        expanded = opdef.expand(self, node, inputs, out) if opdef.expand else None
        if expanded is not None:
            return expanded
        if opdef.operands:
            inputs = opdef.operands(self, node, attrs, inputs, out)
        in_types = [v.type for v in inputs]
        try:
            operand_types, result_type = opdef.rule(in_types, attrs)
        except OpTypeError as error:
            raise TypingError(str(error), node.loc, hint=_hint(node.op, in_types)) from None
        attrs.pop("scalar_function", None)  # math.sqrt's: checked by the rule, then meaningless
        attrs.pop("numpy", None)
        if numpy_semantics(node.op, in_types, node.attrs):
            attrs["numpy"] = True  # computes as NumPy does on NumPy scalars (ops/strong.py)
        operands = [coerce(out, v, t, node.loc) for v, t in zip(inputs, operand_types)]
        new = out.add(node.op, operands, len(node.outputs), attrs=attrs, loc=node.loc,
                      names=[v.name for v in node.outputs], types=[result_type])
        if _is_ufunc_0d(node.op, result_type):
            # NumPy: a ufunc whose result is 0-d returns a NumPy scalar (its one element).
            return self.infer_leaf(Node("array_get", [], node.outputs, loc=node.loc),
                                   new.outputs, out)
        return new.outputs

    @staticmethod
    def coerce(graph: Graph, value: Value, target: Type, loc: Loc | None) -> Value:
        """`coerce`, for the ops' inference hooks (ops/table.py `Inference`)."""
        return coerce(graph, value, target, loc)

    def infer_call(self, node: Node, inputs: list[Value], out: Graph) -> list[Value]:
        if "derive" in node.attrs:
            return self.infer_derived_call(node, inputs, out)
        arg_types = [v.type for v in inputs]
        callee = node.attrs["callee"]
        if any(contains_bottom(t) for t in arg_types):
            return [self.undef(out, BOTTOM, node.loc)]
        typed_callee = self.specialize(callee, arg_types, node.loc)
        result = self.result_type(callee, arg_types)
        attrs = {"callee": typed_callee}
        if "custom_vjp" in node.attrs and not contains_bottom(result):
            attrs["custom_vjp"] = self.custom_rule(node, arg_types, result)
        new = out.add("call", inputs, attrs=attrs, loc=node.loc,
                      names=[node.outputs[0].name], types=[result])
        return new.outputs

    def custom_rule(self, node: Node, arg_types: list[Type], result: Type) -> str:
        """The typed graph of a custom_vjp rule, `rule(args..., out, g)`, wrapped so it
        returns a tuple of one adjoint per argument, each of its argument's type."""
        rule = self.specialize(node.attrs["custom_vjp"], [*arg_types, result, result], node.loc)
        rule_result = self.result_type(node.attrs["custom_vjp"], [*arg_types, result, result])
        name = f"{rule}.adjoints"
        params = [Value(f"a{i}", t) for i, t in enumerate([*arg_types, result, result])]
        wrapper = Graph(name, params, loc=node.loc)
        call = wrapper.add("call", params, attrs={"callee": rule}, loc=node.loc, types=[rule_result])
        parts = [call.outputs[0]] if not isinstance(rule_result, TupleType) else [
            wrapper.add("getitem", call.outputs, attrs={"index": i}, loc=node.loc, types=[t]).outputs[0]
            for i, t in enumerate(rule_result.elements)]
        if len(parts) != len(arg_types):
            raise TypingError(f"the custom_vjp rule returns {len(parts)} adjoints for "
                              f"{len(arg_types)} arguments", node.loc,
                              hint="return a tuple with one adjoint per argument")
        adjoints = [coerce(wrapper, v, t, node.loc) for v, t in zip(parts, arg_types)]
        wrapper.outputs = [wrapper.add("tuple", adjoints, loc=node.loc,
                                       types=[TupleType(tuple(arg_types))]).outputs[0]]
        self.out.graphs[name] = wrapper
        return name

    def infer_derived_call(self, node: Node, inputs: list[Value], out: Graph) -> list[Value]:
        """A call of grad(f), jvp(f) ...: specialize f, differentiate it (ir.ad), call that."""
        from .ad.derive import derive

        spec = node.attrs["derive"]
        primals = inputs[:spec[1]] if spec[0] in ("jvp", "vjp") else inputs
        if any(contains_bottom(v.type) for v in inputs):
            return [self.undef(out, BOTTOM, node.loc)]
        types = [v.type for v in primals]
        if spec[0] == "vmap":  # f is applied to examples; the derived graph takes batches
            from .ad.batching import example_types

            spec = (*spec, tuple(types))
            types = example_types(types, spec[1], node.loc)
        callee = self.specialize(node.attrs["callee"], types, node.loc)
        if callee not in self.out.graphs:
            raise TypingError("a function cannot be differentiated inside its own recursion",
                              node.loc)
        like = [Value("", self.out.graphs[callee].outputs[0].type)] if spec[0] == "vjp" else primals
        tangents = [coerce(out, t, p.type, node.loc) for t, p in zip(inputs[len(primals):], like)]
        derived = derive(self.out, callee, spec)
        result = self.out.graphs[derived].outputs[0].type
        new = out.add("call", [*primals, *tangents], attrs={"callee": derived, "primal": callee,
                                                             "derived": spec},
                      loc=node.loc,
                      names=[node.outputs[0].name], types=[result])
        return new.outputs

    def infer_if(self, node: Node, inputs: list[Value], out: Graph) -> list[Value]:
        cond = coerce(out, inputs[0], BOOL, node.loc) if inputs[0].type != BOTTOM else inputs[0]
        captured = inputs[1:]
        types = [v.type for v in captured]
        if inputs[0] in self.static_truth:  # decided by types: type the branch taken only
            taken = 0 if self.static_truth[inputs[0]] else 1
            typed = self.infer_graph(node.regions[taken], types, ("then", "else")[taken])
            skipped = Graph(typed.name, [Value(v.name, t) for v, t in zip(typed.params, types)])
            skipped.outputs = [skipped.add("undef", [], attrs={"type": v.type}, loc=node.loc,
                                           types=[v.type]).outputs[0] for v in typed.outputs]
            then_g, else_g = (typed, skipped) if taken == 0 else (skipped, typed)
        else:
            then_g = self.infer_graph(node.regions[0], types, "then")
            else_g = self.infer_graph(node.regions[1], types, "else")
        merged = [self.join_at(a.type, b.type, name.name, node.loc)
                  for a, b, name in zip(then_g.outputs, else_g.outputs, node.outputs)]
        for region in (then_g, else_g):
            region.outputs = [coerce(region, v, t, node.loc) for v, t in zip(region.outputs, merged)]
        new = out.add("if", [cond, *captured], len(merged), regions=[then_g, else_g],
                      attrs=dict(node.attrs), loc=node.loc,
                      names=[v.name for v in node.outputs], types=merged)
        return new.outputs

    def infer_while(self, node: Node, inputs: list[Value], out: Graph) -> list[Value]:
        k = node.attrs["n_invariants"]
        invariant_types = [v.type for v in inputs[:k]]
        carried = [v.type for v in inputs[k:]]
        names = [v.name for v in node.outputs]
        for _ in range(MAX_ROUNDS):
            body = self.infer_graph(node.regions[1], invariant_types + carried, "body")
            widened = [self.join_at(a, b.type, n, node.loc)
                       for a, b, n in zip(carried, body.outputs, names)]
            if TypeKey(widened) == TypeKey(carried):
                break
            carried = widened
        else:
            raise TypingError("the types of the loop's variables do not settle", node.loc)
        cond = self.infer_graph(node.regions[0], invariant_types + carried, "cond")
        cond.outputs = [coerce(cond, cond.outputs[0], BOOL, node.loc)]
        body.outputs = [coerce(body, v, t, node.loc) for v, t in zip(body.outputs, carried)]
        initial = [coerce(out, v, t, node.loc) for v, t in zip(inputs[k:], carried)]
        new = out.add("while", [*inputs[:k], *initial], len(carried), regions=[cond, body],
                      attrs=dict(node.attrs), loc=node.loc, names=names, types=carried)
        return new.outputs

    def join_at(self, a: Type, b: Type, name: str, loc: Loc | None) -> Type:
        merged = join(a, b)
        if merged is None:
            what = f"variable '{name}'" if name else "this value"
            hint = "use a different variable name for each kind of value"
            if isinstance(a, ArrayType) and isinstance(b, ArrayType):
                hint = ("an array variable keeps its dtype and number of dimensions: give both "
                        "arrays the same, e.g. with dtype= (np.zeros(n, dtype=np.int64))")
            raise TypingError(f"{what} is {a} on one path and {b} on another; "
                              "a variable must keep one type (numbers may mix)", loc, hint=hint)
        return merged

    @staticmethod
    def undef(out: Graph, t: Type, loc: Loc | None) -> Value:
        return out.add("undef", [], attrs={"type": t}, loc=loc, types=[t]).outputs[0]


def _is_ufunc_0d(op: str, t: Type) -> bool:
    """Whether a node of `op` giving `t` is a NumPy ufunc with a 0-d result (np.where is
    not a ufunc: it keeps its 0-d array)."""
    from .ops.elementwise import UFUNCS

    return (isinstance(t, ArrayType) and t.ndim == 0 and op in UFUNCS and op not in NUMPY_ONLY
            and "elementwise" in OPS[op].traits)


KEEPS_INT_OR_BOOL = frozenset({"tag", "tuple", "select", "min", "max", "bitand", "bitor", "bitxor"})
"""The ops that take an int|bool as it is: the rest read its int (`untag`)."""


def coerce(graph: Graph, value: Value, target: Type, loc: Loc | None) -> Value:
    """`value` converted to `target` by nodes appended to `graph` (Python's promotion)."""
    have = value.type
    if have == target:
        return value
    if target == INT_OR_BOOL and have in (BOOL, I64):
        return graph.add("tag", [value], loc=loc, names=[value.name], types=[target]).outputs[0]
    if have == INT_OR_BOOL and target != INT_OR_BOOL:
        value = graph.add("untag", [value], loc=loc, names=[value.name], types=[I64]).outputs[0]
        return coerce(graph, value, target, loc)
    if have == BOTTOM:
        return graph.add("undef", [], attrs={"type": target}, loc=loc, types=[target]).outputs[0]
    if is_numeric(have) and is_numeric(target):
        if have == I64 and not have.strong and target.kind in "iu" and target.bits < 64 \
                or have == I64 and not have.strong and target.kind == "u":
            _check_python_int(graph, value, target, loc)
        return graph.add("cast", [value], attrs={"to": target}, loc=loc,
                         names=[value.name], types=[target]).outputs[0]
    if isinstance(have, TupleType) and isinstance(target, TupleType) \
            and len(have.elements) == len(target.elements):
        parts = []
        for i, t in enumerate(target.elements):
            item = graph.add("getitem", [value], attrs={"index": i}, loc=loc,
                             types=[have.elements[i]]).outputs[0]
            parts.append(coerce(graph, item, t, loc))
        return graph.add("tuple", parts, loc=loc, names=[value.name], types=[target]).outputs[0]
    if have == NONE and target == NONE:
        return value
    raise TypingError(f"cannot convert {have} to {target}", loc)


def _check_python_int(graph: Graph, value: Value, target: Type, loc: Loc | None) -> None:
    """NEP 50: a Python int that meets a narrower int type must fit it (NumPy's
    OverflowError "Python integer 300 out of bounds for uint8"): a constant is checked
    now (a CompileError with NumPy's message), any other value when it runs."""
    lo, hi = int_range(target)
    name = NUMPY_NAMES[target.name]
    constant = next((node.attrs["value"] for node in reversed(graph.nodes)
                     if node.op == "const" and node.outputs[0] is value), None)
    if isinstance(constant, int):
        if not lo <= constant <= hi:
            raise TypingError(f"Python integer {constant} out of bounds for {name}", loc,
                              hint=f"NumPy raises OverflowError here; write a value from {lo} "
                                   f"to {hi}, or convert it first: np.{name}(...)")
        return

    def test(op: str, bound: int) -> Value:
        limit = graph.add("const", [], attrs={"value": bound, "type": I64}, loc=loc,
                          types=[I64]).outputs[0]
        return graph.add(op, [value, limit], loc=loc, types=[BOOL]).outputs[0]

    outside = test("lt", lo) if hi >= 2 ** 63 else \
        graph.add("bitor", [test("lt", lo), test("gt", hi)], loc=loc, types=[BOOL]).outputs[0]
    graph.add("raise_if", [outside], attrs={"exc": "OverflowError",
                                            "message": f"Python integer out of bounds for {name}"},
              loc=loc, types=[NONE])


def _hint(op: str, types: list[Type]) -> str:
    """What to write instead, for the type errors that have a usual cause."""
    if op not in ("array_get", "array_set") or not types:
        if any(isinstance(t, ArrayType) for t in types) and not op.startswith("array_"):
            return ("elementwise arithmetic, comparisons and NumPy's math functions work on "
                    "whole arrays; other operations on whole arrays are not supported yet; "
                    "loop over the elements: "
                    "for i in range(len(x)): ... x[i] ...")
        return ""
    base, indices = types[0], types[1:] if op == "array_get" else types[2:]
    if isinstance(base, TupleType):
        return ("a tuple is indexed with a literal integer, e.g. t[0], and cannot be changed "
                "in place; to visit every element write: for x in t:")
    if not isinstance(base, ArrayType):
        return ""
    if len(indices) < base.ndim:
        return (f"index every axis, e.g. a[{', '.join('ijklmnopqr'[:base.ndim])}]; "
                "or take a row or a slice: a[i], a[1:, j]")
    if op == "array_set" and not is_numeric(types[1]):
        return "an array element holds one number"
    if len(indices) == base.ndim:
        return "index with integers: int(i) converts a float or a bool"
    return ""


def _check_resolved(module: Module) -> None:
    """After the fixed point no result may still wait on a recursive call.

    Values of BOTTOM type may remain where no path produces a value (a loop's
    return slot that is never assigned): they are placeholders, never read.
    Unused `undef` placeholders are dropped.
    """
    for graph in module.graphs.values():
        if contains_bottom(graph.outputs[0].type):
            raise TypingError(f"'{graph.name}' never returns a value (infinite recursion?)",
                              graph.loc)
        _drop_placeholders(graph)


def _drop_placeholders(graph: Graph) -> None:
    used = {v for n in graph.nodes for v in n.inputs} | set(graph.outputs)
    kept = []
    for node in graph.nodes:
        for region in node.regions:
            _drop_placeholders(region)
        if node.op == "undef" and node.outputs[0] not in used:
            continue
        if node.op == "call" and contains_bottom(node.outputs[0].type):
            raise TypingError("this call depends on a recursion that never returns a value",
                              node.loc)
        kept.append(node)
    graph.nodes = kept
