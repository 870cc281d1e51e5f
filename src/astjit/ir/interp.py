"""The reference interpreter: runs any graph of a Module, typed or untyped.

Leaf ops run their `evaluate` from `ops.OPS`; the structural ops (`if`,
`while`, `call`, `fused`: its kernel over the whole space, `rowwise`: its region as a
graph) are interpreted by hand below. Where a value has a type, the
interpreter converts the result to it as compiled code represents it: integers
wrap to two's complement of their width, `bool` is a bool, floats are Python
floats (f32 rounded to single precision), tuples elementwise; a tape is a
Python list (`tape_new` makes one, `tape_push` appends to it and returns it),
passed through as it is, carried by loops like any value. An array is the
caller's NumPy array itself, never converted or copied: `array_set` writes into
it, and the caller sees the writes, as with compiled code. Arrays the program
makes (`array_new`, `array_new_like`, `array_arange`) are NumPy's, made by the
ops' `evaluate`; `array_retain` and `array_release` do nothing (Python's
reference counting owns every array here). Python
exceptions raised by `evaluate` (ZeroDivisionError, ValueError, ...) propagate
unchanged: they are the behaviour compiled code must reproduce.

Each graph is translated once into a `_Program`: a list of steps over a frame
of slots, so running it does no dictionary lookups by Value.
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

from .core import Graph, Module, Node, Value
from .kernels import Kernel, fused_attrs
from .ops import OPS
from .ops.elementwise import UFUNCS, apply_numpy, broadcast_shape, evaluate_on_arrays
from .ops.reductions import py_reduce
from .ops.strong import evaluate_numpy
from .types import (
    BOOL,
    C64,
    C128,
    F32,
    F64,
    NUMERIC_RANK,
    NUMPY_NAMES,
    ArrayType,
    ScalarType,
    TupleType,
    Type,
    python_type_of,
)

Frame = list
Step = Callable[[Frame], None]


StepFactory = Callable[[Node, list[int], list[int], Callable[[], Step]], "Step | None"]
"""Another executor's step for a node (its input and output slots; the last argument
builds the interpreter's own step), or None: the interpreter's own. The CUDA backend's
host program is this interpreter with steps that launch kernels (backend/cuda/host.py)."""


def interpret(module: Module, args: list | tuple, graph_name: str | None = None, *,
              steps: StepFactory | None = None) -> Any:
    """Run `module`'s graph `graph_name` (default: the entry) on `args`; return its result.
    `steps` replaces the interpreter's step for the nodes it gives one."""
    return interpreter(module, graph_name, steps=steps)(args)


def interpreter(module: Module, graph_name: str | None = None, *,
                steps: StepFactory | None = None) -> Callable[[list | tuple], Any]:
    """`interpret` with the graphs translated once, for running many times."""
    graph = module.graphs[graph_name or module.entry]
    converts = [coercion(p.type) or _identity for p in graph.params]
    boxes = [boxing(v.type) or _identity for v in graph.outputs]
    program = _Interpreter(module, steps).program(graph)

    def run(args: list | tuple) -> Any:
        if len(args) != len(graph.params):
            raise TypeError(f"@{graph.name} takes {len(graph.params)} arguments, got {len(args)}")
        results = program.run([convert(arg) for convert, arg in zip(converts, args)])
        results = [box(r) for box, r in zip(boxes, results)]
        return results[0] if len(results) == 1 else tuple(results)
    return run


def boxing(t: Type | None) -> Callable[[Any], Any] | None:
    """How a result of type `t` reaches Python, as compiled code returns it: a NumPy scalar
    type (f32, np.float64 ...) as a NumPy scalar; None when the representation is already it."""
    if isinstance(t, ScalarType) and t.strong:
        import numpy

        return numpy.dtype(NUMPY_NAMES[t.name]).type
    if isinstance(t, TupleType):
        parts = [boxing(e) or _identity for e in t.elements]
        return lambda xs: tuple(part(x) for part, x in zip(parts, xs))
    return None


# ---- conversion to the representation of a type ------------------------------------

def _wrapping(bits: int) -> Callable[[Any], int]:
    """Two's complement wrap-around to `bits` bits, as compiled integer arithmetic does."""
    half, mask = 1 << (bits - 1), (1 << bits) - 1

    def wrap(x) -> int:
        return ((operator.index(x) + half) & mask) - half
    return wrap


def _identity(x):
    return x


def _to_f32(x) -> float:
    import numpy as np  # only f32 values need it; importing astjit stays light

    return float(np.float32(x))


def _unsigned(bits: int) -> Callable[[Any], int]:
    """Python ints wrapped to an unsigned `bits`-bit range."""
    mask = (1 << bits) - 1
    return lambda x: operator.index(x) & mask


def _to_c64(x) -> complex:
    import numpy as np

    return complex(np.complex64(x))


_SCALAR_COERCIONS: dict[Type, Callable[[Any], Any]] = {
    BOOL: bool, F32: _to_f32, F64: float, C64: _to_c64, C128: complex,
    **{t: (_unsigned if t.is_unsigned else _wrapping)(t.bits) for t in NUMERIC_RANK if t.is_int},
}


