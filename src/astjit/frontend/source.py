"""Reading a Python function for compilation: its source, AST, locations and free names.

`FunctionSource.read(fn)` gets the source as `inspect.getsourcelines` does
(`definition_lines`), dedents and parses it, and keeps what lowering needs to point back into the user's file:
absolute line numbers, columns in the original (indented) line, and the line's
text (`loc`).

Free names (those not local to the function) resolve as Python resolves them
when the function runs: closure cells, then the function's module globals, then
builtins. astjit reads them once, at compile time: a global number is frozen into
the compiled code (`constant_value`), and rebinding it later does not recompile.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import re
import sys
import textwrap
import types
from dataclasses import dataclass

from ..errors import Loc, SourceUnavailableError, UnsupportedSyntaxError
from ..ir.types import python_type_of

NOT_FOUND = object()
"""`resolve_free_name`'s answer for a name bound nowhere."""

NOT_CONSTANT = object()
"""`constant_value`'s answer for an object that is no IR constant."""


@dataclass
class FunctionSource:
    """A function's parsed definition and the map from AST positions to source locations."""

    fn: types.FunctionType
    tree: ast.FunctionDef
    filename: str
    lines: list[str]
    """The source lines of the definition, as in the file (indented, with newlines)."""
    first_line: int
    """The file's line number of `lines[0]`."""
    indent: int
    """How many leading columns dedenting removed before parsing."""
    local_name: str = ""
    """For a local def or lambda (`tree`, inside `fn`'s source), its qualified name."""

    @property
    def qualname(self) -> str:
        return self.local_name or self.fn.__qualname__

    @classmethod
    def read(cls, fn: types.FunctionType) -> FunctionSource:
        """Parse `fn`'s definition; raise a CompileError when there is no `def` to read."""
        filename = fn.__code__.co_filename
        where = Loc(filename, fn.__code__.co_firstlineno)
        if fn.__code__.co_name == "<lambda>":
            raise UnsupportedSyntaxError(
                "a lambda cannot be compiled", where,
                hint="define the function with def at module level")
        try:
            # the code object, not the function: a wrapper's source, not the `__wrapped__` one's
            lines, first_line = definition_lines(fn.__code__, fn.__globals__)
        except (OSError, TypeError) as error:
            raise SourceUnavailableError(
                f"cannot read the source of {fn.__qualname__}() ({error})", where,
                hint="astjit compiles functions defined with def in a .py file") from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        indent = len(lines[0]) - len(dedented.splitlines(True)[0]) if lines else 0
        tree = _parse_definition(dedented, fn)
        if tree is None:
            raise SourceUnavailableError(
                f"cannot find the definition of {fn.__qualname__}() in its source", where,
                hint="astjit compiles functions defined with def in a .py file")
        return cls(fn, tree, filename, lines, first_line, indent)

    def loc(self, node: ast.AST) -> Loc:
        """The source location of an AST node of this function."""
        row = getattr(node, "lineno", self.tree.lineno) - 1
        text = self.lines[row].rstrip("\r\n") if 0 <= row < len(self.lines) else ""
        col_bytes = getattr(node, "col_offset", 0) + self.indent
        col = len(text.encode()[:col_bytes].decode("utf-8", "ignore"))
        return Loc(self.filename, self.first_line + row, col, text)


_DEFINITION_START = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")
"""A line a definition may start on: `inspect.findsource`'s pattern for code objects."""


def definition_lines(code: types.CodeType, module_globals: dict) -> tuple[list[str], int]:
    """The lines of `code`'s definition and the file's line number of the first, as
    `inspect.getsourcelines(code)` gives them: from the `def` (or first decorator) at or
    above `co_firstlineno`, the block `inspect.getblock` finds; OSError without source.

    Read through linecache with the function's module globals (whose loader reads a module
    in a zip file), not through `inspect.findsource`: that asks `inspect.getmodule`, which
    computes the real path of the file of every module imported since it last ran, a cost
    every first compile of a process paid in proportion to what it had imported."""
    filename = code.co_filename
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, module_globals)
    if not lines:
        raise OSError("could not get source code")
    number = code.co_firstlineno - 1
    if not 0 <= number < len(lines):
        raise OSError("lineno is out of bounds")
    while number > 0 and not _DEFINITION_START.match(lines[number]):
        number -= 1
    block = _block_by_positions(lines, number, code)
    return (inspect.getblock(lines[number:]) if block is None else block), number + 1


