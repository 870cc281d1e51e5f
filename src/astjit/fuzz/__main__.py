"""`python -m astjit.fuzz --budget SECONDS [--seed N] [--out DIR] [--jobs N]`: a differential
fuzzing campaign (see docs/fuzzing.md). Prints `N programs, M mismatches, C crashes`; exits
1 where a program mismatched or crashed, after writing each (shrunk) to DIR."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from astjit.fuzz.campaign import Options, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m astjit.fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=float, default=60.0, help="seconds to generate and judge programs")
    parser.add_argument("--seed", type=int, default=None, help="the run's seed (default: the time)")
    parser.add_argument("--out", type=Path, default=Path.cwd(), help="where failures are written")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes judging programs at once")
    parser.add_argument("--first", type=int, default=0, help="the number of the first program")
    parser.add_argument("--count", type=int, default=None, help="how many programs at most")
    parser.add_argument("--shrink-seconds", type=float, default=None,
                        help="time to shrink each failure (default: half the budget, 20 to 120 s)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time())
    shrink_seconds = args.shrink_seconds
    if shrink_seconds is None:
        shrink_seconds = min(120.0, max(20.0, args.budget / 2))
    return run(Options(args.budget, seed, args.out, args.jobs, args.first, args.count, shrink_seconds))


if __name__ == "__main__":
    raise SystemExit(main())
