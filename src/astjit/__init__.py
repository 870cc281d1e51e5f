"""astjit: a source-parsing JIT compiler for numeric Python.

`@jit` parses a function's source into an SSA graph IR with structured
control flow, infers types from the arguments, optimizes, and compiles it
to native code with LLVM. `grad` and friends differentiate that IR.
"""
from . import tree
from .api import jit, static_params
from .autodiff import (
    check_grad,
    custom_vjp,
    grad,
    hessian,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    stop_gradient,
    value_and_grad,
    vjp,
    vmap,
)
from .callbacks import ArraySpec, callback
from .errors import (
    CompileError,
    DifferentiationError,
    NameResolutionError,
    SourceUnavailableError,
    TypingError,
    UnsupportedCallError,
    UnsupportedSyntaxError,
)
from .parallel import prange
from .vectorize import vectorize

__all__ = ["jit", "static_params", "grad", "value_and_grad", "jvp", "vjp", "jacfwd", "jacrev",
           "jacobian", "hessian", "vmap", "stop_gradient", "check_grad",
           "custom_vjp", "vectorize", "prange", "tree",
           "callback", "ArraySpec",
           "CompileError", "UnsupportedSyntaxError", "UnsupportedCallError",
           "NameResolutionError", "TypingError", "DifferentiationError", "SourceUnavailableError"]
__version__ = "0.1.0"
