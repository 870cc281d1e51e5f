"""Python's operators and the primitives they lower to (expressions.py, and `x <op>= v` in statements.py)."""
from __future__ import annotations

import ast

BINARY_OPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
    ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift",
    ast.BitAnd: "bitand", ast.BitOr: "bitor", ast.BitXor: "bitxor",
    ast.MatMult: "matmul",  # ir/ops/linalg.py: type inference refuses numbers
}
UNARY_OPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not"}
COMPARE_OPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
               ast.NotEq: "ne"}
ARRAY_ATTRIBUTES = {"shape": "array_shape", "size": "array_size", "ndim": "array_ndim",
                    "T": "array_transpose", "real": "real", "imag": "imag",
                    "itemsize": "array_bytes", "nbytes": "array_bytes"}
"""The attributes of a value (an array; `.real`/`.imag` of a number too) compiled code reads,
and their primitives (`.real` of a complex array is np.real's view: ir/ops/complexes.py;
`array_bytes` takes the attribute's name)."""
