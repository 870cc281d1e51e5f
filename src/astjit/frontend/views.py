"""Lowering subscripts and array views: `t[0]`, `x[i, j]`, slices (`x[1:n:2, i]`),
`np.transpose`, reshape. See ir/ops/views.py for the ops.

The frontend does not know types:

- `v[k]` with a literal integer `k` (`t[0]`, `x[-1]`) is `getitem {index=k}`,
  the tuple element; type inference turns a `getitem` whose operand is an
  array into `array_get(v, const k)`. Any other index (`x[i]`, `a[i, j]`) is
  `array_get(v, *indices)`, as a tuple takes only literal indices: inference
  rejects an `array_get` of a tuple with that hint. So the tuple IR stays as
  it was, and no op needs resolving later except that one `getitem` case.
- `x[a:b]` is an `array_view` whatever `x` is (type inference rejects a
  non-array), and a row `a[i]` of a 2-d array is an `array_get` with too few
  indices that type inference turns into a view. An index with `...` is an
  `array_index`. `None` (`np.newaxis`) and integer and bool arrays among the
  indices (`x[idx]`, `a[1:, m]`, `x[:, None]`) are found by type inference,
  which replaces any of these by NumPy's indexing (ir/ops/advanced_index.py).
  Starred indices are reported (not supported yet).
- Element and slice assignment (`x[i] = v`, `y[1:3] = v`, `x[..., None] = v`:
  targets.py; `x[i] += v`: statements.py) are built from `lower_indices` and
  `index_spec`.
"""
from __future__ import annotations

import ast

from ..errors import UnsupportedCallError, UnsupportedSyntaxError
from ..ir.core import Value
from .analysis import constant_index
from .containers import is_flat, lower_field, lower_key
from .scope import Scope
from .state import ExprRule, Lowering


def lower_subscript(state: Lowering, scope: Scope, node: ast.Subscript) -> Value:
    """`t[0]` -> getitem (inference makes it an array_get when `t` is an array);
    `x[i]`, `x[i, j]` -> array_get; `x[1:n]` -> array_view. `x.flat[k]`: a `getfield`
    of x and k; a slice (any index that may select several elements) of a copy of x.flat,
    as NumPy's is a copy."""
    if is_flat(state, scope, node.value):
        if not (isinstance(node.slice, (ast.Slice, ast.Tuple)) or has_extended(state, node)
                or _is_constant(node.slice, None)):
            return lower_field(state, scope, node.value, "item",
                               state.lower_expr(scope, node.slice))
        base = lower_field(state, scope, node.value, "copy")
    else:
        base = state.lower_expr(scope, node.value)
    if unsupported_index(state, node):
        return scope.emit("undef", [], state.loc(node))
    if has_slice(node) or has_extended(state, node):
        if base in scope.sizes:
            return state.fail(scope, node.slice, UnsupportedSyntaxError,
                              "slicing a tuple is not supported")
        return lower_view(state, scope, node, base)
    index = constant_index(node.slice)
    if index is not None:
        return scope.emit("getitem", [base], state.loc(node), {"index": index})
    if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return lower_key(state, scope, node, base)  # d["w"] of a dict
    if base in scope.sizes:  # a tuple display or a tuple constant: only literal indices
        return state.fail(scope, node.slice, UnsupportedSyntaxError,
                          "a tuple index must be a constant integer",
                          "index with a literal, e.g. t[0] or t[-1]; "
                          "to visit every element write: for x in t:")
    return scope.emit("array_get", [base, *lower_indices(state, scope, node)], state.loc(node))


def lower_indices(state: Lowering, scope: Scope, node: ast.Subscript) -> list[Value]:
    """The index values of `x[i]` or `x[i, j]`, left to right."""
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return [state.lower_expr(scope, part) for part in parts]


def unsupported_index(state: Lowering, node: ast.Subscript) -> bool:
    """Report (and return True for) a starred index."""
    for part in _parts(node):
        if isinstance(part, ast.Starred):
            state.report(UnsupportedSyntaxError,
                         f"a starred index ({ast.unparse(node)}) is not supported yet", part,
                         "write the indices out, e.g. x[i, j], or index with a tuple of arrays")
            return True
    return False


def _parts(node: ast.Subscript) -> list[ast.expr]:
    return node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]


def _is_constant(part: ast.expr, value) -> bool:
    return isinstance(part, ast.Constant) and part.value is value


def has_slice(node: ast.Subscript) -> bool:
    return any(isinstance(part, ast.Slice) for part in _parts(node))


def has_extended(state: Lowering, node: ast.Subscript) -> bool:
    """Whether the index has `...` (an array_index settles it)."""
    return any(_is_constant(p, Ellipsis) for p in _parts(node))


