"""The CompileError family, and source locations with their line-and-caret rendering.

Every error astjit raises about user code carries a `Loc` (file, line, column,
the source line itself) so the message can show the line with a caret under the
offending construct. A function with several problems raises one CompileError
that lists all of them (`CompileError.problems`).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    """Where a node came from in the user's source."""

    filename: str
    line: int
    col: int = 0
    text: str = ""
    """The full source line (without its newline), for the caret display."""

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}"

    def render(self) -> str:
        """`file:line` then the source line and a caret under column `col`."""
        out = f'  File "{self.filename}", line {self.line}'
        if self.text:
            stripped = self.text.lstrip()
            indent = len(self.text) - len(stripped)
            out += f"\n    {stripped}\n    {' ' * max(self.col - indent, 0)}^"
        return out


@dataclass(frozen=True)
class Problem:
    """One diagnosed problem: what is wrong, where, and what to write instead."""

    message: str
    loc: Loc | None = None
    hint: str = ""

    def render(self) -> str:
        out = self.message
        if self.loc is not None:
            out += "\n" + self.loc.render()
        if self.hint:
            out += f"\n    hint: {self.hint}"
        return out


class CompileError(Exception):
    """astjit cannot compile this function; the message shows every problem found."""

    def __init__(self, message: str, loc: Loc | None = None, hint: str = "",
                 problems: list[Problem] | None = None):
        self.problems = problems if problems is not None else [Problem(message, loc, hint)]
        self.loc = self.problems[0].loc if self.problems else loc
        super().__init__(self._render())

    def _render(self) -> str:
        if len(self.problems) == 1:
            return self.problems[0].render()
        parts = [f"{len(self.problems)} problems:"]
        parts += [f"[{i}] {p.render()}" for i, p in enumerate(self.problems, 1)]
        return "\n".join(parts)


class UnsupportedSyntaxError(CompileError):
    """A Python construct outside astjit's subset (try, with, yield, class, ...)."""


class UnsupportedCallError(CompileError):
    """A call to something astjit cannot compile (open, print, a method, ...)."""


class NameResolutionError(CompileError):
    """A name that is neither a local, a parameter, a module constant nor a known function."""


class TypingError(CompileError):
    """Types do not agree: a conflict between paths, an operator on wrong types, a bad argument."""


class DifferentiationError(TypingError, TypeError):
    """A gradient that cannot be taken: w.r.t. an int argument, of a non-float result, ..."""


class SourceUnavailableError(CompileError):
    """The function's source cannot be read (a lambda in a REPL, a builtin, a C function)."""
