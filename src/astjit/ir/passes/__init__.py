"""IR optimization passes: each a function Module -> Module, one per module.

inline (`inline_calls`) · constant folding (`fold_constants`) · algebraic
simplification (`simplify`) · CSE (`eliminate_common_subexpressions`) · DCE
(`eliminate_dead_code`); `optimize` runs them as a pipeline and `PASSES` lists
them by name. Every pass works on typed IR, recurses into regions, and keeps
the invariants of `core.py`. The retain/release pass (`insert_array_ownership`, in
retain_release.py) is not part of `optimize`: it runs once after it, last of all, and
`check_array_ownership` (ownership.py) verifies its result.
"""
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .fold import fold_constants
from .inline import inline_calls
from .pipeline import PASSES, optimize
from .retain_release import check_array_ownership, insert_array_ownership
from .simplify import simplify

__all__ = ["PASSES", "check_array_ownership", "eliminate_common_subexpressions",
           "eliminate_dead_code", "fold_constants", "inline_calls", "insert_array_ownership",
           "optimize", "simplify"]
