"""Subscripts with NumPy's full index rules, settled by type inference (OpDef.expand).

The frontend cannot tell `x[i]` from `x[idx]` or `x[mask]`, so subscripts lower as
before (`array_get`, `array_set`, `array_view`), and those with `...` to `array_index
{spec}` / `array_index_set {spec, mode}`; once the index types are known, the ones
with `None`, an integer or a bool array are replaced here by views and the primitives
of indexing.py, as NumPy defines them:

- `...` stands for as many `:` as the array has axes left; `None` inserts a length-1
  axis (`array_expand_dims`); slices and ints alone are views (`array_view`).
- With an integer or bool array in the index, every int in it is an advanced index
  too. The slices and `None`s make a view `V` in which the advanced indices take
  whole axes; a bool array of k dims is the k integer arrays of its `nonzero`
  (one array: `compress`). The integer arrays broadcast to one shape B (NumPy's
  IndexError when they do not). When the advanced indices are next to each other,
  B replaces their axes in place; when a slice, `None` or `...` separates them, B
  comes first (`V` permuted so that they lead).
- `x[idx] = v` / `x[mask] = v`: the same view and a `scatter` of `v` broadcast to
  the shape the read would have; `x[mask] = number` with one mask (`x[x > 0] = 0`)
  is `V[...] = where(mask, number, V)`, one fused pass. `x[idx] += v` is a read, an
  add and a write (repeated indices write once, NumPy's), `np.add.at(x, idx, v)` a
  scatter that accumulates.

`spec` is `array_view`'s with one more entry, `"e"` (`...`); `"i"` takes any value:
an int, None, an integer array or a bool array.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import TypingError
from ..core import Node, Value
from ..types import BOOL, I64, NONE, ArrayType, is_numeric
from .declare import _def
from .indexing import is_int_array
from .table import OpTypeError, Refused

SHAPE_MISMATCH = "shape mismatch: indexing arrays could not be broadcast together"
MODES = ("set", "add", "writeback")
"""What `array_index_set` does: `x[...] = v`; `np.add.at`; write back what `x[...] op= v`
computed (nothing when the index is basic: the update was in place)."""


@dataclass
class Entry:
    """One entry of an index, types known: `kind` is 'int', 'array', 'mask', 'slice' or
    'new'; `values` its inputs; `spec` a slice's spec entry."""

    kind: str
    values: list
    spec: str = "i"
    axis: int = 0
    """The axis of the indexed array it applies to (its first, for a mask)."""

    @property
    def width(self) -> int:
        """How many axes of the indexed array it takes."""
        if self.kind == "new":
            return 0
        return self.values[0].type.ndim if self.kind == "mask" else 1


def is_advanced(values: list[Value]) -> bool:
    """Whether an index part is an integer or bool array (NumPy's advanced indexing) or
    None (`np.newaxis`): what the basic ops leave to this module."""
    return any(isinstance(v.type, ArrayType) or v.type == NONE for v in values)


def entries(x: ArrayType, spec, parts: list[Value]) -> list[Entry]:
    """The index entries, `...` expanded and the axes left taken whole; NumPy's errors for
    too many indices and for what cannot index."""
    parts = list(parts)
    found: list[Entry | str] = []
    for s in spec:
        if s == "i":
            v = parts.pop(0)
            t = v.type
            if isinstance(t, ArrayType) and t.dtype == BOOL:
                found.append(Entry("mask", [v]))
            elif is_int_array(t):
                found.append(Entry("array", [v]))
            elif t == I64:
                found.append(Entry("int", [v]))
            elif t == NONE:
                found.append(Entry("new", []))
            else:
                raise OpTypeError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                                  "(`None`) and integer or boolean arrays are valid indices, "
                                  f"got {t}")
        elif s == "e":
            found.append("e")
        else:
            n = s[1:].count("1")
            found.append(Entry("slice", [parts.pop(0) for _ in range(n)], s))
    if found.count("e") > 1:
        raise OpTypeError("an index can only have a single ellipsis ('...')")
    used = sum(e.width for e in found if e != "e")
    if used > x.ndim:
        raise OpTypeError(f"too many indices for array: array is {x.ndim}-dimensional, but "
                          f"{used} were indexed")
    rest = [Entry("slice", [], "s000") for _ in range(x.ndim - used)]
    if "e" in found:
        k = found.index("e")
        found[k:k + 1] = rest
    else:
        found += rest
    axis = 0
    for e in found:
        e.axis = axis
        axis += e.width
    return found


class _Emitter:
    """Typed nodes appended to the graph inference builds, at the subscript's location."""

    def __init__(self, inference, node: Node, out):
        self.inference, self.node, self.out, self.loc = inference, node, out, node.loc

    def op(self, name: str, *inputs: Value, **attrs) -> Value:
        made = Node(name, [], [Value("", None)], attrs=attrs, loc=self.loc)
        return self.inference.infer_leaf(made, list(inputs), self.out)[0]

    def const(self, value, t=None) -> Value:
        return self.op("const", value=value, **({"type": t} if t else {}))

    def dims(self, x: Value) -> list[Value]:
        return [self.op("array_dim", x, axis=k) for k in range(x.type.ndim)]

    def raise_if(self, condition: Value, exc: str, message: str) -> None:
        self.out.add("raise_if", [condition], attrs={"exc": exc, "message": message},
                     loc=self.loc, types=[NONE])


