"""One program judged: CPython's outcome against the compiled function's, and gradients
against finite differences. Runs in a worker process (`astjit.fuzz.worker`), or alone
with `python PROGRAM.py` to reproduce a failure.

Outcomes agree when both return equal results and leave equal arguments (arrays are
passed by reference), or both raise and the compiled exception is an instance of
CPython's class. Equal means the same types all the way down and bit-equal numbers (NaN
equals NaN; the sign of a zero counts): astjit's scalar code is meant to compute what
CPython computes. Two allowances are documented differences the program declares:
`TOLERANT` (np.sum / np.mean reassociate, vector math is libmvec's: a relative 1e-9, or
within what those rounding differences can make of the result, `fuzz.conditioning`) and
`ZERO_SIGN_FREE` (np.min / np.max among zeros of both signs). And every program may read the
sign of a NaN arithmetic made otherwise (`fuzz.nan_signs`). A CompileError is a refusal,
not a wrong answer: counted apart.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import math
import signal
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

import astjit
from astjit.fuzz.conditioning import reachable, within_spread
from astjit.fuzz.nan_signs import NAN_SIGN, nan_sign_reaches

REFERENCE_SECONDS = 5.0      # CPython slower than this (CPU s): the program is skipped, not judged
COMPILED_SECONDS = 150.0     # compiling and running (CPU s; a big program: tens); past it, a hang
FD_STEP = 1e-6
FINER = (1e-3, 1e-4, 1e-5)   # the steps' scales for second looks at a disagreement
FLAT = "flat"                # a difference quotient of steps all absorbed (`difference_quotient`)


class Runaway(BaseException):
    """A run stopped by its timer (not an Exception, so no outcome catches it)."""


def load(path: str | Path, name: str | None = None):
    """Imports the program at `path` as module `name` (astjit reads its functions' source)."""
    path = Path(path)
    name = name or path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def timed(seconds: float, call: Callable[[], object]) -> tuple[str, object]:
    """("ok", result) or ("raise", exception) of `call()`; Runaway past `seconds` of CPU time.

    The process's CPU time (ITIMER_PROF), not the wall clock's: on a loaded machine (a
    campaign beside a test suite, or at low priority) a program waits for a core for longer
    than it runs, and a wall-clock limit called such waits hangs. Compiled loops answer the
    timer's signal as they answer Ctrl-C (`backend/llvm/interrupts.py`).
    """
    def expire(signum, frame):
        raise Runaway()

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        return "ok", call()
    except Exception as exc:  # noqa: BLE001 - every exception is an outcome to compare
        return "raise", exc
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def judge(module) -> dict:
    """{"verdict": ok | mismatch | refused | skipped, "detail": ..., "grad": ...}."""
    fn = getattr(module, module.ENTRY)
    ref_args, got_args = module.make_args(), module.make_args()
    try:
        ref = timed(REFERENCE_SECONDS, lambda: fn(*ref_args))
    except Runaway:
        return {"verdict": "skipped", "detail": f"CPython ran past {REFERENCE_SECONDS} s"}
    try:
        got = timed(COMPILED_SECONDS, lambda: astjit.jit(fn)(*got_args))
    except Runaway:
        return verdict("mismatch", "the compiled run did not finish", ref, ("hang", None))
    if got[0] == "raise" and isinstance(got[1], astjit.CompileError):
        return verdict("refused", first_line(got[1]), ref, got)
    if ref[0] == "raise" or got[0] == "raise":
        agree = ref[0] == got[0] and isinstance(got[1], type(ref[1]))
        if not agree and module.TOLERANT and reachable(
                module, lambda: fn(*module.make_args()), got,
                lambda a, b: differ(a, b, tolerant=True, zero_sign_free=module.ZERO_SIGN_FREE) is None):
            return verdict("ok", "ill-conditioned; exceptions differ, as for a reference whose "
                                 "reductions round otherwise", ref, got)
        if not agree and nan_sign_reaches(
                module, lambda: fn(*module.make_args()), got,
                lambda a, b: differ(a, b, tolerant=module.TOLERANT,
                                    zero_sign_free=module.ZERO_SIGN_FREE) is None):
            return verdict("ok", f"{NAN_SIGN}; exceptions differ, as for a reference reading "
                                 "NaN signs otherwise", ref, got)
        return verdict("ok" if agree else "mismatch", "exceptions differ", ref, got)
    allowances = {"tolerant": module.TOLERANT, "zero_sign_free": module.ZERO_SIGN_FREE}
    difference = differ(ref[1], got[1], **allowances) or differ(ref_args, got_args, "args", **allowances)
    if difference and nan_sign_reaches(
            module, lambda: reference(module, fn), ("ok", (got[1], got_args)),
            lambda a, b: differ(a[0], b[0], **allowances) is None
            and differ(a[1], b[1], "args", **allowances) is None):
        return verdict("ok", f"{NAN_SIGN}; {difference}, as for a reference reading NaN signs "
                             "otherwise", ref, got)
    if difference and not (module.TOLERANT and within_spread(module, lambda: reference(module, fn),
                                                             (got[1], got_args))):
        return verdict("mismatch", difference, ref, got)
    result = verdict("ok", f"ill-conditioned; {difference}, within the rounding's spread" if difference
                     else "", ref, got)
    if module.GRAD_ARGNUMS and type(ref[1]) is float and math.isfinite(ref[1]) and finite(module.make_args()):
        result["grad"] = check_gradient(module, fn, ref[1])
        if result["grad"].startswith("mismatch"):
            result["verdict"], result["detail"] = "mismatch", result["grad"]
    return result


def reference(module, fn) -> tuple:
    """CPython's result and the arguments it leaves, on fresh arguments."""
    args = module.make_args()
    return fn(*args), args


def finite(value) -> bool:
    """Whether every float in `value` is finite: derivatives at infinities, or through the NaNs
    they make, are not what finite differences estimate."""
    if isinstance(value, (tuple, list)):
        return all(map(finite, value))
    if isinstance(value, dict):
        return all(map(finite, value.values()))
    if dataclasses.is_dataclass(value):
        return all(finite(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, (float, np.ndarray)):
        return bool(np.all(np.isfinite(value)))
    return True


def verdict(kind: str, detail: str, ref: tuple, got: tuple) -> dict:
    return {"verdict": kind, "detail": detail, "cpython": describe(ref), "compiled": describe(got)}


def describe(outcome: tuple) -> str:
    kind, value = outcome
    if kind == "raise":
        return f"raised {type(value).__name__}: {first_line(value)}"
    return f"returned {value!r}" if kind == "ok" else kind


def first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [""])[0][:300]


def differ(a, b, where: str = "result", tolerant: bool = False, zero_sign_free: bool = False,
           joined: bool = False) -> str | None:
    """Where `b` differs from the reference `a`, or None. `joined`: an int or bool of CPython's
    may be a float of equal value (astjit joins a variable's types: README, "Where astjit differs")."""
    def again(x, y, at):
        return differ(x, y, at, tolerant, zero_sign_free, joined)

    if joined and type(a) in (int, bool) and type(b) is float:
        return None if a == b else f"{where}: {b!r} vs {a!r}"
    if type(a) is not type(b):
        return f"{where}: {type(b).__name__} where CPython has {type(a).__name__} ({b!r} vs {a!r})"
    if isinstance(a, (tuple, list)):
        if len(a) != len(b):
            return f"{where}: length {len(b)} vs {len(a)}"
        return next(filter(None, (again(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b)))), None)
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(b)} vs {list(a)}"
        return next(filter(None, (again(a[k], b[k], f"{where}[{k!r}]") for k in a)), None)
    if dataclasses.is_dataclass(a):
        return next(filter(None, (again(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
                                  for f in dataclasses.fields(a))), None)
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{where}: {b.dtype}{b.shape} vs {a.dtype}{a.shape}"
        pairs = enumerate(zip(a.tolist(), b.tolist()))
        return next(filter(None, (again(x, y, f"{where}[{i}]") for i, (x, y) in pairs)), None)
    if isinstance(a, (float, np.floating)):
        equal = same_float(float(a), float(b), tolerant, zero_sign_free)
        return None if equal else f"{where}: {b!r} vs {a!r}"
    return None if a == b else f"{where}: {b!r} vs {a!r}"


def same_float(a: float, b: float, tolerant: bool, zero_sign_free: bool) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a == b:
        return zero_sign_free or tolerant or math.copysign(1.0, a) == math.copysign(1.0, b)
    return tolerant and math.isfinite(a) and abs(a - b) <= 1e-9 * max(abs(a), abs(b))


INTEGRAL_FLOATS = 2.0 ** 52
"""From here on every float is an integer: `g(x) // 1.0`, `floor(g(x))` are g itself in
floats, so differences see g's slope where AD (as JAX) gives a floor's 0."""


def check_gradient(module, fn, value: float) -> str:
    """value_and_grad against central differences, where the function is smooth near the point.

    Where every shifted value is bit-equal to the value, the steps were absorbed (`p + 1e299`
    is flat in floats, not in the reals AD differentiates) or the function is flat: a nonzero
    derivative there is compared with forward mode's (`jacfwd`) instead, and counted as *flat
    in floats* where they agree. So is a derivative that differences contradict where the
    function is constant a few ulps either side (`flat_nearby`): a piecewise-constant function
    of a steep one (`g(x) // 1.0` with g' ~ 1e10) has steps far finer than the differences'
    and derivative 0 (AD's, JAX's) where differences see g's slope. And so is one that
    differences contradict at every step where, at the finest, the function moves by its
    rounding alone (`rounding_at_the_finest_steps`: teeth lower than an ulp of the value)."""
    args = module.make_args()
    argnums = module.GRAD_ARGNUMS
    outcome = timed(COMPILED_SECONDS, lambda: astjit.value_and_grad(fn, argnums=argnums)(*args))
    if outcome[0] == "raise":
        if isinstance(outcome[1], astjit.CompileError):
            return "refused: " + first_line(outcome[1])
        return f"mismatch: the gradient raised {type(outcome[1]).__name__}: {first_line(outcome[1])}"
    got_value, grads = outcome[1]
    if not same_float(value, float(got_value), module.TOLERANT, module.ZERO_SIGN_FREE) and not (
            module.TOLERANT and within_spread(module, lambda: fn(*module.make_args()), float(got_value))):
        return f"mismatch: value_and_grad's value {got_value!r}, CPython {value!r}"
    args = module.make_args()
    where = [at for argnum in argnums for at in
             ([(argnum,)] if np.ndim(args[argnum]) == 0 else [(argnum, k) for k in range(len(args[argnum]))])]
    derivatives = [d for g in grads for d in np.ravel(g).tolist()]
    counts, forward = Counter(), []
    for number, (at, derivative) in enumerate(zip(where, derivatives)):
        estimate, source = difference_quotient(module, fn, at, value), "finite differences"
        if estimate is None:
            continue
        if not math.isfinite(derivative):  # through a point an op is not differentiable at:
            counts["singular"] += 1        # atan2(0.0, 0.0), sqrt(0.0) (AD's NaN, as JAX's)
            continue
        if estimate is FLAT:
            estimate, kind = 0.0, "compared"
            if not close(derivative, 0.0, value):  # absorbed steps, or a wrong nonzero derivative
                forward = forward or forward_derivatives(module, fn)
                if isinstance(forward, str):
                    return forward
                estimate, source, kind = forward[number], "jacfwd (flat in floats here)", "flat"
        elif not close(derivative, estimate, value) and flat_nearby(module, fn, at, value):
            forward = forward or forward_derivatives(module, fn)
            if isinstance(forward, str):
                return forward
            estimate, source, kind = forward[number], "jacfwd (piecewise constant here)", "flat"
        else:
            kind = "compared"
        if not close(derivative, estimate, value) and source == "finite differences":
            for scale in FINER:  # a steep argument of a sawtooth: the steps spanned its teeth
                finer = difference_quotient(module, fn, at, value, scale=scale)
                if finer is not None and finer is not FLAT and close(derivative, finer, value):
                    estimate = finer
                    break
        if not close(derivative, estimate, value) and source == "finite differences" \
                and rounding_at_the_finest_steps(module, fn, at, value, derivative):
            forward = forward or forward_derivatives(module, fn)
            if isinstance(forward, str):
                return forward
            estimate, source, kind = forward[number], "jacfwd (flat in floats at the finest steps)", "flat"
        counts[kind] += 1
        if not close(derivative, estimate, value) and abs(value) >= INTEGRAL_FLOATS:
            return "skipped: not smooth here (past 2**52 a floor is its argument)"
        if not close(derivative, estimate, value) and jumps_nearby(module, fn, at, value):
            return "skipped: not smooth here (a jump within a few ulps)"
        if not close(derivative, estimate, value) and teeth_below_an_ulp(module, fn, at, value, derivative):
            return "skipped: not smooth here (teeth narrower than an ulp)"
        if not close(derivative, estimate, value) and source.startswith("jacfwd") \
                and noisy(module, fn, at, number, derivative):
            return "skipped: the derivative is rounding noise here (it jumps between adjacent floats)"
        if not close(derivative, estimate, value):
            return f"mismatch: d/d(argument {'['.join(map(str, at))}{']' * (len(at) - 1)}) is " \
                   f"{derivative!r}, {source} {estimate!r}"
    flat = f", {counts['flat']} flat in floats" if counts["flat"] else ""
    if counts["compared"]:
        return f"compared {counts['compared']}{flat}"
    if counts["flat"]:
        return f"flat in floats: {counts['flat']} derivatives agree with jacfwd"
    return "singular: a NaN derivative" if counts["singular"] else "skipped: not smooth here"


def flat_nearby(module, fn, at: tuple[int, ...], value: float) -> bool:
    """Whether the function is bit-equal to `value` a few ulps of the argument `at` either side
    (locally constant: a floor, `//` or round of what the argument moves). One and four ulps,
    not more: a floor of a function whose slope moves it by a hundredth per ulp steps every
    hundred ulps or so (program 361 of seed 41303: 64 ulps crossed a step). The derivative
    is then compared with jacfwd's, not let through."""
    nearby = values_nearby(module, fn, at)
    return nearby is not None and all(result == value for _, result in nearby)


def values_nearby(module, fn, at: tuple[int, ...]) -> list[tuple[float, float]] | None:
    """(offset in ulps, the function's value) at one and four ulps of argument `at` either
    side, nearest first; None where one of them raised or is not a finite float."""
    nearby = []
    for ulps in (1.0, -1.0, 4.0, -4.0):
        args = ulps_away(module, at, ulps)
        kind, result = timed(REFERENCE_SECONDS, lambda: fn(*args))
        if kind != "ok" or type(result) is not float or not math.isfinite(result):
            return None
        nearby.append((ulps, result))
    return nearby


def jumps_nearby(module, fn, at: tuple[int, ...], value: float) -> bool:
    """Whether the function jumps within a few ulps of argument `at`: one side's change is
    a thousand times the other's and the rounding's. `math.fmod(x, x ** 2)` at 1e-8 has
    slope -1 and teeth 1e-16 wide, and its point lay half an ulp from a tooth's edge (seed
    41305, program 8005): every difference quotient spans a jump, and AD's derivative is
    one side's."""
    nearby = values_nearby(module, fn, at)
    if nearby is None:
        return False
    moved = [abs(result - value) for _, result in nearby]
    return any(max(pair) > 1e3 * (min(pair) + 4 * math.ulp(value)) for pair in (moved[:2], moved[2:]))


def teeth_below_an_ulp(module, fn, at: tuple[int, ...], value: float, derivative: float) -> bool:
    """Whether the function is a sawtooth whose teeth are narrower than an ulp of argument
    `at`: an ulp or four either side it moves by less than a thousandth of what the slope
    `derivative` would move it, and not as a slope does (its one-sided quotients disagree by
    more than half their size and more than a few ulps of the value can make them). `p %
    atan2(p, 1e300 / (p + 1))` (seed 41309, program 8479) has slope -0.72 on teeth 1e-299
    wide: no difference of floats sees a tooth, and AD's slope is one tooth's. A smooth
    function moves as its slope says, so a derivative wrong by a factor is still caught."""
    nearby = values_nearby(module, fn, at)
    if nearby is None:
        return False
    ulp = math.ulp(float(np.asarray(module.make_args()[at[0]])[at[1:]]))
    if any(abs(result - value) > 1e-3 * abs(derivative) * abs(ulps) * ulp for ulps, result in nearby):
        return False
    quotients = [(result - value) / (ulps * ulp) for ulps, result in nearby]
    spread, largest = max(quotients) - min(quotients), max(map(abs, quotients))
    return spread > max(0.5 * largest, 8 * math.ulp(value) / ulp)


def rounding_at_the_finest_steps(module, fn, at: tuple[int, ...], value: float,
                                 derivative: float) -> bool:
    """Whether, at the finest steps `check_gradient` differences with (scale FINER[-1]), the
    function moves by no more than its value's rounding (four ulps) where the slope
    `derivative` would move it a thousand times that: flat in floats there, as where
    steps are absorbed, so the derivative is compared with forward mode's. `(2.5 * p) %
    (2.5 * p) ** 2 - 8` at 1e-8 (seed 41332, program 4304) has slope -2.5 on teeth
    2.5e-16 wide and 6e-16 high: below an ulp of its value, 8, at any step within a tooth,
    while every step the differences take spans thousands of teeth."""
    x = float(np.asarray(module.make_args()[at[0]])[at[1:]])
    step = FINER[-1] * FD_STEP * max(1.0, abs(x))
    rounding = 4 * math.ulp(value)
    if abs(derivative) * step <= 1e3 * rounding:
        return False
    for delta in (step, -step, step / 4, -step / 4):
        result = shifted(module, fn, at, delta)
        if result is None or abs(result - value) > rounding:
            return False
    return True


def noisy(module, fn, at: tuple[int, ...], number: int, derivative: float) -> bool:
    """Whether reverse mode's derivative `number` (at argument `at`) is rounding noise: not
    close to itself an ulp or a few of the argument either side. Where forward and reverse
    mode disagree on a function flat in floats, each may be a rounding error times a huge
    factor (`1e300 % (x * (p * p / (p * p)))`: p * p / (p * p)'s derivative is 0 in the
    reals, about 1e-17 in floats, each mode's a different one), which no mode gets right;
    a wrong derivative of a true slope stays put across adjacent floats."""
    for ulps in (1, 4):
        for sign in (1.0, -1.0):
            args = ulps_away(module, at, sign * ulps)
            kind, result = timed(COMPILED_SECONDS, lambda: astjit.value_and_grad(
                fn, argnums=module.GRAD_ARGNUMS)(*args))
            if kind != "ok":
                return False
            there = [d for g in result[1] for d in np.ravel(g).tolist()][number]
            if not close(there, derivative, 0.0):
                return True
    return False


def ulps_away(module, at: tuple[int, ...], ulps: float) -> list:
    """The arguments with argument `at` ((argnum,) or (argnum, element)) moved `ulps` of its
    ulps."""
    args = list(module.make_args())
    x = float(np.asarray(args[at[0]])[at[1:]])
    moved = x + ulps * math.ulp(x)
    if len(at) == 1:
        args[at[0]] = type(args[at[0]])(moved)
    else:
        args[at[0]][at[1]] = moved
    return args


def forward_derivatives(module, fn) -> list[float] | str:
    """Forward mode's derivatives in the order `check_gradient` walks them, or its verdict
    where jacfwd raised."""
    kind, jacobian = timed(COMPILED_SECONDS,
                           lambda: astjit.jacfwd(fn, argnums=module.GRAD_ARGNUMS)(*module.make_args()))
    if kind == "raise":
        if isinstance(jacobian, astjit.CompileError):
            return "refused: jacfwd: " + first_line(jacobian)
        return f"mismatch: jacfwd raised {type(jacobian).__name__}: {first_line(jacobian)}"
    return [d for j in jacobian for d in np.ravel(j).tolist()]


def close(derivative: float, estimate: float, value: float) -> bool:
    return abs(derivative - estimate) <= 1e-4 * (1.0 + abs(estimate)) + 1e-8 * abs(value) / FD_STEP


def difference_quotient(module, fn, at: tuple[int, ...], value: float,
                        scale: float = 1.0) -> float | str | None:
    """The central difference in argument `at` ((argnum,) or (argnum, element)) at two steps,
    FLAT where every shifted value is the value itself (the steps were absorbed), or None where
    the function is not smooth there (the one-sided quotients disagree: a kink, a jump, a branch
    taken) or raises. `scale` shrinks the steps: a periodic function of a steep one (`g(x) % m`,
    g' ~ 1e6) agrees with itself at both default steps, each spanning many periods, on the
    average slope of its teeth, not the derivative; `check_gradient` asks again at FINER steps
    before it calls a disagreement a mismatch, down to a hundred-thousandth where a
    thousandth still spans an edge (`fmod(sin(1), -6 / (p ** q + 1))`, teeth 5e-8 wide in q,
    the point 8e-9 from an edge: seed 41311, program 1247); finer, the rounding of the
    function's values is more than the differences."""
    x = float(np.asarray(module.make_args()[at[0]])[at[1:]])
    estimates, flat = [], True
    for h in (scale * FD_STEP * max(1.0, abs(x)), scale * FD_STEP * max(1.0, abs(x)) / 4):
        up, down = shifted(module, fn, at, h), shifted(module, fn, at, -h)
        if up is None or down is None:
            return None
        flat = flat and up == down == value
        forward, backward = (up - value) / h, (value - down) / h
        if abs(forward - backward) > 1e-3 * (1.0 + abs(forward) + abs(backward)):
            return None
        estimates.append((up - down) / (2 * h))
    if flat:
        return FLAT
    if abs(estimates[0] - estimates[1]) > 1e-4 * (1.0 + abs(estimates[0])):
        return None
    return estimates[1]


def shifted(module, fn, at: tuple[int, ...], delta: float) -> float | None:
    """CPython's value with argument `at` ((argnum,) or (argnum, element)) moved by `delta`,
    or None where it raised or is not a finite float."""
    args = list(module.make_args())
    if len(at) == 1:
        args[at[0]] += delta
    else:
        args[at[0]][at[1]] += delta
    kind, result = timed(REFERENCE_SECONDS, lambda: fn(*args))
    return result if kind == "ok" and type(result) is float and math.isfinite(result) else None


def main(path: str) -> None:
    """`python PROGRAM.py`: judges the program in that file and prints the verdict."""
    result = judge(load(path, "__fuzz_program__"))
    for key, text in result.items():
        print(f"{key}: {text}")
    raise SystemExit(1 if result["verdict"] == "mismatch" else 0)
