"""The frontend's tables: which function lowers each construct (state.py's `Rules`).

Each construct module lists its expression and statement rules; the callees
and array methods, whose order and names span modules, are listed here. So
adding a construct touches its module and, for a callable or a new module, one
line here. Every table is built at import from plain literals: no module
registers anything as a side effect of being imported.
"""
from __future__ import annotations

from . import (
    calls,
    closures,
    comprehensions,
    containers,
    creation,
    expressions,
    linalg,
    loops,
    python_calls,
    raises,
    reductions,
    shape_calls,
    sorting,
    statements,
    views,
)
from .builtins import primitive_handler
from .state import Callee, Rules
from .ufuncs import ufunc_handler


def _merge(*tables: dict) -> dict:
    """One table of several; a construct lowered by two modules is a bug."""
    merged: dict = {}
    for table in tables:
        both = merged.keys() & table.keys()
        if both:
            raise AssertionError(f"two rules for {sorted(map(str, both))}")
        merged.update(table)
    return merged


CALLEES = (  # tried in this order on the callee of a call
    Callee(closures.function_value, closures.lower_value_call),  # a lambda, a local def
    Callee(closures.partial_constructor, closures.lower_partial),  # functools.partial(f, ...)
    Callee(primitive_handler, calls.lower_builtin_call),  # astjit.stop_gradient: an op
    Callee(calls.jvp_transform, calls.lower_jvp),
    Callee(python_calls.callback_function, python_calls.lower_callback),  # astjit.callback
    Callee(python_calls.print_function, python_calls.lower_print),
    Callee(containers.container_class, containers.lower_constructor),  # Params(w, b)
    Callee(comprehensions.sequence_constructor, comprehensions.lower_sequence_call),  # tuple()
    Callee(containers.tree_function, containers.lower_tree_call),  # astjit.tree.leaves ...
    Callee(views.numpy_view_function, views.lower_numpy_view),  # np.transpose, np.reshape
    Callee(views.numpy_index_function, views.lower_add_at),  # np.add.at
    Callee(reductions.numpy_reduction, reductions.lower_numpy_reduction),  # np.sum, np.max ...
    Callee(creation.numpy_handler, creation.lower_numpy_creation),  # np.zeros, np.arange ...
    Callee(shape_calls.numpy_shape_function,  # np.concatenate, np.split, np.linspace ...
           shape_calls.lower_numpy_shape_function),
    Callee(linalg.numpy_linalg, linalg.lower_numpy_linalg),  # np.dot, np.matmul, np.eye ...
    Callee(sorting.numpy_sorting_function,  # np.sort, np.unique, np.median, np.where(c) ...
           sorting.lower_numpy_sorting_function),
    Callee(ufunc_handler, calls.lower_builtin_call),  # np.exp, np.maximum, np.where ...
)
METHODS = {
    "reshape": views.lower_reshape_method,
    **{name: comprehensions.lower_dict_view for name in ("items", "keys", "values")},  # d.items()
    **{name: reductions.lower_reduction_method for name in reductions.METHODS},  # x.sum() ...
    **{name: shape_calls.lower_shape_method for name in shape_calls.METHOD_SIGNATURES},
    **{name: sorting.lower_sorting_method for name in sorting.METHODS},  # x.sort() ...
    "clip": calls.lower_clip_method,  # x.clip(max=hi); x.clip(lo, hi) as other methods
}

RULES = Rules(
    expressions=_merge(expressions.EXPRESSIONS, views.EXPRESSIONS, calls.EXPRESSIONS,
                       containers.EXPRESSIONS, closures.EXPRESSIONS, comprehensions.EXPRESSIONS),
    statements=_merge(statements.STATEMENTS, loops.STATEMENTS, closures.STATEMENTS,
                      raises.STATEMENTS),
    callees=CALLEES,
    methods=METHODS,
)
