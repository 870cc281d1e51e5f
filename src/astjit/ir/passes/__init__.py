"""IR optimization passes: each a function Module -> Module, one per module.

inline (`inline_calls`) · constant folding (`fold_constants`) · algebraic
simplification (`simplify`) · CSE (`eliminate_common_subexpressions`) · DCE
(`eliminate_dead_code`); `optimize` runs them as a pipeline and `PASSES` lists
them by name. Every pass works on typed IR, recurses into regions, and keeps
the invariants of `core.py`.
"""
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .fold import fold_constants
from .inline import inline_calls
from .pipeline import PASSES, optimize
from .simplify import simplify

__all__ = ["PASSES", "eliminate_common_subexpressions", "eliminate_dead_code",
           "fold_constants", "inline_calls", "optimize", "simplify"]
