"""Lowering NumPy's shape, joining, copy and conversion functions and methods
(`np.concatenate`, `np.split`, `x.ravel()`, `x.astype(np.float32)` ...) to one
`array_function` node each, which type inference replaces by primitives
(ir/ops/shape_functions.py says what each becomes).

Arguments are bound by NumPy's parameter names. Each parameter is one of:

- a value: lowered as usual (an array, a shift, `reps`, `num`);
- a sequence (`np.concatenate`'s arrays): a tuple or list display gives one input per
  element, any other expression one tuple value that type inference unpacks;
- static: read at compile time (`axis`, `endpoint`, `copy`, split's sections, take's
  `mode`), as reductions read their axis;
- a dtype: read at compile time (float64, float32, int64, bool), or `y.dtype` of a local
  `y`, which is then an input (`dtype_of`) whose type gives the dtype;
- np.array's object: a (nested) display of numbers gives its numbers and nesting, anything
  else one value;
- absent: NumPy's parameter that must be left out or None (take's `out`), so that the
  ones after it bind by position.

NumPy's other parameters (`out=`, `order=`, `retstep=` ...) are refused by name.
"""
from __future__ import annotations

import ast
import functools

from ..errors import UnsupportedCallError
from ..ir.core import Value
from ..ir.ops.methods import ARRAY_METHODS
from ..ir.ops.shape_functions import FUNCTIONS
from .builtins import CallError, numpy_lookup
from .methods import lower_method_call
from .resolve import constant, dtype_of_array, static_dtype
from .scope import Scope
from .signatures import REQUIRED, bind_arguments, static_argument
from .source import NOT_CONSTANT
from .state import Lowering

VALUE, SEQUENCE, STATIC, DTYPE, OBJECT, ABSENT = ("value", "sequence", "static", "dtype",
                                                  "object", "absent")

SIGNATURES: dict[str, tuple] = {
    "concatenate": (("arrays", SEQUENCE), ("axis", STATIC, 0)),
    "stack": (("arrays", SEQUENCE), ("axis", STATIC, 0)),
    "hstack": (("tup", SEQUENCE),),
    "vstack": (("tup", SEQUENCE),),
    "split": (("ary", VALUE), ("indices_or_sections", STATIC), ("axis", STATIC, 0)),
    "squeeze": (("a", VALUE), ("axis", STATIC, None)),
    "expand_dims": (("a", VALUE), ("axis", STATIC)),
    "ravel": (("a", VALUE),),
    "flip": (("m", VALUE), ("axis", STATIC, None)),
    "roll": (("a", VALUE), ("shift", VALUE), ("axis", STATIC, None)),
    "tile": (("A", VALUE), ("reps", VALUE)),
    "repeat": (("a", VALUE), ("repeats", VALUE), ("axis", STATIC, None)),
    "broadcast_to": (("array", VALUE), ("shape", VALUE)),
    "swapaxes": (("a", VALUE), ("axis1", STATIC), ("axis2", STATIC)),
    "moveaxis": (("a", VALUE), ("source", STATIC), ("destination", STATIC)),
    "copy": (("a", VALUE),),
    "ascontiguousarray": (("a", VALUE),),
    "array": (("object", OBJECT), ("dtype", DTYPE, None)),
    "linspace": (("start", VALUE), ("stop", VALUE), ("num", VALUE, 50), ("endpoint", STATIC, True),
                 ("dtype", DTYPE, None)),
    "take": (("a", VALUE), ("indices", VALUE), ("axis", STATIC, None), ("out", ABSENT, None),
             ("mode", STATIC, "raise")),
    "compress": (("condition", VALUE), ("a", VALUE), ("axis", STATIC, None)),
    "diagonal": (("a", VALUE), ("offset", VALUE, 0), ("axis1", STATIC, 0), ("axis2", STATIC, 1)),
}
"""np.<name>: its parameters, (name, kind[, default]), in NumPy's order."""
assert set(SIGNATURES) == set(FUNCTIONS)

METHOD_SIGNATURES: dict[str, tuple] = {
    "ravel": (), "flatten": (), "copy": (),
    "astype": (("dtype", DTYPE, REQUIRED), ("copy", STATIC, True)),
    "squeeze": (("axis", STATIC, None),),
    "swapaxes": (("axis1", STATIC), ("axis2", STATIC)),
    "repeat": (("repeats", VALUE), ("axis", STATIC, None)),
    "take": (("indices", VALUE), ("axis", STATIC, None), ("out", ABSENT, None),
             ("mode", STATIC, "raise")),
    "compress": (("condition", VALUE), ("axis", STATIC, None)),
    "diagonal": (("offset", VALUE, 0), ("axis1", STATIC, 0), ("axis2", STATIC, 1)),
    "view": (("dtype", DTYPE, REQUIRED),),
}
"""x.<name>(...): its parameters after the array (bound to `a`)."""


@functools.cache
def _function_table() -> dict[object, str]:
    import numpy

    return {getattr(numpy, name): name for name in SIGNATURES}


def numpy_shape_function(obj: object) -> str | None:
    """The name of `obj` if it is one of the NumPy functions lowered here, else None."""
    return numpy_lookup(_function_table, obj)


