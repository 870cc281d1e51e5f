"""The table entry of calls on objects: `self.forward(x)`, `self(x)`, `self.hidden(x)`.

Which function runs depends on the receiver's class, which only its type knows (an object
argument is a `TupleType` whose `TreeNode` names its class: ir/types.py, astjit/tree.py),
so the frontend emits a `method_call` and type inference resolves it (`expand`): the
class's function of that name, lowered then (`Inference.lower_callee`), called with the
receiver as its first argument (`self`) and the defaults of the parameters not given; a
field holding an object is called through that object's `__call__`. A number's
`conjugate()` is `conj` (of a Python float or int itself, as Python's). No later stage
sees the op.
"""
from __future__ import annotations

import inspect
import types

from ...errors import TypingError
from ..core import Node, Value
from ..types import BOOL, ArrayType, is_numeric
from . import selections
from .declare import _def
from .shape_functions import _Emitter
from .table import OpTypeError, Refused

_RESOLVED = "type inference resolves it into a call"


def method_rule(types_, attrs):
    """Reached only where `_resolve` found nothing to call: the error."""
    receiver = types_[0]
    if isinstance(receiver, ArrayType) and attrs["name"] in ARRAY_REFUSALS:
        raise OpTypeError(ARRAY_REFUSALS[attrs["name"]])
    node = getattr(receiver, "node", None)
    what = f"a {node.cls.__name__}" if node is not None and node.cls is not None else str(receiver)
    raise OpTypeError(f"'{attrs['name']}' of {what} is not a method compiled code can call: "
                      "methods defined with def in the class of an argument can be called")


ARRAY_METHODS = {
    ("conj", 0): ("conj", {"numpy": True}), ("conjugate", 0): ("conj", {"numpy": True}),
    ("round", 0): ("numpy_round", {"numpy": True}),
    ("transpose", 0): ("array_transpose", {}),
    ("dot", 1): ("linalg_function", {"function": "dot"}),
    ("trace", 0): ("linalg_function", {"function": "trace", "offset": 0, "axis1": 0,
                                       "axis2": 1, "dtype": None}),
    ("searchsorted", 1): ("sorting_function", {"function": "searchsorted", "side": "left"}),
    ("take", 1): ("array_function", {"function": "take", "arguments": (("a", None), (
        "indices", None)), "axis": None, "mode": "raise"}),
    ("compress", 1): ("array_function", {"function": "compress", "arguments": (("a", None), (
        "condition", None)), "axis": None}),
    **{("diagonal", n): ("array_function", {"function": "diagonal", "arguments": (
        ("a", None), ("offset", None))[:n + 1], "axis1": 0, "axis2": 1}) for n in (0, 1)},
}
"""(name, number of arguments) -> (op, attrs): an array's methods that are the NumPy
function of the array (`x.dot(y)` is `np.dot(x, y)`, `x.T` and `x.transpose()` one op),
with NumPy's defaults; `conj` and `round` of NumPy scalars too. (And `x.clip(min, max)`,
np.clip's op of the array and its bounds, a NumPy scalar's too: `_array_method`.) The frontend cannot tell
an array from an object, so such a call is a `method_call`, resolved here by its type."""


ARRAY_REFUSALS = {
    "tolist": "x.tolist() is not supported in compiled code: a list's length is part of its "
              "type here, and an array's is known only at run time; return the array and call "
              ".tolist() on the result, or write a list display [x[0], x[1]]",
}
"""An array's methods compiled code refuses, and what to write instead."""


