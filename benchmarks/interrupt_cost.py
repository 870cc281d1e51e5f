"""What Ctrl-C costs compiled loops: each kernel of kernels.py with its signal checks
(backend/llvm/interrupts.py) against the same kernel compiled without any.

    python benchmarks/interrupt_cost.py [--fifo] [--rounds 41]

The unchecked version is compiled with the checks taken out for that compile only:
`interrupts.at_back_edge` (the work counter and its check at a loop's back-edge) a no-op,
and a flat counted loop one unchecked loop, never in chunks (`interrupts.LONG_TRIP` past
any trip count, and no `LongTrip.small`, whose version runs in chunks at any trip count).
Nothing else of the code differs. `pi_sum` runs at 10^6 iterations, as run.py has it
(its counter in [1, 2^31): one chunk of the `small` version), and at 4 * 10^6 (four).

Rounds alternate the two versions (interleaved.py), medians; `--fifo` runs under the
real-time SCHED_FIFO policy (Linux; root or CAP_SYS_NICE), so that on a loaded machine
other processes do not land in a call of a few milliseconds.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from collections.abc import Iterator

from interleaved import interleaved_medians
from kernels import KERNELS, pi_sum

from astjit import jit
from astjit.backend.llvm import interrupts


@contextlib.contextmanager
def unchecked() -> Iterator[None]:
    """Compiles meanwhile have no signal checks."""
    saved = interrupts.at_back_edge, interrupts.LONG_TRIP, interrupts.long_trip
    long_trip = interrupts.long_trip

    def one_version(*args):
        trip = long_trip(*args)
        return trip and dataclasses.replace(trip, small=None)

    interrupts.at_back_edge = lambda *args, **kwargs: None
    interrupts.LONG_TRIP = 1 << 62
    interrupts.long_trip = one_version
    try:
        yield
    finally:
        interrupts.at_back_edge, interrupts.LONG_TRIP, interrupts.long_trip = saved


def cases() -> list[tuple[str, object, tuple]]:
    loops = [(k.name, k.fn, k.args) for k in KERNELS if not k.is_dispatch and k.name != "fib"]
    return loops + [("pi_sum 4e6", pi_sum, (4_000_000,))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--fifo", action="store_true", help="run under SCHED_FIFO")
    options = parser.parse_args()
    if options.fifo:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    print("median per call: with the signal checks, without; the checks' cost")
    for name, fn, args in cases():
        checked = jit(fn)
        checked(*args)  # compiled now, with the checks
        with unchecked():
            bare = jit(fn)
            bare(*args)
        assert checked(*args) == bare(*args), name
        with_checks, without = interleaved_medians(bare, checked, args, options.rounds)[::-1]
        print(f"  {name:12s} {with_checks * 1e3:9.3f} ms {without * 1e3:9.3f} ms "
              f"{100 * (with_checks / without - 1):+6.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
