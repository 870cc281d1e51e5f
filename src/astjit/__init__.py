"""astjit: a source-parsing JIT compiler for numeric Python.

`@jit` parses a function's source into an SSA graph IR with structured
control flow, infers types from the arguments, optimizes, and compiles it
to native code with LLVM.
"""
from .api import jit
from .errors import (
                     CompileError,
                     NameResolutionError,
                     SourceUnavailableError,
                     TypingError,
                     UnsupportedCallError,
                     UnsupportedSyntaxError,
)

__all__ = ["jit", "CompileError", "UnsupportedSyntaxError", "UnsupportedCallError",
           "NameResolutionError", "TypingError", "SourceUnavailableError"]
__version__ = "0.1.0"