def _array_method(inference, node: Node, receiver: Value, args: list[Value], out):
    """`receiver.name(args)` of an array (or a NumPy scalar's conj/round): its NumPy
    function (`ARRAY_METHODS`); None where it is not one; a TypingError saying what to
    write where the method takes arguments compiled code does not pass to it."""
    name = node.attrs["name"]
    array = isinstance(receiver.type, ArrayType)
    if not array and not (is_numeric(receiver.type) and receiver.type.strong
                          and name in ("conj", "conjugate", "round", "clip", "item")):
        return None
    if name in ("item", "fill"):
        em = _Emitter(inference, node, out)
        if name == "item":
            return [_named(selections.item(em, receiver, args), node)]
        if array and len(args) == 1:  # x.fill(v): x[...] = v, NumPy's casts and checks
            em.op("array_assign", receiver, args[0])
            return [_named(em.const(None), node)]
        return None
    if name == "clip" and len(args) in (1, 2):  # x.clip(min[, max]): np.clip, max None
        if len(args) == 1:
            absent = Node("const", [], [Value("max")], attrs={"value": None}, loc=node.loc)
            args += inference.infer_leaf(absent, [], out)
        clip = Node("numpy_clip", [], node.outputs, attrs={"numpy": True}, loc=node.loc)
        return inference.infer_leaf(clip, [receiver, *args], out)
    found = ARRAY_METHODS.get((name, len(args)))
    if found is None:
        if any(known == name for known, _ in ARRAY_METHODS):
            raise TypingError(f"the arguments of the method {name}() are not supported in "
                              f"compiled code: call np.{name}(x, ...) instead", node.loc)
        return None
    op, attrs = found
    return inference.infer_leaf(Node(op, [], node.outputs, attrs=dict(attrs), loc=node.loc),
                                [receiver, *args], out)


def _named(value: Value, node: Node) -> Value:
    value.name = value.name or node.outputs[0].name
    return value


def _resolve(inference, node: Node, inputs: list[Value], out):
    receiver, args = inputs[0], list(inputs[1:])
    name, spec = node.attrs["name"], getattr(inputs[0].type, "node", None)
    if name == "conjugate" and not args and is_numeric(receiver.type) and receiver.type != BOOL \
            and not receiver.type.strong:
        return inference.infer_leaf(Node("conj", [], node.outputs, loc=node.loc), [receiver], out)
    resolved = _array_method(inference, node, receiver, args, out)
    if resolved is not None:
        return resolved
    cls = spec.cls if spec is not None and spec.kind not in ("tuple", "list", "dict") else None
    if cls is None:
        return None
    found = inspect.getattr_static(cls, name, None)
    if found is None and name in spec.keys:  # a field holding an object: its __call__
        read = Node("getitem", [], [Value(name)], attrs={"index": spec.keys.index(name)},
                    loc=node.loc)
        (field,) = inference.infer_leaf(read, [receiver], out)
        call = Node("method_call", [], node.outputs, attrs={"name": "__call__"}, loc=node.loc)
        return inference.infer_leaf(call, [field, *args], out)
    if isinstance(found, staticmethod):
        fn, bound = found.__func__, []
    else:
        fn, bound = getattr(found, "py_func", found), [receiver]
    if not isinstance(fn, types.FunctionType):
        return None
    given = bound + args
    params = list(inspect.signature(fn).parameters.values())
    if len(given) > len(params):
        raise TypingError(f"{fn.__qualname__}() takes {len(params)} positional arguments but "
                          f"{len(given)} were given", node.loc)
    for p in params[len(given):]:
        if p.default is inspect.Parameter.empty:
            raise TypingError(f"{fn.__qualname__}() missing required argument: '{p.name}'",
                              node.loc)
        default = Node("const", [], [Value(p.name)], attrs={"value": p.default}, loc=node.loc)
        given += inference.infer_leaf(default, [], out)
    call = Node("call", [], node.outputs, attrs={"callee": inference.lower_callee(fn, node.loc)},
                loc=node.loc)
    return inference.infer_call(call, given, out)


_def("method_call", -1, method_rule, None, {"*": Refused(_RESOLVED)}, (), cuda=Refused(_RESOLVED),
     expand=_resolve, no_vjp=_RESOLVED,
     doc="receiver.name(args) (name '__call__': receiver(args)); inputs [receiver, *args]")