def lower_numpy_shape_function(state: Lowering, scope: Scope, node: ast.Call, function: str,
                               name: str) -> Value:
    return _lower(state, scope, node, function, name, SIGNATURES[function], list(node.args))


def lower_shape_method(state: Lowering, scope: Scope, node: ast.Call) -> Value:
    """`x.ravel()`, `x.astype(np.float32)`: the array is bound to the first parameter.
    `x.take(idx)`, `x.compress(c)`, `x.diagonal()` by position are method calls resolved
    by the receiver's type (ARRAY_METHODS), so an object's own `take` stays its own."""
    function = node.func.attr
    if not node.keywords and (function, len(node.args)) in ARRAY_METHODS \
            or function == "view" and not _names_a_dtype(state, scope, node):
        return lower_method_call(state, scope, node)  # an object's own view(...) too
    params = (("a", VALUE), *METHOD_SIGNATURES[function])
    return _lower(state, scope, node, function, function, params,
                  [node.func.value, *node.args])


def _names_a_dtype(state: Lowering, scope: Scope, node: ast.Call) -> bool:
    """Whether the call's one argument (`x.view(np.int64)`, `dtype=`) is a dtype known at
    compile time, or `y.dtype`."""
    given = [*node.args, *(k.value for k in node.keywords if k.arg == "dtype")]
    if len(given) != 1 or len(node.args) + len(node.keywords) != 1:
        return False
    if dtype_of_array(state, scope, given[0]) is not None:
        return True  # x.view(y.dtype)
    try:
        return static_dtype(state, scope, given[0], "view") is not None
    except CallError:
        return False


def _lower(state: Lowering, scope: Scope, node: ast.Call, function: str, name: str,
           params: tuple, args: list[ast.expr]) -> Value:
    try:
        bound = bind_arguments(node, params, args, name)
    except CallError as error:
        return state.fail(scope, node, UnsupportedCallError, error.message, error.hint)
    inputs, arguments, attrs = [], [], {"function": function}
    for param in params:
        pname, kind = param[0], param[1]
        expr = bound.get(pname)
        if kind == VALUE:
            value = state.lower_expr(scope, expr) if expr is not None else \
                constant(state, scope, node, param[2], f"{pname} (the default of {name}())")
            inputs.append(value)
            arguments.append((pname, None))
        elif kind == SEQUENCE:
            if isinstance(expr, (ast.Tuple, ast.List)) and not any(
                    isinstance(e, ast.Starred) for e in expr.elts):
                inputs += [state.lower_expr(scope, e) for e in expr.elts]
                arguments.append((pname, len(expr.elts)))
            else:
                inputs.append(state.lower_expr(scope, expr))
                arguments.append((pname, -1))
        elif kind == OBJECT:
            numbers, shape = _display(expr)
            if shape is None:
                inputs.append(state.lower_expr(scope, expr))
                arguments.append((pname, None))
            else:
                inputs += [state.lower_expr(scope, e) for e in numbers]
                arguments.append((pname, len(numbers)))
            attrs["shape"] = shape
        elif kind == ABSENT:
            if expr is not None and not (isinstance(expr, ast.Constant) and expr.value is None):
                return state.fail(scope, node, UnsupportedCallError,
                                  f"the argument {pname}= of {name}() is not supported",
                                  f"leave {pname}= out and assign the result")
        elif kind == DTYPE:
            of = dtype_of_array(state, scope, expr)
            if of is not None:  # dtype=y.dtype: y is an input, its dtype read by inference
                inputs.append(state.lower_expr(scope, of))
                arguments.append((f"{pname}_of", None))
                attrs[pname] = None
                continue
            try:
                attrs[pname] = static_dtype(state, scope, expr, name)
            except CallError as error:
                return state.fail(scope, node, UnsupportedCallError, error.message, error.hint)
        else:
            value = param[2] if expr is None else static_argument(state, scope, expr)
            if value is NOT_CONSTANT:
                return state.fail(scope, node, UnsupportedCallError,
                                  f"the argument {pname}= of {name}() must be known at compile "
                                  f"time, got '{ast.unparse(expr)}'",
                                  "write a literal, e.g. axis=1 or axis=(0, 1), or a global "
                                  "constant")
            attrs[pname] = value
    attrs["arguments"] = tuple(arguments)
    return scope.emit("array_function", inputs, state.loc(node), attrs)


def _display(expr: ast.expr) -> tuple[list[ast.expr], tuple[int, ...] | None]:
    """The elements and shape of a (nested, rectangular) tuple or list display; shape None
    for anything else."""
    if not isinstance(expr, (ast.Tuple, ast.List)) or any(
            isinstance(e, ast.Starred) for e in expr.elts):
        return [], None
    parts = [_display(e) for e in expr.elts]
    if parts and all(shape is not None for _, shape in parts) \
            and len({shape for _, shape in parts}) == 1:
        return [e for elements, _ in parts for e in elements], (len(parts), *parts[0][1])
    if any(shape is not None for _, shape in parts):
        return [], None  # ragged, or a display beside a value: one value, inference decides
    return list(expr.elts), (len(expr.elts),)