def coercion(t: Type | None) -> Callable[[Any], Any] | None:
    """The function converting a Python value to type `t`'s representation, or None."""
    if t in _SCALAR_COERCIONS:
        return _SCALAR_COERCIONS[t]
    if isinstance(t, TupleType):
        parts = [coercion(e) or _identity for e in t.elements]
        return lambda xs: tuple(part(x) for part, x in zip(parts, xs))
    return None


# ---- graphs as programs over frames of slots -----------------------------------------

class _Program:
    """One graph translated for execution: steps over a frame whose first slots are the params."""

    def __init__(self, n_params: int, n_slots: int, steps: list[Step], output_slots: list[int]):
        self.padding = [None] * (n_slots - n_params)
        self.steps = steps
        self.output_slots = output_slots

    def run(self, args: list) -> list:
        """The graph's outputs for `args`, which already have the parameters' representation."""
        frame = args + self.padding
        for step in self.steps:
            step(frame)
        return [frame[slot] for slot in self.output_slots]


class _Interpreter:
    """Translates the graphs of one Module on demand and caches their programs."""

    def __init__(self, module: Module, steps: StepFactory | None = None):
        self.module = module
        self.programs: dict[Graph, _Program] = {}
        self.steps = steps

    def program(self, graph: Graph) -> _Program:
        if graph not in self.programs:
            self.programs[graph] = self.translate(graph)
        return self.programs[graph]

    def translate(self, graph: Graph) -> _Program:
        """Give each value of `graph` a frame slot (parameters first) and each node a step."""
        slots = {param: i for i, param in enumerate(graph.params)}

        def slot_of(value: Value) -> int:
            if value not in slots:
                raise ValueError(f"{value!r} is used in @{graph.name} but not defined before; "
                                 "the IR is ill-formed (see verify_module)")
            return slots[value]

        steps = []
        for node in graph.nodes:
            inputs = [slot_of(v) for v in node.inputs]
            outputs = [slots.setdefault(v, len(slots)) for v in node.outputs]
            steps.append(self.step_for(node, inputs, outputs))
        output_slots = [slot_of(v) for v in graph.outputs]
        return _Program(len(graph.params), len(slots), steps, output_slots)

    def step_for(self, node: Node, inputs: list[int], outputs: list[int]) -> Step:
        if self.steps is not None:
            replaced = self.steps(node, inputs, outputs, lambda: self.own_step(node, inputs, outputs))
            if replaced is not None:
                return replaced
        return self.own_step(node, inputs, outputs)

    def own_step(self, node: Node, inputs: list[int], outputs: list[int]) -> Step:
        if node.op == "if":
            return self.if_step(node, inputs, outputs)
        if node.op == "while":
            return self.while_step(node, inputs, outputs)
        if node.op == "call":
            return self.call_step(node, inputs, outputs)
        if node.op == "fused":
            return fused_step(node, fused_attrs(node), inputs, outputs)
        if node.op == "rowwise":  # its region, as a graph
            return self.call_region_step(node, inputs, outputs)
        if node.op in UFUNCS:
            return elementwise_step(node, inputs, outputs)
        return leaf_step(node, inputs, outputs)

    # ---- the structural ops --------------------------------------------------------

    def if_step(self, node: Node, inputs: list[int], outputs: list[int]) -> Step:
        then_region, else_region = (self.program(r) for r in node.regions)
        cond, captured = inputs[0], inputs[1:]

        def run_if(frame: Frame) -> None:
            region = then_region if frame[cond] else else_region
            results = region.run([frame[i] for i in captured])
            for slot, value in zip(outputs, results):
                frame[slot] = value
        return run_if

    def while_step(self, node: Node, inputs: list[int], outputs: list[int]) -> Step:
        cond_region, body_region = (self.program(r) for r in node.regions)
        n_invariants = node.attrs["n_invariants"]

        def run_while(frame: Frame) -> None:
            values = [frame[i] for i in inputs]  # invariants, then the carried values
            while cond_region.run(values)[0]:
                values[n_invariants:] = body_region.run(values)
            for slot, value in zip(outputs, values[n_invariants:]):
                frame[slot] = value
        return run_while

    def call_region_step(self, node: Node, inputs: list[int], outputs: list[int]) -> Step:
        region = self.program(node.regions[0])

        def run_region(frame: Frame) -> None:
            for slot, value in zip(outputs, region.run([frame[i] for i in inputs])):
                frame[slot] = value
        return run_region

    def call_step(self, node: Node, inputs: list[int], outputs: list[int]) -> Step:
        callee = self.module.graphs[node.attrs["callee"]]
        (output,) = outputs

        def run_call(frame: Frame) -> None:
            # Looked up at run time: the callee may be this very graph, still being translated.
            frame[output] = self.program(callee).run([frame[i] for i in inputs])[0]
        return run_call


