"""The benchmark plots of docs/benchmarks.md: matplotlib PNGs drawn from the JSON the benchmark
scripts write, and the ratios each plot shows, printed as Markdown tables.

    python benchmarks/plots.py [--build benchmarks/_build] [--out docs/img]

Reads results.json (run.py), grad_results.json (grad_run.py), array_results.json
(array_run.py), transforms_results.json (transforms_run.py) and parallel_results.json
(parallel_run.py), each where present, and
writes one PNG per figure. Every bar is a ratio of two engines' medians over interleaved
rounds, measured in one run of one script: the ratios travel between machines better than
the times do. Needs matplotlib (`pip install -e '.[bench]'`).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: E402

HERE = Path(__file__).resolve().parent
COLORS = {"CPython": "#9e9e9e", "astjit": "#d84315", "Numba": "#1565c0", "JAX": "#2e7d32",
          "NumPy": "#6a1b9a", "C fast-math": "#795548", "grad(f)": "#d84315", "jit(grad)": "#ff8a65",
          "hand": "#9e9e9e", "astjit parallel": "#d84315", "Numba parallel": "#1565c0"}


def ratio_table(title: str, columns: list[str], rows: dict[str, list[float | None]]) -> str:
    """A Markdown table of ratios, one row per case."""
    lines = [f"**{title}**", "", "| case | " + " | ".join(columns) + " |",
             "|---" * (len(columns) + 1) + "|"]
    for case, values in rows.items():
        cells = [f"{v:.2f}×" if v is not None else "n/a" for v in values]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def grouped_bars(path: Path, title: str, ylabel: str, rows: dict[str, list[float | None]],
                 columns: list[str], *, baseline: str | None = None) -> None:
    """Bars of each case's ratios side by side, on a log scale, with a line at 1."""
    cases = list(rows)
    width = 0.8 / len(columns)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(cases) + 2), 4.2))
    for k, column in enumerate(columns):
        xs = [i + (k - (len(columns) - 1) / 2) * width for i in range(len(cases))]
        measured = [(x, rows[c][k]) for x, c in zip(xs, cases) if rows[c][k] is not None]
        # from 1 up (slower than the baseline) or down (faster); the edge shows a ratio near 1
        ax.bar([x for x, _ in measured], [y - 1.0 for _, y in measured], width, bottom=1.0,
               label=column, color=COLORS.get(column), edgecolor=COLORS.get(column),
               linewidth=1.5)
    ax.axhline(1.0, color="black", linewidth=0.8)
    log_ratios(ax.yaxis, ax.set_yscale)
    ax.set_xticks(range(len(cases)), cases, rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title + (f" (1 = {baseline})" if baseline else ""))
    ax.legend(fontsize=8)
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def horizontal_bars(path: Path, title: str, xlabel: str, ratios: dict[str, float]) -> None:
    """One bar per case (astjit over a peer), on a log scale, with a line at 1."""
    cases = list(ratios)
    fig, ax = plt.subplots(figsize=(7.0, 0.22 * len(cases) + 1.2))
    colors = [COLORS["astjit"] if ratios[c] <= 1.0 else "#90a4ae" for c in cases]
    ax.barh(range(len(cases)), [ratios[c] - 1.0 for c in cases], left=1.0, color=colors,
            edgecolor=colors, linewidth=1.5)
    ax.axvline(1.0, color="black", linewidth=0.8)
    log_ratios(ax.xaxis, ax.set_xscale)
    ax.set_yticks(range(len(cases)), cases, fontsize=7)
    ax.set_ylim(len(cases) - 0.5, -0.5)  # the first case on top, no margins
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def log_ratios(axis, set_scale) -> None:
    """A log scale labelled with plain ratios: 0.2×, 1×, 10×."""
    set_scale("log")
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}×"))
    axis.set_minor_formatter(FuncFormatter(lambda value, _: ""))


def over(median: dict[str, float], engine: str, base: str) -> float | None:
    if engine in median and base in median and median[base] > 0:
        return median[engine] / median[base]
    return None