# ---- the plan: a view V and the advanced indices on its axes ---------------------------

def basic_view(em: _Emitter, x: Value, found: list[Entry], advanced: bool) -> Value:
    """x with the slices (and, when no index is advanced, the ints) applied and the `None`s
    inserted; an advanced entry keeps its axes whole."""
    spec, inputs, new_axes, axis = [], [], [], 0
    for e in found:
        if e.kind == "new":
            new_axes.append(axis)
            axis += 1
            continue
        if e.kind == "int" and not advanced:
            spec.append("i")
            inputs += e.values
            continue
        spec.append(e.spec if e.kind == "slice" else "s000")
        inputs += e.values if e.kind == "slice" else []
        axis += e.width
    while spec and spec[-1] == "s000":
        spec.pop()
    if advanced and not spec:  # x[idx]: no view, so that its adjoint is the gather's own
        view = x
    else:
        view = em.op("array_view", x, *inputs, spec=tuple(spec))
    if new_axes:
        view = em.op("array_expand_dims", view, axes=tuple(new_axes))
    return view


def _view_axes(found: list[Entry]) -> list[int]:
    """The axis of V each entry starts at (advanced: ints keep their axis)."""
    starts, axis = [], 0
    for e in found:
        starts.append(axis)
        axis += 1 if e.kind == "new" else e.width
    return starts


def _check_mask(em: _Emitter, view: Value, m: Value, start: int, user_axis: int) -> None:
    """NumPy's IndexError when the mask's shape is not that of the axes it covers."""
    from .indexing import MASK_MISMATCH

    for k, (size, length) in enumerate(zip(em.dims(view)[start:], em.dims(m))):
        message = MASK_MISMATCH.split(";")[0].format(axis=user_axis + k)
        em.raise_if(em.op("ne", size, length), "IndexError", message)


def _indices(em: _Emitter, view: Value, found: list[Entry]) -> list[tuple[int, Value, int]]:
    """(axis of V, index value, the user's axis) of each advanced index, in order; a mask
    becomes the rows of its nonzero."""
    out = []
    for e, start in zip(found, _view_axes(found)):
        if e.kind in ("int", "array"):
            out.append((start, e.values[0], e.axis))
        elif e.kind == "mask":
            m = e.values[0]
            _check_mask(em, view, m, start, e.axis)
            rows = em.op("nonzero", m)
            out += [(start + k, em.op("array_view", rows, em.const(k), spec=("i",)), e.axis + k)
                    for k in range(m.type.ndim)]
    return out


def _broadcast(em: _Emitter, values: list[Value]) -> list[Value]:
    """The index arrays broadcast to one shape (NumPy's IndexError when they do not); ints
    stay ints."""
    arrays = [v for v in values if isinstance(v.type, ArrayType)]
    if len(arrays) == 1:
        return values
    ndim = max(a.type.ndim for a in arrays)
    one = em.const(1)
    shape = [one] * ndim
    for a in arrays:
        for k, d in enumerate(em.dims(a), start=ndim - a.type.ndim):
            fits = em.op("bitor", em.op("eq", d, one), em.op("bitor", em.op("eq", shape[k], one),
                                                             em.op("eq", d, shape[k])))
            em.raise_if(em.op("not", fits), "IndexError", SHAPE_MISMATCH)
            shape[k] = em.op("select", em.op("eq", d, one), shape[k], d)
    return [em.op("array_broadcast_to", v, *shape) if isinstance(v.type, ArrayType) else v
            for v in values]


@dataclass
class Plan:
    """Where a gather or scatter applies: the view (permuted when the advanced indices
    are apart), the index values, the axis they start at, the user's axes."""

    view: Value
    indices: list[Value]
    axis: int
    axes: tuple[int, ...]


def advanced_plan(em: _Emitter, x: Value, found: list[Entry]) -> Plan:
    view = basic_view(em, x, found, advanced=True)
    placed = _indices(em, view, found)
    axes = [a for a, _, _ in placed]
    values = _broadcast(em, [v for _, v, _ in placed])
    user = tuple(u for _, _, u in placed)
    if axes == list(range(axes[0], axes[0] + len(axes))):
        return Plan(view, values, axes[0], user)
    order = axes + [k for k in range(view.type.ndim) if k not in axes]
    return Plan(em.op("array_permute", view, axes=tuple(order)), values, 0, user)


def _single_mask(found: list[Entry]) -> Entry | None:
    advanced = [e for e in found if e.kind in ("int", "array", "mask")]
    return advanced[0] if len(advanced) == 1 and advanced[0].kind == "mask" else None


# ---- reads --------------------------------------------------------------------------

