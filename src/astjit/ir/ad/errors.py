"""The error reverse-mode differentiation raises: what cannot be differentiated, and where."""
from __future__ import annotations

from ...errors import Loc


class NotDifferentiableError(Exception):
    """Reverse mode cannot differentiate this graph.

    `op` names the primitive without a reverse-mode rule (None when the problem
    is the signature: a non-float output or parameter); `loc` is where it came
    from. The gradient driver falls back to forward mode when `op` is a tape op
    (the graph is itself a gradient) and reports the error to the user otherwise.
    """

    def __init__(self, message: str, op: str | None = None, loc: Loc | None = None):
        self.op = op
        self.loc = loc
        super().__init__(f"{message} (at {loc})" if loc is not None else message)
