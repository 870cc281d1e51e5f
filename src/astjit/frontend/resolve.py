"""What an expression denotes at compile time: a callee, a module, a constant, a dtype.

Names that are not locals resolve as Python resolves them when the function runs
(source.py), once, at compile time: `static_object` gives the object a name,
`math.<name>`, `np.<name>` or a transform call (`grad(f, argnums=1)`) denotes;
`compile_time_value` the constant an argument such as `axis=` must be;
`static_dtype` the IR type of a `dtype=` argument. `constant` makes the `const`
of a compile-time value, checking that an int fits in int64 (literals.py).
"""
from __future__ import annotations

import ast
import cmath
import math
import types

from ..errors import TypingError
from ..ir.core import Value
from ..ir.types import NUMPY_DTYPES, ScalarType
from .builtins import CallError, cmath_attribute, math_attribute
from .function_values import FUNCTION_VALUES
from .literals import int64_problem
from .scope import Scope
from .source import NOT_CONSTANT, NOT_FOUND, constant_value, resolve_free_name
from .state import Lowering

LOCAL = object()
"""`static_object`'s answer for a name that is a local variable, not a compile-time object."""
DTYPE_HINT = ("write the dtype as np.float64, np.float32, np.int64 or np.bool_ "
              "(or float, int, bool)")


def is_numpy_module(obj: object) -> bool:
    """NumPy or one of its submodules (`np.linalg`): their attributes resolve at compile time."""
    return isinstance(obj, types.ModuleType) and obj.__name__.partition(".")[0] == "numpy"


def is_numpy_callable(obj: object) -> bool:
    """A function, ufunc or class of NumPy (`np.sum`, `np.sin`, `np.linalg.inv`, `np.float64`)."""
    module = getattr(obj, "__module__", None)
    return callable(obj) and isinstance(module, str) and module.partition(".")[0] == "numpy"


def constant(state: Lowering, scope: Scope, node: ast.expr, value: object, what: str) -> Value:
    """A `const` of `value`, which `node` denotes; a TypingError for an int beyond int64."""
    problem = int64_problem(value, what)
    if problem is not None:
        return state.fail(scope, node, TypingError, *problem)
    return scope.const(value, state.loc(node))


def static_object(state: Lowering, scope: Scope, node: ast.expr) -> object:
    """The compile-time object a name, `math.<name>` or `np.<name>` (`np.linalg.inv`)
    denotes; LOCAL or NOT_FOUND otherwise."""
    if isinstance(node, ast.Name):
        if node.id in state.static:
            return state.static[node.id]
        if isinstance(entry := scope.lookup(node.id), FUNCTION_VALUES):
            return entry  # a local def or lambda (closures.py)
        if node.id in state.local_names or scope.lookup(node.id) is not None:
            return LOCAL
        return resolve_free_name(state.source.fn, node.id)
    if isinstance(node, ast.Attribute):
        base = static_object(state, scope, node.value)
        if base is math or base is cmath:
            value = (math_attribute if base is math else cmath_attribute)(node.attr)
            return NOT_FOUND if value is None else value
        if is_numpy_module(base):
            return getattr(base, node.attr, NOT_FOUND)
        if type(base).__name__ == "ufunc" and node.attr == "at":
            return base.at  # np.add.at
        if isinstance(base, types.ModuleType) and isinstance(getattr(base, node.attr, None),
                                                             types.ModuleType):
            return getattr(base, node.attr)  # astjit.tree
        if isinstance(base, types.ModuleType) and callable(getattr(base, node.attr, None)):
            return getattr(base, node.attr)  # a function of another module: nn.relu
        if isinstance(base, type) and callable(getattr(base, node.attr, None)):
            return getattr(base, node.attr)  # a class's function: Net.plain(x), Model.loss
    if isinstance(node, ast.Call):
        return static_transform(state, scope, node)
    return NOT_FOUND


