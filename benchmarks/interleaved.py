"""Timing one NumPy call against its compiled version on a shared, loaded machine.

shape_run.py and index_run.py compare single calls of a few milliseconds. Timing all of
NumPy's rounds and then all of astjit's lets a change in the machine's load between the
two halves decide the ratio, so the rounds alternate (NumPy, astjit, astjit, NumPy, ...:
each engine goes first in half of them) and each engine's median is reported.

`clock=time.process_time` times CPU time instead of wall time: for single-threaded calls
the work itself, without the time spent waiting for a core, which on a machine with
more runnable processes than cores is most of the wall time and varies from round to
round (page faults are the process's own CPU time and still count).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence


def _once(fn: Callable, args: Sequence, clock: Callable[[], float]) -> float:
    start = clock()
    fn(*args)
    return clock() - start


def interleaved_medians(reference: Callable, compiled: Callable, args: Sequence,
                        rounds: int = 41,
                        clock: Callable[[], float] = time.perf_counter) -> tuple[float, float]:
    """Median seconds per call of `reference(*args)` and `compiled(*args)`, timed in
    alternating rounds after one warm-up call each, by `clock`."""
    reference(*args)
    compiled(*args)
    first, second = [], []
    for round_ in range(rounds):
        if round_ % 2:
            second.append(_once(compiled, args, clock))
            first.append(_once(reference, args, clock))
        else:
            first.append(_once(reference, args, clock))
            second.append(_once(compiled, args, clock))
    return sorted(first)[rounds // 2], sorted(second)[rounds // 2]


def ratio_line(name: str, width: int, numpy_time: float, astjit_time: float) -> str:
    """One row of the table both scripts print: the two medians and their ratio."""
    return (f"{name:{width}s} {numpy_time * 1e3:8.3f}ms {astjit_time * 1e3:8.3f}ms "
            f"{astjit_time / numpy_time:12.2f}x")
