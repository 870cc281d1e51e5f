"""Building typed IR from transforms: the `GraphBuilder` that derivative rules call.

A rule writes `e.op("mul", g, x)` and gets the typed result Value; the
result type comes from the op's own type rule in `ops/`, and the operands
must already have the types that rule asks for (derivative code works on
values of one float type, so it never needs casts). An op on a NumPy scalar (a complex
is always one), or in the derivative of a NumPy function (`derivative_of`), computes as
NumPy's (attr `numpy`): the derivative of np.sin(x) at an infinite x is NaN, as NumPy's
np.cos gives, not math.cos's ValueError, for a Python float x too.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ...errors import Loc
from ..core import Graph, Node, Value
from ..ops import OPS
from ..ops.strong import numpy_semantics
from ..types import ScalarType, Type


class GraphBuilder:
    """Appends typed nodes to `graph`, each with the location `loc`."""

    def __init__(self, graph: Graph, loc: Loc | None = None):
        self.graph = graph
        self.loc = loc
        self.numpy = False
        """Whether the ops made now are a NumPy function's derivative (`derivative_of`)."""

    @contextlib.contextmanager
    def derivative_of(self, node: Node) -> Iterator[None]:
        """Meanwhile the ops made are `node`'s derivative: NumPy's where `node` is (attr
        `numpy`: np.cos of a Python float gives NaN at inf, so its derivative -sin does,
        where math.sin would raise)."""
        outer, self.numpy = self.numpy, bool(node.attrs.get("numpy"))
        try:
            yield
        finally:
            self.numpy = outer

    def op(self, name: str, *inputs: Value, **attrs) -> Value:
        types = [v.type for v in inputs]
        if (self.numpy or any(isinstance(t, ScalarType) and (t.is_complex or t.strong)
                              for t in types)) and \
                numpy_semantics(name, types, {"numpy": True}):
            attrs["numpy"] = True  # a NumPy scalar's op: NumPy's (ops/strong.py), never raising
        operand_types, result = OPS[name].rule(types, attrs)
        if list(operand_types) != [v.type for v in inputs]:
            raise TypeError(f"{name} of {[str(v.type) for v in inputs]} needs {operand_types}")
        return self.graph.add(name, list(inputs), attrs=attrs, loc=self.loc, types=[result]).outputs[0]

    def const(self, value, t: Type) -> Value:
        return self.op("const", value=value, type=t)