def index_spec(state: Lowering, scope: Scope, node: ast.Subscript) -> tuple[tuple, list[Value]]:
    """The spec (array_view's, plus 'e' for `...`) and input values of the index of
    `node`, lowered left to right (`None` is a value: type inference finds it)."""
    spec, inputs = [], []
    for part in _parts(node):
        if isinstance(part, ast.Slice):
            bounds = (part.lower, part.upper, part.step)
            spec.append("s" + "".join("0" if b is None else "1" for b in bounds))
            inputs += [state.lower_expr(scope, b) for b in bounds if b is not None]
        elif _is_constant(part, Ellipsis):
            spec.append("e")
        else:
            spec.append("i")
            inputs.append(state.lower_expr(scope, part))
    return tuple(spec), inputs


def lower_view(state: Lowering, scope: Scope, node: ast.Subscript, base: Value) -> Value:
    """`x[a:b:c, i]`: an array_view of `base` (already lowered); with `...` an array_index
    (ir/ops/advanced_index.py)."""
    spec, inputs = index_spec(state, scope, node)
    op = "array_index" if "e" in spec else "array_view"
    return scope.emit(op, [base, *inputs], state.loc(node), {"spec": spec})


def lower_reshape(state: Lowering, scope: Scope, node: ast.Call, array: Value,
                  shape: list[ast.expr], name: str) -> Value:
    """`a.reshape(2, 3)`, `a.reshape((2, -1))`, `np.reshape(a, n)`."""
    loc = state.loc(node)
    if not shape:
        return state.fail(scope, node, UnsupportedCallError, f"{name}() needs a shape")
    if len(shape) == 1 and isinstance(shape[0], (ast.Tuple, ast.List)):
        shape = shape[0].elts
    elif len(shape) == 1:
        packed = state.lower_expr(scope, shape[0])
        return scope.emit("array_reshape", [array, packed], loc, {"packed_shape": True})
    dims = [state.lower_expr(scope, d) for d in shape]
    return scope.emit("array_reshape", [array, *dims], loc)


def lower_reshape_method(state: Lowering, scope: Scope, node: ast.Call) -> Value:
    """`<array>.reshape(...)`."""
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        return state.fail(scope, node, UnsupportedCallError,
                          "reshape() takes only the shape, by position, here",
                          "write a.reshape((n, m)) or a.reshape(n, m)")
    array = state.lower_expr(scope, node.func.value)
    return lower_reshape(state, scope, node, array, node.args, "reshape")


def lower_numpy_view(state: Lowering, scope: Scope, node: ast.Call, which: str,
                     name: str) -> Value:
    """`np.transpose(a)` and `np.reshape(a, shape)`."""
    args = list(node.args)
    for k in node.keywords:
        if which == "reshape" and k.arg in ("shape", "newshape") and len(args) == 1:
            args.append(k.value)
        else:
            return state.fail(scope, node, UnsupportedCallError,
                              f"{name}() takes its arguments by position here"
                              + (" (axes= is not supported yet)" if which == "transpose" else ""))
    expected = 1 if which == "transpose" else 2
    if len(args) != expected or any(isinstance(a, ast.Starred) for a in args):
        what = "np.transpose(a) with axes is not supported yet" if which == "transpose" \
            and len(args) > 1 else f"{name}() takes {expected} argument(s)"
        return state.fail(scope, node, UnsupportedCallError, what)
    array = state.lower_expr(scope, args[0])
    if which == "transpose":
        return scope.emit("array_transpose", [array], state.loc(node))
    return lower_reshape(state, scope, node, array, [args[1]], name)


def numpy_view_function(obj: object) -> str | None:
    """'transpose' or 'reshape' for np.transpose / np.reshape, else None."""
    import sys

    numpy = sys.modules.get("numpy")
    if numpy is None:
        return None
    if obj is numpy.transpose:
        return "transpose"
    if obj is numpy.reshape:
        return "reshape"
    return None


def numpy_index_function(obj: object) -> str | None:
    """'add.at' for np.add.at, else None."""
    import sys

    numpy = sys.modules.get("numpy")
    if numpy is not None and callable(obj) and obj == numpy.add.at:
        return "add.at"
    return None


def lower_add_at(state: Lowering, scope: Scope, node: ast.Call, which: str, name: str) -> Value:
    """`np.add.at(x, index, v)`: x[index] += v, every occurrence of a repeated index adding
    (an `array_index_set {mode='add'}`); `index` an index or a tuple display of them."""
    if node.keywords or len(node.args) != 3 or any(isinstance(a, ast.Starred) for a in node.args):
        return state.fail(scope, node, UnsupportedCallError,
                          f"{name}() takes the array, the index and the values, by position")
    loc = state.loc(node)
    array = state.lower_expr(scope, node.args[0])
    index = node.args[1]
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    spec = tuple("e" if _is_constant(p, Ellipsis) else "i" for p in parts)
    inputs = [state.lower_expr(scope, p) for p in parts if not _is_constant(p, Ellipsis)]
    value = state.lower_expr(scope, node.args[2])
    scope.emit("array_index_set", [array, value, *inputs], loc, {"spec": spec, "mode": "add"})
    return scope.const(None, loc)


EXPRESSIONS: dict[type[ast.expr], ExprRule] = {ast.Subscript: lower_subscript}