def read(inference, node: Node, x: Value, spec, parts: list[Value], out) -> list[Value]:
    """`x[index]` with NumPy's rules: the outputs replacing `node`'s."""
    em = _Emitter(inference, node, out)
    found = _entries(em, x, spec, parts)
    if not any(e.kind in ("array", "mask") for e in found):
        return [_named(basic_view(em, x, found, advanced=False), node)]
    mask = _single_mask(found)
    if mask is not None:
        view = basic_view(em, x, found, advanced=True)
        start = _view_axes(found)[found.index(mask)]
        return [_named(em.op("compress", view, mask.values[0], axis=start), node)]
    plan = advanced_plan(em, x, found)
    return [_named(em.op("gather", plan.view, *plan.indices, axis=plan.axis, axes=plan.axes),
                   node)]


def _entries(em: _Emitter, x: Value, spec, parts: list[Value]) -> list[Entry]:
    if not isinstance(x.type, ArrayType):
        raise TypingError(f"indexing with arrays, None or ... needs an array, got {x.type}",
                          em.loc)
    try:
        return entries(x.type, spec, parts)
    except OpTypeError as error:
        raise TypingError(str(error), em.loc) from None


def _named(value: Value, node: Node) -> Value:
    value.name = value.name or node.outputs[0].name
    return value


# ---- writes -------------------------------------------------------------------------

def write(inference, node: Node, x: Value, v: Value, spec, parts: list[Value], mode: str,
          out) -> list[Value]:
    """`x[index] = v` (mode 'set'), `np.add.at(x, index, v)` ('add'), or the write back of
    `x[index] op= v` ('writeback'): the outputs (none) replacing `node`'s."""
    em = _Emitter(inference, node, out)
    found = _entries(em, x, spec, parts)
    none = em.const(None)
    if not any(e.kind in ("array", "mask") for e in found):
        if mode == "writeback":
            return [none]
        view = basic_view(em, x, found, advanced=False)
        if mode == "add":
            new = em.op("add", view, v)
            em.op("augassign", view, v, new, op="add")
        else:
            em.op("array_assign", view, v)
        return [none]
    dtype = x.type.dtype
    mask = _single_mask(found)
    if mask is not None and mode != "add" and not isinstance(v.type, ArrayType):
        _masked_fill(em, x, found, mask, _cast(em, v, dtype))
        return [none]
    plan = advanced_plan(em, x, found)
    value = _cast(em, v, dtype)
    if isinstance(value.type, ArrayType):
        dims = _gather_dims(em, plan)
        value = em.op("array_broadcast_to", value, *dims)
    em.op("scatter", plan.view, value, *plan.indices, axis=plan.axis, axes=plan.axes,
          accumulate=mode == "add")
    return [none]


def _cast(em: _Emitter, v: Value, dtype) -> Value:
    """`v` in the array's dtype, as NumPy's assignment casts it."""
    if isinstance(v.type, ArrayType):
        return v if v.type.dtype == dtype else em.op("array_astype", v, dtype=dtype)
    if not is_numeric(v.type):
        raise TypingError(f"cannot store {v.type} into an array of {dtype}", em.loc)
    return v if v.type == dtype else em.op("cast", v, to=dtype)


def _gather_dims(em: _Emitter, plan: Plan) -> list[Value]:
    """The shape a gather by `plan` would have."""
    dims = em.dims(plan.view)
    arrays = [v for v in plan.indices if isinstance(v.type, ArrayType)]
    k = len(plan.indices)
    return dims[:plan.axis] + em.dims(arrays[0]) + dims[plan.axis + k:]


def _masked_fill(em: _Emitter, x: Value, found: list[Entry], mask: Entry, v: Value) -> None:
    """`V[m] = number`: `V[...] = where(m, number, V)`, m's axes aligned with V's."""
    view = basic_view(em, x, found, advanced=True)
    m = mask.values[0]
    start = _view_axes(found)[found.index(mask)]
    _check_mask(em, view, m, start, mask.axis)
    after = view.type.ndim - start - m.type.ndim
    if after:
        m = em.op("array_expand_dims", m, axes=tuple(range(m.type.ndim, m.type.ndim + after)))
    em.op("array_assign", view, em.op("where", m, v, view))


# ---- the subscripts the frontend makes --------------------------------------------------

def _index_rule(types, attrs):
    raise OpTypeError("a subscript with None or ... is settled by type inference")


def _expand_read(inference, node, inputs, out):
    return read(inference, node, inputs[0], node.attrs["spec"], inputs[1:], out)


def _expand_write(inference, node, inputs, out):
    x, v, *parts = inputs
    return write(inference, node, x, v, node.attrs["spec"], parts, node.attrs["mode"], out)


def _unresolved(*args, **kwargs):
    raise AssertionError("array_index is replaced in type inference")


_SETTLED = Refused("a subscript is replaced in type inference")
_def("array_index", -1, _index_rule, _unresolved, {"*": _SETTLED}, ("raises", "reads"),
     no_vjp="type inference replaces it", expand=_expand_read,
     doc="x[index] with ... (attrs spec: array_view's, plus 'e')")
_def("array_index_set", -1, _index_rule, _unresolved, {"*": _SETTLED}, ("raises", "writes"),
     no_vjp="type inference replaces it", expand=_expand_write,
     doc="x[index] = v; inputs [x, v, *parts]; attrs spec, mode ('set', 'add', 'writeback')")
