"""The primitive table's data model: OpDef, lowering descriptors, the OPS registry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..types import BOOL, F64, I64, INT_OR_BOOL, TupleType, Type, is_numeric, promote, python_type_of

if TYPE_CHECKING:
    from ...errors import Loc
    from ..core import Graph, Node, Value


class OpTypeError(Exception):
    """An operator applied to types it does not accept; inference adds the location."""


# ---- lowering descriptors (data, so this package never imports llvmlite) -----

@dataclass(frozen=True)
class Builder:
    """An `llvmlite.ir.IRBuilder` method called on the operands, with extra leading args
    (and, where given, instruction flags: a reduction's `fadd` with `reassoc`)."""
    method: str
    args: tuple = ()
    flags: tuple = ()


@dataclass(frozen=True)
class Intrinsic:
    """An LLVM intrinsic overloaded on the operand type, e.g. 'llvm.sqrt'."""
    name: str


@dataclass(frozen=True)
class LibCall:
    """A C math library function on doubles, e.g. 'tan'; `vector`: libmvec may have it;
    `own_nan`: a NaN operand gives Python's own NaN (positive), not the C function's, whose
    sign may be the operand's (CPython's m_atan2 returns `Py_NAN`)."""
    name: str
    vector: bool = True
    own_nan: bool = False


@dataclass(frozen=True)
class Routine:
    """A multi-instruction lowering the backend provides under this name."""
    name: str


@dataclass(frozen=True)
class CExpr:
    """The CUDA backend's lowering: a C expression over the operands `{0}`, `{1}`, ... (each
    already a C expression of the operand's type), computing the op with NumPy's semantics
    (a kernel computes array elements); helpers it calls are in backend/cuda/prelude.py.
    `{T}` is the result's C type; `{value}` a `const`'s literal."""
    template: str


@dataclass(frozen=True)
class OnHost:
    """The CUDA backend runs the op in its host program, between kernel launches: its
    `evaluate` on the device's arrays (backend/cuda/host.py)."""


@dataclass(frozen=True)
class Refused:
    """A backend's declared refusal of an op: compiling it there is an error with this text."""
    message: str


BACKENDS = ("llvm", "cuda")
"""The backends every op declares a lowering (or a refusal) for."""


@dataclass(frozen=True)
class OpDef:
    """One primitive, as declared (ops/declare.py); never changed after."""
    name: str
    arity: int
    """The number of operands; -1: any."""
    rule: Callable[[list[Type], dict], tuple[list[Type], Type]]
    """The type rule inference calls: `scalar_rule` lifted to arrays and NumPy scalars."""
    evaluate: Callable[..., Any]
    """Python's semantics on scalars (the interpreter's, constant folding's)."""
    llvm: dict[str, Any]
    """The CPU lowering by operand kind ('f', 'i', 'b', '*')."""
    traits: frozenset = frozenset({"pure"})
    llvm_numpy: dict[str, Any] = field(default_factory=dict)
    """The CPU lowering with NumPy's semantics (in fused kernels, on NumPy scalars) where it
    differs from `llvm`'s: no ZeroDivisionError, no domain check."""
    check: str | None = None
    can_overflow: bool = False
    doc: str = ""
    vjp: Callable | None = None
    """The reverse-mode rule (ops/vjp.py says its signature)."""
    jvp: Callable | None = None
    """The forward-mode rule of an op whose tangent neither its VJP rule (elementwise ops)
    nor the 'linear' trait gives: `jvp(e, tangents, inputs, out, attrs)` -> the tangent of
    `out`, where `tangents[i]` is input i's tangent or None (inactive); ad/forward_rules.py."""
    batch: Callable | None = None
    """The batching rule (vmap, ops/batching.py): `batch(b, node, inputs, batched)` -> one
    (value, batched) pair per output of `node` applied to every example at once, where
    `batched[i]` says whether input i carries a leading batch axis; None: no rule (vmap
    runs the function in a loop). Elementwise ops have a generic one (ops/declare.py)."""
    write_adjoint: Callable | None = None
    """A view op's reverse rule of a write through the view (`view[i] = v`):
    `write_adjoint(e, read, attrs)` -> v's adjoint, from `read`, what the same view of the
    written array's adjoint holds at the written place; None: `read` itself."""
    zero_derivative: str | None = None
    """Why the result does not change with the float inputs (AD cuts the path here)."""
    no_vjp: str | None = None
    """Why the op has no rule of its own: where reverse mode handles it, or why it can't."""
    decide: Callable | None = None
    """How type inference decides the op from its operands' types alone, first (even while
    an operand waits on a recursive result): `decide(inference, node, inputs, out)` (an
    `Inference`) -> the outputs, or None: infer it as usual. `x is None` is a constant."""
    expand: Callable | None = None
    """How type inference replaces the op by others: `expand(inference, node, inputs, out)`
    -> the outputs, or None: its type rule applies (`x[0]` of an array an `array_get`)."""
    operands: Callable | None = None
    """What type inference makes of the operands before the type rule: `operands(inference,
    node, attrs, inputs, out)` -> the inputs, `attrs` (a copy of the node's) changed in
    place (a creation's packed shape unpacked, its dtype made explicit)."""
    shape: Callable | None = None
    """The symbolic-shape rule (ir/shape_algebra.py): `shape(node, table)` -> the Shape of the
    array result, or the Dim (a length) the int result is; None: unknown. An elementwise
    op's broadcasts unless it declares its own (ops/declare.py)."""
    cannot_raise: Callable | None = None
    """Where an op with the 'raises' trait provably raises nothing for a node:
    `cannot_raise(node, shapes)`, `shapes()` giving its graph's symbolic shapes (ir/
    symbolic_shapes.py), is True when its operands and attrs exclude every error but a
    MemoryError (passes/effects.py: an unused one may go); None: it may raise."""
    array_rule: Callable | None = None
    """An elementwise op's element types on arrays, where they are not its scalar rule's on
    NumPy's promotion of every operand (ops/elementwise.py): `array_rule(types)` ->
    (operand element types, result dtype)."""
    array_refusal: str | None = None
    """Why the op refuses whole arrays, where "not supported yet" says too little."""
    scalar_rule: Callable | None = None
    """The declared type rule on Python scalars."""
    python: tuple[str, ...] = ()
    """The Python spellings that lower to this op (`math.sin`, `abs`)."""
    numpy: tuple[str, ...] = ()
    """The NumPy functions (`np.<name>`) that lower to this op."""
    ufunc: str | Callable | None = None
    """The NumPy function computing the op (its array form, its NumPy-scalar semantics): its
    name in `np`, or, for an op NumPy lacks (math.erf), a function computing it as a ufunc
    would, on NumPy arrays and scalars (`elementwise.numpy_function`)."""
    cuda: Any = None
    """The GPU lowering: `CExpr`s by operand kind (in a kernel), `OnHost` (the host program
    runs it), or a `Refused`."""
    cuda_python: dict[str, Any] = field(default_factory=dict)
    """The GPU lowering with Python's semantics where it differs from `cuda`'s (NumPy's), as
    `llvm` from `llvm_numpy`: a Python complex's abs and `/` in vectorize's device
    functions, which check for Python's errors (backend/cuda/scalar_functions.py)."""

    def lowering(self, backend: str):
        """This op's lowering descriptors (or refusal) for `backend` (one of `BACKENDS`)."""
        return getattr(self, backend)


OPS: dict[str, OpDef] = {}


class Inference(Protocol):
    """What an op's inference hooks (`OpDef.decide`, `expand`, `operands`) use of type
    inference (ir/infer.py), which passes itself to them."""

    static_truth: dict
    """Bool values that types decide (`b is None`), and their value."""

    def infer_leaf(self, node: Node, inputs: list[Value], out: Graph) -> list[Value]:
        """`node` typed on the typed `inputs`, appended to `out`: its outputs."""

    def coerce(self, graph: Graph, value: Value, target: Type, loc: Loc | None) -> Value:
        """`value` converted to `target` by nodes appended to `graph` (Python's promotion)."""

    def infer_call(self, node: Node, inputs: list[Value], out: Graph) -> list[Value]:
        """A `call` node typed on `inputs` (its callee specialized), appended to `out`."""

    def lower_callee(self, fn: object, loc: Loc | None) -> str:
        """The graph name of Python function `fn`, lowered now if it was not (a method
        found from an argument's class)."""


def kind(t: Type) -> str:
    """The lowering key of a scalar type: its NumPy kind, 'b', 'i', 'u', 'f' or 'c'."""
    return t.kind


FALLBACK_KINDS = {"u": ("u", "i", "*"), "i": ("i", "*"), "f": ("f", "*"), "b": ("b", "*"),
                  "c": ("c", "*")}
"""The lowering keys a descriptor table is searched by, in order, for each kind: an unsigned
int takes an op's 'i' lowering where it declares no 'u' one (add, mul, the bit operations
are the same instructions)."""


def lowering_for(lowerings: dict, t: Type | None):
    """The descriptor of `lowerings` (an op's `llvm`, `llvm_numpy`, `cuda` ...) for operands
    of scalar type `t` (any other type: the '*' one), or None."""
    for key in FALLBACK_KINDS[t.kind] if hasattr(t, "kind") else ("*",):
        if key in lowerings:
            return lowerings[key]
    return None


# ---- type rules ---------------------------------------------------------------

def _numeric(types, what):
    for t in types:
        if not is_numeric(t):
            raise OpTypeError(f"{what} needs numbers, got {t}")


def arith_rule(types, attrs):
    _numeric(types, "this operator")
    t = promote(*types)
    return [t] * len(types), t


def truediv_rule(types, attrs):
    _numeric(types, "'/'")
    t = promote(*types)
    t = t if t.is_float or t.is_complex else F64
    return [t, t], t


def int_only_rule(types, attrs):
    _numeric(types, "this operator")
    if any(t.is_float or t.is_complex for t in types):
        raise OpTypeError(f"this operator needs integers, got {', '.join(map(str, types))}")
    t = promote(*types)  # Python's ints are int64; NumPy's keep their dtype
    return [t] * len(types), t


def bitwise_rule(types, attrs):
    """`&`, `|`, `^`: of bools a bool, else an int, as Python's; of bools and int|bools an
    int|bool (a bool where both operands are)."""
    if all(t == BOOL for t in types):
        return [BOOL] * len(types), BOOL
    if set(types) <= {BOOL, INT_OR_BOOL} and not any(t.strong for t in types if t == BOOL):
        return [INT_OR_BOOL] * len(types), INT_OR_BOOL
    return int_only_rule([I64 if t == INT_OR_BOOL else t for t in types], attrs)


def compare_rule(types, attrs):
    _numeric(types, "comparison")
    t = promote(*types)
    return [t, t], BOOL


def unary_arith_rule(types, attrs):
    _numeric(types, "this operator")
    t = promote(types[0])
    return [t], t


def truth_rule(types, attrs):
    _numeric(types, "a truth test")
    return [types[0]], BOOL


def float_rule(types, attrs):
    _numeric(types, "this math function")
    t = promote(*types)
    if t.is_complex:  # not its real part: Python's math and these NumPy functions refuse one
        raise OpTypeError(f"this math function takes real numbers, got {t}")
    t = t if t.is_float else F64
    return [t] * len(types), t


def float_pred_rule(types, attrs):
    operands, _ = float_rule(types, attrs)
    return operands, BOOL


def to_int_rule(types, attrs):
    _numeric(types, "this function")
    t = promote(types[0])
    return [t], I64


def cast_rule(types, attrs):
    _numeric(types, "a conversion")
    return [types[0]], attrs["to"]


def select_rule(types, attrs):
    from ..types import join
    t = join(types[1], types[2])
    if t is None:
        raise OpTypeError(f"the two alternatives have different types: {types[1]} and {types[2]}")
    return [BOOL, t, t], t


def const_rule(types, attrs):
    t = attrs.get("type") or python_type_of(attrs["value"])
    if t is None:
        raise OpTypeError(f"constant {attrs['value']!r} has no IR type")
    return [], t


def tuple_rule(types, attrs):
    return list(types), TupleType(tuple(types), attrs.get("node"))  # a container's: its node


def getitem_rule(types, attrs):
    (t,) = types
    if not isinstance(t, TupleType):
        raise OpTypeError(f"indexing needs a tuple, got {t}")
    i = attrs["index"]
    if not -len(t.elements) <= i < len(t.elements):
        raise OpTypeError(f"tuple index {i} out of range for {t}")
    return [t], t.elements[i]


def undef_rule(types, attrs):
    from ..types import BOTTOM
    return [], attrs.get("type") or BOTTOM