def compile_time_value(state: Lowering, scope: Scope, node: ast.expr) -> object:
    """The constant `node` denotes at compile time (`1`, `-1`, `(0, 1)`, a global
    constant, a static parameter), or NOT_CONSTANT."""
    if isinstance(node, ast.Constant):
        return constant_value(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = compile_time_value(state, scope, node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
        return NOT_CONSTANT
    if isinstance(node, (ast.Tuple, ast.List)):
        values = tuple(compile_time_value(state, scope, e) for e in node.elts)
        return NOT_CONSTANT if NOT_CONSTANT in values else values
    if isinstance(node, (ast.Name, ast.Attribute)):
        obj = static_object(state, scope, node)
        return NOT_CONSTANT if obj is LOCAL or obj is NOT_FOUND else constant_value(obj)
    return NOT_CONSTANT


def static_transform(state: Lowering, scope: Scope, node: ast.Call) -> object:
    """`grad(f, argnums=1)` and the like, evaluated at compile time into a function object.

    The callee must be marked `__astjit_transform__` and every argument must be
    a function or a constant known at compile time.
    """
    transform = static_object(state, scope, node.func)
    if not getattr(transform, "__astjit_transform__", False):
        return NOT_FOUND
    args = [_static_argument(state, scope, a) for a in node.args]
    kwargs = {k.arg: _static_argument(state, scope, k.value) for k in node.keywords}
    if NOT_FOUND in args or NOT_FOUND in kwargs.values() or None in kwargs:
        return NOT_FOUND
    return transform(*args, **kwargs)


def _static_argument(state: Lowering, scope: Scope, node: ast.expr) -> object:
    """A transform's argument: a function known at compile time or a literal."""
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        found = static_object(state, scope, node)
        return NOT_FOUND if found in (LOCAL, NOT_CONSTANT) else found


def is_numpy_attribute(state: Lowering, scope: Scope, node: ast.expr) -> bool:
    """Whether `node` is `<numpy module>.<name>` (`np.random.rand`: a method, no __module__)."""
    return isinstance(node, ast.Attribute) \
        and is_numpy_module(static_object(state, scope, node.value))


# ---- dtypes --------------------------------------------------------------------------------

def numpy_dtype(obj: object) -> ScalarType | None:
    """The IR scalar type of a dtype-like compile-time object; None if unsupported."""
    import numpy

    try:
        name = numpy.dtype(obj).name
    except (TypeError, ValueError):
        return None
    found = NUMPY_DTYPES.get(name)
    return ScalarType(found) if found else None


def static_dtype(state: Lowering, scope: Scope, node: ast.expr | None,
                 name: str) -> ScalarType | None:
    """The `dtype=` argument's IR type, read at compile time; None when absent or None.
    A CallError when it is not known at compile time or not supported."""
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        obj = node.value
    else:
        obj = static_object(state, scope, node)
    if obj is LOCAL or obj is NOT_FOUND:
        raise CallError(f"the dtype of {name}() must be known at compile time, "
                        f"got '{ast.unparse(node)}'", DTYPE_HINT)
    dtype = numpy_dtype(obj)
    if dtype is None:
        raise CallError(f"dtype {ast.unparse(node)} of {name}() is not supported: compiled "
                        "code has arrays of the NumPy dtypes bool, int8 ... int64, uint8 ... uint64, "
                        "float32, float64, complex64 and complex128", DTYPE_HINT)
    return dtype


def dtype_of_array(state: Lowering, scope: Scope, node: ast.expr | None) -> ast.expr | None:
    """For `dtype=x.dtype` with `x` a local or an expression of locals (`x[1:].dtype`;
    type inference says whether it has a dtype), the expression `x`; else None."""
    if isinstance(node, ast.Attribute) and node.attr == "dtype":
        owner = static_object(state, scope, node.value)
        if owner is LOCAL or (owner is NOT_FOUND and not isinstance(node.value, ast.Name)):
            return node.value
    return None
