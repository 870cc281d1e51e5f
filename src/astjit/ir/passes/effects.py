"""What running a node may do besides computing its outputs.

A node *has effects* when it may raise, may not terminate, acts (`raise_if`,
and the tape ops that allocate, write and free: `tape_new`, `tape_push`,
`tape_free`), or reads memory that is valid only where the program reads it
(`tape_get`: its index is in range only there, and compiled code does not
check it, so it must not be speculated; deleting an unused one would be safe,
but the passes have one notion for deleting, merging and speculating). Passes
may delete, merge or speculate only nodes without effects; everything else
must run exactly when and as often as the program says.

Array element reads and writes (`array_get`, `array_set`) have no 'pure'
trait: an array is memory the caller and other nodes also see, a read's bounds
check raises IndexError, and a write changes what later reads give. So they
are never merged, reordered, dropped or speculated (an `if` reading `x[i]`
does not become a `select`), and every node that touches them keeps its
place in the node list, which is their order. Shape queries (`array_dim`,
`array_shape`, `array_size`, `array_ndim`) are pure: shapes never change.

Elementwise ops on whole arrays (an array-typed add, exp, where) have effects:
each makes a new array the program may write into (two of them must not be
merged into one) and raises ValueError when the shapes do not broadcast. A
`fused` node, made from them, and a `rowwise` node, made of those, have effects
as every structural op but `if` has. Where its operands provably broadcast and its
element type raises nothing, it only computes (`only_computes`): an unused one may
still be deleted, and one may be moved past nodes that write into no array.

Where the primitive
table's traits are coarser than the operand types, the types refine them:
`float(n)` of an int cannot raise, `int(x)` of a float can.
"""
from __future__ import annotations

from collections.abc import Callable

from ..core import Node
from ..kernels import kernel_of
from ..ops import OPS
from ..ops.elementwise import array_plan, is_array_elementwise
from ..ops.reductions import REDUCTIONS
from ..shape_algebra import broadcasts
from ..symbolic_shapes import Shapes
from ..types import BOOL, ArrayType, ScalarType, Type

TO_INT_CONVERSIONS = frozenset({"cast", "floor", "ceil", "trunc", "round"})
"""Ops that raise only when they turn a float (NaN, infinite, too large) into an int."""

GUARDED_READS = frozenset({"tape_get"})
"""Pure ops whose operands are valid only where the program runs them."""


def has_effects(node: Node) -> bool:
    """Whether running `node` may raise, loop forever or act, so it must stay as it is."""
    if node.op == "if":
        return any(has_effects(inner) for region in node.regions for inner in region.nodes)
    if node.op in ("while", "call", "fused", "rowwise") or node.op not in OPS:
        return True  # a loop may not end; a callee may raise or recurse forever; new arrays
    if is_array_elementwise(node):
        return True  # a new array; shapes that do not broadcast raise ValueError
    traits = OPS[node.op].traits
    if "pure" not in traits or node.op in GUARDED_READS:
        return True
    if node.op in TO_INT_CONVERSIONS:
        return _float_to_int(node)
    return "raises" in traits


def _float_to_int(node: Node) -> bool:
    """Whether a conversion may see a float and must produce an int (unknown types: yes)."""
    source, target = node.inputs[0].type, node.outputs[0].type
    return getattr(source, "is_float", True) and getattr(target, "is_int", True)


def may_write(node: Node) -> bool:
    """Whether `node` may write into an array: a write, a structural op, an op outside the
    table, a callback (Python code), or any other op that neither reads, views nor
    allocates (`tape_push` ...)."""
    if node.op not in OPS or node.op == "callback":
        return True
    traits = OPS[node.op].traits
    return "writes" in traits or not traits & {"pure", "reads", "view", "allocates"}


def only_computes(node: Node, shapes: Callable[[], Shapes]) -> bool:
    """Whether all `node` does is make a new array of floats (an elementwise op on
    arrays, a `reduce`, a `fused` kernel): its operands provably broadcast (`shapes()`:
    symbolic_shapes.py's of its graph) and it raises nothing else: NumPy's float, complex
    and bool ufuncs raise nothing (an integer power can), nor do reductions with an
    identity. Unused, it may go (reverse mode leaves such work behind: the adjoint of
    `x - y` for `y`, when only `x` is differentiated). So does a view, reshape, product or
    new array whose op's `cannot_raise` (ops/table.py) says it raises nothing here."""
    rule = OPS[node.op].cannot_raise if node.op in OPS else None
    if rule is not None:
        return not may_write(node) and rule(node, shapes)
    if is_array_elementwise(node):
        plan = array_plan(node.op, tuple(v.type for v in node.inputs))
        ndim = node.outputs[0].type.ndim
        types = [*plan.operands, plan.result]
    elif node.op == "reduce" and node.inputs and isinstance(node.inputs[0].type, ArrayType):
        ndim, types = node.inputs[0].type.ndim, [node.inputs[0].type.dtype]
        if REDUCTIONS[node.attrs["kind"]].empty_raises:
            return False
    elif (spec := kernel_of(node)) is not None:
        ndim = spec.ndim
        types = [v.type for inner in node.regions[0].nodes for v in (*inner.inputs, *inner.outputs)]
        types += [p.type for p in node.regions[0].params]
        if spec.reduce is not None and REDUCTIONS[spec.reduce.kind].empty_raises:
            return False
    else:
        return False
    arrays = [s for v, s in zip(node.inputs, shapes().operands(node))
              if isinstance(v.type, ArrayType)]
    return (all(map(_raises_nothing_as_element, types)) and None not in arrays
            and broadcasts(arrays, ndim))


def _raises_nothing_as_element(t: Type) -> bool:
    """An array element type whose NumPy ufuncs raise nothing (floats give inf and NaN)."""
    return isinstance(t, ScalarType) and (t.is_float or t.is_complex or t == BOOL)