def _block_by_positions(lines: list[str], number: int, code: types.CodeType) -> list[str] | None:
    """`inspect.getblock(lines[number:])` read off the code object: the definition ends on
    the last line its instructions (its nested functions' too) come from, where the next
    line of code is indented no deeper than `lines[number]` (the block's DEDENT) and no
    comment between them is (getblock keeps one indented as the body). None where that
    does not hold (a one-line definition, a last statement the compiler dropped, tabs):
    getblock's tokenizing, several times the cost, decides."""
    if not code.co_flags & inspect.CO_OPTIMIZED:  # a class body's: no `def` of its own
        return None
    end = _last_line(code)
    header = _indentation(lines[number])
    if header is None or not number < end <= len(lines) \
            or (_indentation(lines[end - 1]) or 0) <= header:
        return None
    for line in lines[end:]:
        text = line.strip()
        if not text:
            continue
        indent = _indentation(line)
        if indent is None or indent > header:
            return None  # more of the body, a comment getblock may keep, or a tab
        if not text.startswith("#"):
            break
    return lines[number:end]


def _last_line(code: types.CodeType) -> int:
    """The last line any instruction of `code` or of the code nested in it comes from."""
    last = max((end for _, end, _, _ in code.co_positions() if end is not None), default=0)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            last = max(last, _last_line(const))
    return last


def _indentation(line: str) -> int | None:
    """How many spaces `line` starts with; None where its indentation holds another blank
    (a tab counts to the next multiple of 8 for the tokenizer, not as one column)."""
    indent = len(line) - len(line.lstrip(" "))
    return None if line[indent:indent + 1] in ("\t", "\f", "\v") else indent


def _parse_definition(text: str, fn: types.FunctionType) -> ast.FunctionDef | None:
    """The `def` of `fn` in `text`, or None when the text holds no such definition."""
    try:
        module = ast.parse(text)
    except SyntaxError:
        return None
    for stmt in module.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and stmt.name == fn.__code__.co_name:
            return stmt
    return None


def resolve_free_name(fn: types.FunctionType, name: str) -> object:
    """What `name` means inside `fn` when it is not a local: closure, global, builtin."""
    code = fn.__code__
    if name in code.co_freevars:
        cell = fn.__closure__[code.co_freevars.index(name)]
        try:
            return cell.cell_contents
        except ValueError:  # an empty cell: the enclosing function has not bound it yet
            return NOT_FOUND
    if name in fn.__globals__:
        return fn.__globals__[name]
    return getattr(builtins, name, NOT_FOUND)


def constant_value(obj: object) -> object:
    """`obj` as the value of a `const` node (bool, int, float, complex, None or a tuple of
    them).

    A NumPy scalar of a type compiled code has (`NUMPY_SCALARS`) stays one: type
    inference makes it a strong scalar constant (ir/ops/strong.py). Other NumPy
    scalars (np.int8 ...) and anything else give NOT_CONSTANT.
    """
    if obj is None:
        return None
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(obj, numpy.generic):
        return obj if python_type_of(obj) is not None else NOT_CONSTANT
    for kind in (bool, int, float, complex):  # bool first: it is an int too
        if isinstance(obj, kind):
            return kind(obj)
    if isinstance(obj, tuple):
        parts = tuple(constant_value(part) for part in obj)
        return NOT_CONSTANT if any(p is NOT_CONSTANT for p in parts) else parts
    if type(obj).__module__ == "numpy" and hasattr(obj, "item") and getattr(obj, "ndim", 1) == 0:
        return constant_value(obj.item())  # a 0-d array
    return NOT_CONSTANT
