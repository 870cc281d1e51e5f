"""A fuzzing campaign: generate programs, judge them in worker processes until the budget is
spent, shrink each failure and write it to a file, print the tally.

Program `i` of seed `s` is the same text on every run (`fuzz.generate.program`), whatever
the number of workers, so `--seed S --first I --count 1` reproduces one program.
"""
from __future__ import annotations

import itertools
import shutil
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from astjit.fuzz.generate import program
from astjit.fuzz.nan_signs import NAN_SIGN
from astjit.fuzz.pool import Worker
from astjit.fuzz.shrink import shrink

PROGRAM_TIMEOUT = 400.0
PROGRESS = 500               # a tally line every PROGRESS programs
REPORTED = 5                 # failures shrunk and written per run; the rest are only counted


@dataclass
class Options:
    budget: float
    seed: int
    out: Path
    jobs: int = 1
    first: int = 0
    count: int | None = None
    shrink_seconds: float = 120.0


@dataclass
class Failure:
    index: int
    source: str
    result: dict


@dataclass
class Tally:
    counts: Counter = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def line(self) -> str:
        c = self.counts
        return (f"{c['programs']} programs, {c['mismatch']} mismatches, {c['crash'] + c['error']} crashes "
                f"({c['raised']} raised the same exception, {c['refused']} refused, {c['skipped']} skipped, "
                f"{c['ill-conditioned']} ill-conditioned, {c[NAN_SIGN]} a NaN's sign; "
                f"gradients: {c['grad compared']} compared, {c['grad refused']} refused, "
                f"{c['grad flat']} flat in floats, {c['grad skipped']} not smooth, "
                f"{c['grad singular']} NaN at a singular point)")


def signature(result: dict) -> tuple:
    """What kind of failure `result` is: shrinking keeps programs of the same signature."""
    if result["verdict"] in ("crash", "error"):
        return (result["verdict"],)
    if result.get("grad", "").startswith("mismatch"):
        return ("mismatch", "gradient")
    kinds = (" ".join(result.get(side, "").split(":")[0].split()[:2]).replace("returned ", "")
             for side in ("cpython", "compiled"))
    return (result["verdict"], *kinds)


def run(options: Options) -> int:
    """Runs the campaign; the exit status: 1 where a program mismatched or crashed."""
    workdir = Path(tempfile.mkdtemp(prefix="astjit-fuzz-"))
    print(f"astjit.fuzz: seed {options.seed}, budget {options.budget:g} s, {options.jobs} worker(s)",
          flush=True)
    tally, deadline = Tally(), time.monotonic() + options.budget
    last = options.first + options.count if options.count is not None else None
    indexes = itertools.count(options.first)
    take = threading.Lock()

    def next_index() -> int | None:
        with take:
            i = next(indexes)
        return i if (last is None or i < last) and time.monotonic() < deadline else None

    def work() -> None:
        worker = Worker()
        try:
            while (i := next_index()) is not None:
                judge_one(options, workdir, worker, i, tally)
        finally:
            worker.close()

    threads = [threading.Thread(target=work) for _ in range(options.jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(tally.line(), flush=True)
    reported = sorted(tally.failures, key=lambda f: f.index)[:REPORTED]
    for failure in reported:
        path = report(options, workdir, failure)
        print(f"program {failure.index}: written to {path}", flush=True)
    shutil.rmtree(workdir, ignore_errors=True)
    if reported:  # the tally last again, after the shrinking's lines
        print(tally.line(), flush=True)
    return 1 if tally.counts["mismatch"] or tally.counts["crash"] or tally.counts["error"] else 0


def judge_one(options: Options, workdir: Path, worker: Worker, index: int, tally: Tally) -> None:
    source = program(options.seed, index).source
    name = f"fz_{options.seed}_{index}"
    path = workdir / f"{name}.py"
    path.write_text(source)
    result = worker.judge(path, name, PROGRAM_TIMEOUT)
    if result["verdict"] == "crash":  # run it alone in a fresh worker: this program, not an earlier one?
        alone = Worker()
        again = alone.judge(path, name, PROGRAM_TIMEOUT)
        alone.close()
        if again["verdict"] != "crash":
            result["detail"] += f"; alone in a fresh worker: {again['verdict']}"
    with tally.lock:
        tally.counts["programs"] += 1
        tally.counts[result["verdict"]] += 1
        if result["verdict"] == "ok" and result.get("cpython", "").startswith("raised"):
            tally.counts["raised"] += 1
        for allowance in ("ill-conditioned", NAN_SIGN):
            if result.get("detail", "").startswith(allowance):
                tally.counts[allowance] += 1
        if "grad" in result:
            tally.counts["grad " + result["grad"].split(":")[0].split()[0]] += 1
        if result["verdict"] in ("mismatch", "crash", "error"):
            tally.failures.append(Failure(index, source, result))
            print(f"program {index}: {result['verdict']}: {result['detail']}", flush=True)
        if tally.counts["programs"] % PROGRESS == 0:
            print(f"so far: {tally.line()}", flush=True)
    path.unlink()


def report(options: Options, workdir: Path, failure: Failure) -> Path:
    """Shrinks the failure and writes it (and the original) to the output folder."""
    wanted, worker, tries = signature(failure.result), Worker(), itertools.count()
    final = {"result": failure.result}

    def still_fails(text: str) -> bool:
        name = f"fz_{options.seed}_{failure.index}_s{next(tries)}"
        path = workdir / f"{name}.py"
        path.write_text(text)
        result = worker.judge(path, name, PROGRAM_TIMEOUT)
        path.unlink()
        if signature(result) == wanted:
            final["result"] = result
            return True
        return False

    try:
        smallest = shrink(failure.source, still_fails, options.shrink_seconds)
    finally:
        worker.close()
    options.out.mkdir(parents=True, exist_ok=True)
    stem = f"fuzz_failure_{options.seed}_{failure.index}"
    (options.out / f"{stem}_original.py").write_text(failure.source)
    header = [f"# astjit fuzz failure: program {failure.index} of seed {options.seed}, shrunk",
              f"# (the program as generated: {stem}_original.py). Reproduce: python {stem}.py",
              *(f"# {key}: {text}" for key, text in outcome_lines(final["result"])),
              *(f"# original {key}: {text}" for key, text in outcome_lines(failure.result))]
    path = options.out / f"{stem}.py"
    path.write_text("\n".join(header) + "\n" + smallest)
    return path


def outcome_lines(result: dict) -> list[tuple[str, str]]:
    keys = ("verdict", "detail", "cpython", "compiled", "stderr")
    return [(key, str(result[key]).replace("\n", "\n#   ")) for key in keys if key in result]
