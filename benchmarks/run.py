"""Benchmark astjit against CPython, Numba and C.

Usage: python benchmarks/run.py [--quick] [--only NAME]...

Prints the ratio tables (see README.md for what each column means) and
writes every measurement to benchmarks/_build/results.json. Without --only it also
times the element loops of boundscheck.py (issue 16: prefix sum, matrix-vector,
histogram, stencil) checked, with boundscheck=False, in Numba and in C.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import time
from importlib import metadata

from boundscheck import loop_table, loop_times
from engines import BUILD_DIR, C_FLAGS, all_engines
from kernels import KERNELS, Kernel
from measure import StartupFailed, describe, measure_compile, measure_startup, time_kernel
from report import Report, format_report, write_json

RESULTS_JSON = BUILD_DIR / "results.json"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer rounds and shorter samples (noisier, ~4x faster)",
    )
    parser.add_argument(
        "--only",
        metavar="NAME",
        action="append",
        choices=[k.name for k in KERNELS],
        help="run only this kernel (repeatable); skips the cold-start test",
    )
    return parser.parse_args(argv)


def settings_for(args: argparse.Namespace) -> dict:
    """Rounds, minimum sample length and repeat counts; recorded in the JSON."""
    quick = args.quick
    return {
        "rounds": 5 if quick else 15,
        "min_sample_s": 0.02 if quick else 0.05,
        "compile_repeats": 1 if quick else 3,
        "startup_repeats": 1 if quick else 3,
        "loop_rounds": 25 if quick else 101,
    }


def environment() -> dict:
    """What the numbers depend on: interpreter, peers' versions, compiler, CPU."""

    def version(package: str) -> str:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return "not installed"

    try:
        gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout
    except OSError:
        gcc = "not found"
    return {
        "python": sys.version.split()[0],
        "astjit": version("astjit"),
        "numba": version("numba"),
        "llvmlite": version("llvmlite"),
        "gcc": gcc.splitlines()[0] if gcc else "",
        "c_flags": C_FLAGS,
        "machine": platform.machine(),
        "cpu": cpu_name(),
        "date": time.strftime("%F %T"),
    }


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def run_kernels(kernels: list[Kernel], settings: dict) -> list:
    """Steady state then compile time, kernel by kernel, with progress on stderr."""
    engines = all_engines()
    results = []
    for kernel in kernels:
        start = time.perf_counter()
        print(f"  {kernel.name} ...", end="", file=sys.stderr, flush=True)
        result = time_kernel(engines, kernel, settings["rounds"], settings["min_sample_s"])
        measure_compile(engines, kernel, result, settings["compile_repeats"])
        print(f" {time.perf_counter() - start:.1f} s", file=sys.stderr)
        results.append(result)
    return results


def run_startup(report: Report, repeats: int) -> None:
    """`import X + first compile` in fresh interpreters, for astjit and Numba."""
    print("  import + first compile ...", file=sys.stderr)
    for engine in ("astjit", "Numba"):
        try:
            report.startup[engine] = measure_startup(engine, repeats)
        except StartupFailed as error:
            report.startup_errors[engine] = str(error)
        except (OSError, subprocess.SubprocessError, ValueError) as error:
            report.startup_errors[engine] = describe(error)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    settings = settings_for(args)
    kernels = [k for k in KERNELS if not args.only or k.name in args.only]
    started = time.perf_counter()
    print(f"Benchmarking {len(kernels)} kernel(s), {settings['rounds']} rounds:", file=sys.stderr)
    report = Report(run_kernels(kernels, settings), settings=settings | environment())
    if not args.only:
        run_startup(report, settings["startup_repeats"])
        print("  element loops (boundscheck.py) ...", file=sys.stderr)
        report.element_loops = loop_times(settings["loop_rounds"])
    report.settings["total_s"] = round(time.perf_counter() - started, 1)
    print(format_report(report))
    if report.element_loops:
        print("\nElement loops with bounds checks (boundscheck.py; 'unchecked' is "
              "boundscheck=False)\n")
        print(loop_table(report.element_loops))
    write_json(report, RESULTS_JSON)
    print(f"\n({report.settings['total_s']} s in all; details in {RESULTS_JSON})")


if __name__ == "__main__":
    main()
