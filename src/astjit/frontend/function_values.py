"""Function values known at compile time: a local `def` or `lambda`, a `functools.partial`.

A function value never becomes an IR value: it is an entry of the lowering scope (what
a name holds), resolved where it is called, so every call through it is a direct `call`
of a graph (closures.py). Returning one or storing it anywhere else is refused.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.core import Value
from .source import FunctionSource


class LocalFunction:
    """A `def` or `lambda` inside a compiled function: a graph of its own whose parameters
    are its own followed by the enclosing function's locals it reads (`captured`), which
    each call passes as they are at the call (Python's closures read them then too)."""

    def __init__(self, source: FunctionSource, captured: tuple[str, ...], qualname: str):
        self.source = source
        """The enclosing function's source, whose `tree` is this definition."""
        self.captured = captured
        self.__qualname__ = qualname
        self.__name__ = source.tree.name

    def __repr__(self) -> str:
        return self.__qualname__


@dataclass(frozen=True, eq=False)
class BoundFunction:
    """`functools.partial(func, *args, **keywords)` built in compiled code: the bound
    arguments are Values of the function that built it."""

    func: object
    args: tuple[Value, ...]
    keywords: tuple[tuple[str, Value], ...]

    @property
    def __name__(self) -> str:
        return f"partial({getattr(self.func, '__name__', self.func)})"

    def __repr__(self) -> str:
        return self.__name__


FunctionValue = LocalFunction | BoundFunction
FUNCTION_VALUES = (LocalFunction, BoundFunction)
"""The compile-time function values a scope entry may hold."""
