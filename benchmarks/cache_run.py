"""Cold compile vs warm load of jit(cache=True), each in a fresh process (issue 15).

Usage: python benchmarks/cache_run.py [--repeats N] [--installed]

For the scalar kernels of kernels.py and the MLP training step of array_kernels.py, a
child process times three spans: `import astjit` + the kernel's module + `jit(f,
cache=True)` + the first call ("import to result"), `jit` + the first call alone ("first
call"), and a second call, whose time is the kernel's own run: "load" is the first
call's time less the second's, what loading (or compiling) adds to the call (several
kernels run for longer than a warm load takes). Also the load in CPU time of the
calling thread (`time.thread_time`), which a loaded machine inflates less than wall
time. Cold: an empty cache folder (the call compiles and writes the entry; a fresh
folder each time). Warm: the folder the cold runs filled (the call loads). Beside them,
Numba's own `njit(cache=True)` for the kernels Numba caches by themselves (those
calling no other Python function). Medians over N processes each; the machine is
shared and noisy, so the ratios matter more than the times. Writes
_build/cache_results.json.

The children write and use `.pyc` files, as a user's processes do (without them, every
process would also compile astjit's modules from source: `PYTHONDONTWRITEBYTECODE` is
dropped from their environment). astjit is the one this Python imports: a development
checkout (an editable install) keys the cache on a stat of each of its source files
(docs/caching.md); `--installed` lays the package out in a temporary folder as pip
installs a wheel (with a `.dist-info` RECORD) and puts it first on the children's
`sys.path`, to time what users of an installed astjit get (keyed on RECORD).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from engines import BUILD_DIR, HERE

CHILD = """
import time
start = time.perf_counter()
import {engine}
from {module} import {function}{setup}
begin, cpu = time.perf_counter(), time.thread_time()
compiled = {jit}({function}, cache=True)
compiled(*ARGS)
end, cpu_end = time.perf_counter(), time.thread_time()
compiled(*ARGS)
again, cpu_again = time.perf_counter(), time.thread_time()
print(end - start, end - begin, (end - begin) - (again - end),
      (cpu_end - cpu) - (cpu_again - cpu_end))
"""
ASTJIT_CHILD = CHILD.replace("{engine}", "astjit").replace("{jit}", "astjit.jit")
NUMBA_CHILD = CHILD.replace("{engine}", "numba").replace("{jit}", "numba.njit")
SPANS = ("total", "call", "load", "load_cpu")

CASES = [
    ("pi_sum", "kernels", "pi_sum", "\nARGS = (1_000_000,)", True),
    ("mandelbrot", "kernels", "mandel_grid", "\nARGS = (200, 150, 200)", False),
    ("fib", "kernels", "fib", "\nARGS = (25,)", False),
    ("newton_sqrt", "kernels", "newton_sum", "\nARGS = (100_000,)", False),
    ("collatz", "kernels", "collatz", "\nARGS = (30_000,)", True),
    ("mlp_step", "array_kernels", "mlp_step",
     ", mlp_batch\nARGS = mlp_batch(64)", False),
]
"""(name, module, function, setup code defining ARGS, whether Numba caches it alone)."""


SITE: str | None = None
"""The folder astjit is installed into with `--installed` (first on the children's path)."""


def run(template: str, case: tuple, folder: str, variable: str) -> tuple[float, ...]:
    _, module, function, setup, _ = case
    code = template.format(module=module, function=function, setup=setup)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env[variable] = folder
    if SITE is not None:
        env["PYTHONPATH"] = os.pathsep.join([SITE, *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run([sys.executable, "-c", code], cwd=HERE, env=env, capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1])
    return tuple(map(float, done.stdout.split()))


def measure(template: str, case: tuple, variable: str, repeats: int) -> dict[str, float]:
    """Median cold and warm `SPANS` over `repeats` processes each."""
    cold, warm = [], []
    with tempfile.TemporaryDirectory() as keep:
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as fresh:
                cold.append(run(template, case, fresh, variable))
        run(template, case, keep, variable)  # fills the folder the warm runs load from
        for _ in range(repeats):
            warm.append(run(template, case, keep, variable))
    return {f"{kind}_{span}": statistics.median(row[k] for row in rows)
            for kind, rows in (("cold", cold), ("warm", warm)) for k, span in enumerate(SPANS)}


def install(into: str) -> str:
    """This checkout's package laid out in `into` as pip installs a wheel: the package's
    files and a `.dist-info` whose RECORD lists each with its SHA-256 (what the cache keys
    an installed astjit on). The folder to put on the path. (Not built with pip: building a
    wheel needs the `wheel` package or a newer setuptools than this project requires.)"""
    import base64
    import hashlib
    import shutil

    import astjit

    package = Path(astjit.__file__).parent
    target = Path(into) / "astjit"
    shutil.copytree(package, target, ignore=shutil.ignore_patterns("__pycache__"))
    info = Path(into) / f"astjit-{astjit.__version__}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: astjit\n"
                                   f"Version: {astjit.__version__}\n")
    lines = []
    for path in sorted(p for p in [*target.rglob("*"), info / "METADATA"] if p.is_file()):
        data = path.read_bytes()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append(f"{path.relative_to(into).as_posix()},sha256={digest},{len(data)}")
    lines.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(lines) + "\n")
    return into


def main(argv: list[str] | None = None) -> None:
    global SITE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", nargs="*", help="kernel names (default: all)")
    parser.add_argument("--no-numba", action="store_true", help="astjit alone")
    parser.add_argument("--installed", action="store_true",
                        help="astjit installed as from a wheel (see above)")
    args = parser.parse_args(argv)
    if args.installed:
        keep = tempfile.TemporaryDirectory()
        SITE = install(keep.name)
        print(f"astjit installed (as from a wheel) into {SITE}")
    results = {}
    print(f"{'kernel':<12} {'engine':<7} {'cold ms':>9} {'warm ms':>9} {'ratio':>6}"
          f" {'cold call':>10} {'warm call':>10} {'ratio':>6} {'warm load':>10}"
          f" {'load CPU':>9}")
    for case in [c for c in CASES if not args.only or c[0] in args.only]:
        engines = [("astjit", ASTJIT_CHILD, "ASTJIT_CACHE_DIR")]
        if case[4] and not args.no_numba:
            engines.append(("Numba", NUMBA_CHILD, "NUMBA_CACHE_DIR"))
        for engine, template, variable in engines:
            r = measure(template, case, variable, args.repeats)
            results[f"{case[0]}/{engine}"] = r
            print(f"{case[0]:<12} {engine:<7} {r['cold_total'] * 1e3:9.1f}"
                  f" {r['warm_total'] * 1e3:9.1f} {r['cold_total'] / r['warm_total']:6.1f}"
                  f" {r['cold_call'] * 1e3:10.1f} {r['warm_call'] * 1e3:10.1f}"
                  f" {r['cold_call'] / r['warm_call']:6.1f} {r['warm_load'] * 1e3:10.1f}"
                  f" {r['warm_load_cpu'] * 1e3:9.1f}", flush=True)
    BUILD_DIR.mkdir(exist_ok=True)
    out = Path(BUILD_DIR) / ("cache_results_installed.json" if args.installed
                             else "cache_results.json")
    out.write_text(json.dumps(results, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