def loop_kernels(data: dict, out: Path) -> str:
    """run.py: each kernel's steady state as a multiple of C's, and first-call compile times."""
    engines = ["CPython", "astjit", "Numba"]
    kernels = [k for k in data["kernels"] if k["kernel"] != "dispatch"]
    rows = {k["kernel"]: [over(k["median"], e, "C") for e in engines] for k in kernels}
    grouped_bars(out / "loops.png", "Loop kernels: time per call", "× C's time (log)", rows,
                 engines, baseline="C -O3")
    compile_ms = {k["kernel"]: [k.get("compile", {}).get(e) for e in ("astjit", "Numba")]
                  for k in data["kernels"]}
    compile_ms["import + first compile"] = [data["startup"].get(e) for e in ("astjit", "Numba")]
    fig, ax = plt.subplots(figsize=(7.0, 3.8))
    names = list(compile_ms)
    for k, engine in enumerate(("astjit", "Numba")):
        ys = [(compile_ms[n][k] or 0.0) * 1e3 for n in names]
        ax.bar([i + (k - 0.5) * 0.4 for i in range(len(names))], ys, 0.4, label=engine,
               color=COLORS[engine])
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
    ax.set_ylabel("ms")
    ax.set_title("First call: compile time (and a fresh process's import + first compile)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "compile.png", dpi=110)
    plt.close(fig)
    compile_rows = {n: [v * 1e3 if v is not None else None for v in vs]
                    for n, vs in compile_ms.items()}
    text = ratio_table("Loop kernels, time per call ÷ C's (loops.png)", engines, rows)
    lines = ["**First-call compile, ms (compile.png)**", "", "| case | astjit | Numba |",
             "|---|---|---|"]
    lines += [f"| {n} | " + " | ".join(f"{v:.1f}" if v is not None else "n/a" for v in vs) + " |"
              for n, vs in compile_rows.items()]
    return text + "\n" + "\n".join(lines) + "\n"


def gradients(data: dict, out: Path) -> str:
    """grad_run.py: each gradient's time per call as a multiple of the hand-written one."""
    columns = ["grad(f)", "jit(grad)", "JAX"]
    rows = {}
    for case in data["cases"]:
        label = case["case"] + (" (JAX: jacfwd)" if case.get("jax_mode") == "jacfwd" else "")
        median = case["median"]
        rows[label] = [over(median, "grad", "hand"), over(median, "jit(grad)", "hand"),
                       over(median, "JAX", "hand")]
    grouped_bars(out / "grad.png", "Gradients: time per call", "× the hand-written Python "
                 "derivative (log)", rows, columns, baseline="hand-written derivative")
    return ratio_table("Gradients, time per call ÷ the hand-written derivative's (grad.png)",
                       columns, rows)


HEADLINE = ("expression", "sum_squares", "softmax", "matmul", "mlp_step")
"""array_run.py's cases with peers beyond NumPy: one figure; the others (NumPy's own
functions) another."""


def arrays(data: dict, out: Path) -> str:
    """array_run.py: the headline cases against NumPy, Numba, JAX and C; NumPy's functions."""
    engines = ["astjit", "Numba", "JAX", "C fast-math"]
    headline = {r["label"]: [over(r["median"], e, "NumPy") for e in engines]
                for r in data["results"] if r["case"] in HEADLINE}
    grouped_bars(out / "arrays.png", "Array programs: time per call", "× NumPy's time (log)",
                 headline, engines, baseline="NumPy")
    functions = {r["label"]: over(r["median"], "astjit", "NumPy") for r in data["results"]
                 if r["case"] not in HEADLINE and over(r["median"], "astjit", "NumPy")}
    horizontal_bars(out / "numpy_functions.png", "NumPy functions compiled by astjit",
                    "astjit's time ÷ NumPy's (log; < 1: astjit is faster)", functions)
    text = ratio_table("Array programs, time per call ÷ NumPy's (arrays.png)", engines, headline)
    return text + "\n" + ratio_table("NumPy's functions, astjit ÷ NumPy (numpy_functions.png)",
                                     ["astjit"], {k: [v] for k, v in functions.items()})


def transforms(data: dict, out: Path) -> str:
    """transforms_run.py: astjit's vmap(grad), hessian and Jacobians over JAX's."""
    rows = {name: [over(case["median"], "astjit", "JAX")] for name, case in data["cases"].items()}
    horizontal_bars(out / "transforms.png", "Function transforms: astjit ÷ JAX",
                    "astjit's time ÷ JAX's (log; < 1: astjit is faster)",
                    {k: v[0] for k, v in rows.items() if v[0] is not None})
    return ratio_table("Function transforms, astjit ÷ JAX (transforms.png)", ["astjit"], rows)


def parallel(data: dict, out: Path) -> str:
    """parallel_run.py: each engine's speed-up over serial astjit."""
    engines = ["astjit parallel", "Numba parallel", "NumPy"]
    rows = {case: [over(medians, "astjit serial", e) for e in engines]
            for case, medians in data["medians"].items()}
    grouped_bars(out / "parallel.png", f"Parallel loops, {data['n']:.0e} doubles, "
                 f"{data['cpus']} CPUs", "speed-up over serial astjit (log)", rows, engines,
                 baseline="serial astjit")
    return ratio_table(f"Parallel loops, speed-up over serial astjit, {data['cpus']} CPUs "
                       "(parallel.png)", engines, rows)


FIGURES = {"results.json": loop_kernels, "grad_results.json": gradients,
           "array_results.json": arrays, "transforms_results.json": transforms,
           "parallel_results.json": parallel}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=HERE / "_build",
                        help="where the benchmark scripts wrote their JSON")
    parser.add_argument("--out", type=Path, default=HERE.parent / "docs" / "img")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    found = False
    for name, figure in FIGURES.items():
        path = options.build / name
        if not path.is_file():
            print(f"(no {path}: run its benchmark first)", file=sys.stderr)
            continue
        found = True
        print(figure(json.loads(path.read_text()), options.out))
    if not found:
        print("no benchmark results found", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