def leaf_step(node: Node, inputs: list[int], outputs: list[int]) -> Step:
    """A step running a primitive's `evaluate` with the node's attrs, converting its result."""
    evaluate = OPS[node.op].evaluate
    if node.op == "array_new" and (node.attrs.get("packed_shape") or node.attrs.get("dtype") is None):
        evaluate = _untyped_array_new(node.attrs)
    elif node.attrs.get("numpy"):  # NumPy's semantics on NumPy scalars (ops/strong.py)
        typed = all(v.type is not None for v in node.inputs)
        evaluate = evaluate_numpy(node.op, [v.type for v in node.inputs] if typed else None,
                                  node.outputs[0].type)
    elif attrs := {k: v for k, v in node.attrs.items() if k != "scalar_function"}:
        evaluate = functools.partial(evaluate, **attrs)  # scalar_function only restricts typing
    convert = coercion(node.outputs[0].type) or _identity
    (output,) = outputs
    if not inputs:
        def run_nullary(frame: Frame) -> None:
            result = evaluate()  # `undef` gives None whatever its type
            frame[output] = None if result is None else convert(result)
        return run_nullary
    if len(inputs) == 1:
        (a,) = inputs

        def run_unary(frame: Frame) -> None:
            frame[output] = convert(evaluate(frame[a]))
        return run_unary
    if len(inputs) == 2:
        a, b = inputs

        def run_binary(frame: Frame) -> None:
            frame[output] = convert(evaluate(frame[a], frame[b]))
        return run_binary

    def run_any(frame: Frame) -> None:
        frame[output] = convert(evaluate(*[frame[i] for i in inputs]))
    return run_any


def elementwise_step(node: Node, inputs: list[int], outputs: list[int]) -> Step:
    """An elementwise op: the scalar `evaluate`, or NumPy's function when an operand is an
    array (a new array, NumPy's semantics; see ops/elementwise.py)."""
    scalar = leaf_step(node, inputs, outputs)
    types = [v.type for v in node.inputs]
    typed = None not in types
    if typed and not any(isinstance(t, ArrayType) for t in types):
        return scalar
    result = node.outputs[0].type
    (output,) = outputs
    numpy = None

    def run(frame: Frame) -> None:
        nonlocal numpy
        if numpy is None:
            import numpy
        args = [frame[i] for i in inputs]
        if not any(isinstance(a, numpy.ndarray) for a in args):
            return scalar(frame)
        frame[output] = evaluate_on_arrays(node.op, args, types if typed else None, result)
    return run


def fused_step(node: Node, spec: Kernel, inputs: list[int], outputs: list[int]) -> Step:
    """A `fused` node (core.py): its kernel run once over the whole broadcast space with
    NumPy (each scalar op applied to arrays), each output a new array of the space's shape."""
    kernel, reduction = node.regions[0], spec.reduce
    ops = list(kernel.nodes)

    def run(frame: Frame) -> None:
        import numpy

        args = [frame[i] for i in inputs]
        shape = broadcast_shape([a.shape for a in args if isinstance(a, numpy.ndarray)])
        env = dict(zip(kernel.params, args))
        for inner in ops:
            operands = [env[v] for v in inner.inputs]
            t = inner.outputs[0].type
            dtype = NUMPY_NAMES[t.name]
            if inner.op == "const":
                value = numpy.dtype(dtype).type(inner.attrs["value"])
            elif inner.op == "cast":
                value = numpy.asarray(operands[0]).astype(dtype)
            elif inner.op in ("select", "where"):
                value = numpy.where(*operands).astype(dtype)
            else:
                value = apply_numpy(inner.op, operands, [v.type for v in inner.inputs], t)
            env[inner.outputs[0]] = value
        if reduction is not None:  # the last output: the reduction of the kernel's last
            value = kernel.outputs[-1]
            space = numpy.empty(shape, dtype=NUMPY_NAMES[value.type.name])
            space[...] = env[value]
            result = py_reduce(space, kind=reduction.kind, axis=reduction.axes,
                               keepdims=reduction.keepdims)
            frame[outputs[-1]] = coercion(node.outputs[-1].type)(result) \
                if not isinstance(result, numpy.ndarray) else result
        stored = len(node.outputs) - (reduction is not None)
        for slot, value, out in zip(outputs[:stored], kernel.outputs, node.outputs):
            result = numpy.empty(shape, dtype=NUMPY_NAMES[out.type.dtype.name])
            result[...] = env[value]
            frame[slot] = result
    return run


def _untyped_array_new(attrs: dict) -> Callable[..., Any]:
    """`array_new` as the frontend makes it, before type inference settles it (infer.py):
    the shape may be one packed value (an int or a tuple), and `np.full`'s dtype is
    that of its fill value."""
    attrs = dict(attrs)
    packed = attrs.pop("packed_shape", False)
    evaluate = OPS["array_new"].evaluate

    def run(*inputs):
        if packed:
            shape = inputs[0]
            inputs = (*(shape if isinstance(shape, tuple) else (shape,)), *inputs[1:])
        dtype = attrs.get("dtype") or python_type_of(inputs[-1])
        return evaluate(*inputs, **{**attrs, "dtype": dtype})
    return run
