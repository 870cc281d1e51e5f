"""What the compiled subset leaves out: the name of each excluded construct and what to write instead.

`describe(node)` gives the words an error uses for an AST node the lowering has
no rule for ("try statement", "yield", "list comprehension") and a suggested
rewrite. Everything here is data; the lowering modules decide what is supported.
"""
from __future__ import annotations

import ast

_NOT_YET = "not yet supported in compiled code"
_DEF_OUTSIDE = "define it at module level with def and call it"
_NO_STRINGS = ("strings are not supported in compiled code "
               "(for float('inf') or float('nan') write math.inf or math.nan)")

_CONSTRUCTS: dict[str, tuple[str, str]] = {
    # statements
    "Try": ("try statement", "test for the failing condition with if before the operation"),
    "TryStar": ("try statement", "test for the failing condition with if before the operation"),
    "With": ("with statement", "do the resource handling outside the compiled function"),
    "AsyncWith": ("async with statement", "compiled functions are synchronous"),
    "ClassDef": ("class definition", "define the class outside the compiled function"),
    "FunctionDef": ("nested function definition", _DEF_OUTSIDE),
    "AsyncFunctionDef": ("async function definition", "compiled functions are synchronous"),
    "Global": ("global statement", "pass the value in as an argument and return the new value"),
    "Nonlocal": ("nonlocal statement", "pass the value in as an argument and return the new value"),
    "Delete": ("del statement", "assign a new value instead"),
    "Import": ("import statement", "import at module level; the compiled code sees module globals"),
    "ImportFrom": ("import statement",
                   "import at module level; the compiled code sees module globals"),
    "Match": ("match statement", "use if / elif / else"),
    "AsyncFor": ("async for loop", "compiled functions are synchronous"),
    # expressions
    "Lambda": ("lambda expression", _DEF_OUTSIDE),
    "Yield": ("yield", "compiled functions return one value; generators are not supported"),
    "YieldFrom": ("yield from", "compiled functions return one value; generators are not supported"),
    "Await": ("await", "compiled functions are synchronous"),
    "ListComp": ("list comprehension", "use a for loop over range()"),
    "SetComp": ("set comprehension", "use a for loop over range()"),
    "DictComp": ("dict comprehension", "use a for loop over range()"),
    "GeneratorExp": ("generator expression", "use a for loop over range()"),
    "List": ("list display", "use a tuple, e.g. (a, b, c)"),
    "Set": ("set display", "use a tuple, e.g. (a, b, c)"),
    "Dict": ("dict display", "use separate variables or a tuple"),
    "JoinedStr": ("f-string", "strings are not supported; format the result outside"),
    "Starred": ("starred expression", "pass or unpack each element explicitly"),
    "NamedExpr": ("assignment expression (:=)", "assign in a separate statement"),
    "Slice": ("slice", "index tuples with a constant integer, e.g. t[0]"),
}


def describe(node: ast.AST) -> tuple[str, str]:
    """(what the construct is called, a suggested rewrite) for an unsupported node."""
    kind = type(node).__name__
    if kind in _CONSTRUCTS:
        return _CONSTRUCTS[kind]
    if isinstance(node, ast.Constant):
        return describe_constant(node.value)
    return (f"{kind} {'statement' if isinstance(node, ast.stmt) else 'expression'}", "")


def describe_constant(value: object) -> tuple[str, str]:
    if isinstance(value, str):
        return ("string constant", _NO_STRINGS)
    if isinstance(value, bytes):
        return ("bytes constant", "bytes are not supported in compiled code")
    return (f"constant {value!r}", "use a number, True, False or None")
