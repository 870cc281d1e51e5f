"""Unrolling a loop over the elements of tuples, where type inference learns their length.

The frontend lowers `for x in seq` (and `enumerate`, `zip`, `reversed`) to a `while`
node marked `iterate` (frontend/loops.py): its leading invariants are the sequences, its
first carried value a counter, and each element an `array_get(seq, counter)` at the top
of the body. Over arrays that is a loop. Over a tuple, whose elements may each have a
type of their own, inference copies the body once per element instead: the counter is
the constant k, and each `array_get(seq, counter)` the tuple's element `seq[k]` (over a
dict, its k-th key: a constant whose type holds the string, ops/sequences.py). A
variable may change type from one element to the next, as in Python. Where the body can
leave the loop (`break`, `return`), each copy runs under an `if` on the loop's test.
A comprehension's loop (marked `collects`) must be unrolled: over an array, whose
length is not known at compile time, it is a TypingError.
"""
from __future__ import annotations

from ..errors import TypingError
from .core import Graph, Node, Value
from .ops.sequences import element
from .types import BOOL, I64, ArrayType, TupleType, Type


def unroll(inference, node: Node, inputs: list[Value], out: Graph) -> list[Value] | None:
    """The outputs of the `iterate` while `node` unrolled over its tuples; None when no
    sequence is a tuple (a loop over arrays)."""
    spec = node.attrs["iterate"]
    k = node.attrs["n_invariants"]
    lengths = [len(v.type.elements) for v in inputs[:spec["sequences"]]
               if isinstance(v.type, TupleType)]
    if not lengths and spec.get("collects"):
        raise TypingError(f"a comprehension over {_describe(inputs[0].type)}: its length is not "
                          "known at compile time", node.loc,
                          hint="comprehensions take tuples, lists, dicts and range() of constant "
                               "bounds; for an array write a loop that fills an array "
                               "(out = np.empty(n); for i in range(n): out[i] = ...)")
    if not lengths:
        return None
    count = min(lengths)
    invariants, carried = inputs[:k], inputs[k:]
    cond, body = node.regions
    for step in range(count):
        index = count - 1 - step if spec["reverse"] else step
        counter = out.add("const", [], attrs={"value": index, "type": I64}, loc=node.loc,
                          types=[I64]).outputs[0]
        carried = [counter, *carried[1:]]
        if spec["guarded"]:
            (go_on,) = _inline(inference, cond, invariants + carried, out, k, index)
            carried = _guarded(inference, node, body, invariants, carried, go_on, out, index)
        else:
            carried = _inline(inference, body, invariants + carried, out, k, index)
    return carried


def _describe(t: Type) -> str:
    return f"a {t.ndim}-d array" if isinstance(t, ArrayType) else f"a value of type {t}"


def _inline(inference, region: Graph, values: list[Value], out: Graph, k: int,
            index: int) -> list[Value]:
    """`region`'s nodes typed into `out` on `values`, each element read of the counter
    (`array_get(seq, counter)` at the top level) the element `index` (a dict's: its key)."""
    env = dict(zip(region.params, values))
    counter = region.params[k]
    for sub in region.nodes:
        if sub.op == "array_get" and len(sub.inputs) == 2 and sub.inputs[1] is counter \
                and isinstance(env[sub.inputs[0]].type, TupleType):
            env[sub.outputs[0]] = element(inference, env[sub.inputs[0]], index, sub, out)
        else:
            inference.infer_node(sub, env, out)
    return [env[v] for v in region.outputs]


def _guarded(inference, node: Node, body: Graph, invariants: list[Value],
             carried: list[Value], go_on: Value, out: Graph, index: int) -> list[Value]:
    """One copy of the body under `if go_on`, the carried values unchanged otherwise."""
    captured = invariants + carried
    then_g = Graph("then", [Value(v.name, v.type) for v in captured], loc=node.loc)
    results = _inline(inference, body, then_g.params, then_g, len(invariants), index)
    else_g = Graph("else", [Value(v.name, v.type) for v in captured], loc=node.loc)
    kept = else_g.params[len(invariants):]
    names = [v.name for v in node.outputs]
    merged = [inference.join_at(a.type, b.type, n, node.loc)
              for a, b, n in zip(results, kept, names)]
    then_g.outputs = [inference.coerce(then_g, v, t, node.loc) for v, t in zip(results, merged)]
    else_g.outputs = [inference.coerce(else_g, v, t, node.loc) for v, t in zip(kept, merged)]
    test = inference.coerce(out, go_on, BOOL, node.loc)
    branch = out.add("if", [test, *captured], len(merged), regions=[then_g, else_g],
                     loc=node.loc, names=names, types=merged)
    return branch.outputs
