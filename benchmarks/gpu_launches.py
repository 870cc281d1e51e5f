"""Kernel launches and memory traffic of astjit's GPU code, counted without a GPU.

Usage: python benchmarks/gpu_launches.py [--list] [--dump [DIR]]

Each case runs once through `jit(fn, target="cuda-sim")`: the same host program
and the same generated CUDA C as `target="gpu"`, the kernels run by the host
simulator. The script counts, for one call after a warm-up one:

- kernel launches: `SimDevice.launch` wrapped (here only). The bytes of a launch
  are the `nbytes` of its array arguments, read where the kernel's C parameter is
  `const T*` and written where it is `T*` (`DeviceEntry.program.kernels`, the C
  signatures, reached through `jitted.dispatcher.specializations[...].compiled`);
- cuBLAS calls: a matrix product the host program runs (`matmul` in the optimized
  IR) is `cupy.matmul` on a GPU; counted from the NumPy ufunc call on device arrays
  (`SimArray.__array_ufunc__` wrapped here), bytes = its operands + its result;
- other device ops: any other NumPy ufunc, reduction or array function the host
  program applies to a device array (an `OnHost` op: `sum_to_like`'s sum,
  `np.zeros_like`'s `empty_like` + `out[...] = 0`), and any `a[...] = v` into one, is a
  CuPy kernel on a GPU (NEP 18 dispatch), counted and sized the same way (a call inside
  another is not counted again; `empty_like` and views cost nothing); `xp.zeros` of
  the host program (an error flag) is a memset;
- transfers: an array made on the host and moved to the device (`Device.to_device`
  of a NumPy array, e.g. `np.zeros_like` of the host program) is a host-to-device
  copy; `.item()` or a scalar index of a device array a device-to-host read (a
  synchronisation on a GPU). They are listed beside the launches, not in them.

The arguments are passed as device arrays (SimArray), as a GPU caller passes CuPy
arrays, so moving the caller's arrays is not counted.

"launches" = kernels + cuBLAS calls + other device ops. "bytes" = what those
launches read and write in device memory. "minimum" = the computation's inputs read
once and its outputs written once. Nothing is timed: the simulator's speed says
nothing about a GPU's.

The CuPy column is a model of the same program written with CuPy array operations
(the case's NumPy code, `mlp_step_numpy` for the MLP: the backward pass by hand):
the code is run on NumPy arrays of a tracing subclass (`CupyModel`) that records one
kernel per NumPy API call that makes an array (each ufunc, each reduction such as
`np.max(x, axis=1)` or `np.mean`; calls inside another call are not counted again)
and one cuBLAS call per matmul, each reading its array operands once and writing its
result once. Views (`.T`, reshape) cost nothing. This is how CuPy runs such code:
each elementwise op and each reduction is one kernel (with CUB a full reduction to a
scalar may take two), a product one cuBLAS call.

How many kernels a reduction takes depends on the device only through `max_blocks`
(8 here, 32 per SM on a GPU): a reduction with fewer outputs than that is split
into chunks and finished by a second kernel. That holds for the same reductions at
these sizes and at the GPU sizes of gpu_run.py (one output: 2 kernels; rows >
max_blocks or few columns: 1), so the counts carry over; the bytes scale with size.

`--dump DIR` writes each case's CUDA source (`f.ir(..., stage="cuda")`) to
DIR/<case>.cu (default benchmarks/_build/gpu_launches/).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from array_kernels import (
    MLP_LAYERS,
    expression,
    mlp_batch,
    mlp_step,
    mlp_step_numpy,
    softmax,
    sum_squares,
)
from engines import BUILD_DIR
from report import fmt_ratio

import astjit
from astjit.backend.cuda.devices import SimArray, SimDevice

DUMP_DIR = BUILD_DIR / "gpu_launches"
BYTES_LIMIT = 1.05
"""The issue's target: fused expression and softmax within 5% of the minimum bytes."""


# ---- what one call does on the device ------------------------------------------------------

@dataclass
class DeviceOp:
    """One launch or transfer: what it is, where it came from, and its bytes."""

    kind: str
    """"kernel", "cuBLAS", "device op", "memset", "H2D" or "D2H"."""
    name: str
    read: int = 0
    written: int = 0

    @property
    def launch(self) -> bool:
        return self.kind in ("kernel", "cuBLAS", "device op", "memset")


@dataclass
class Recorder:
    """The device ops of the calls made inside `recording`."""

    device: object = None
    signatures: dict[str, list[str]] = field(default_factory=dict)
    ops: list[DeviceOp] = field(default_factory=list)
    host_op: str = "?"
    """The IR op the host program is running (names device ops and transfers)."""
    in_kernel: bool = False
    depth: int = 0
    """How deep in NumPy calls on device arrays (a call inside another is not counted)."""

    @property
    def on(self) -> bool:
        return self.device is not None and not self.in_kernel and self.depth == 0

    @contextlib.contextmanager
    def recording(self, device, signatures: dict[str, list[str]]):
        self.device, self.signatures, self.ops = device, signatures, []
        try:
            yield self.ops
        finally:
            self.device = None


RECORDER = Recorder()


def _nbytes(values) -> int:
    return sum(v.nbytes for v in values if isinstance(v, np.ndarray))


def _flat(values) -> list:
    found = []
    for v in values:
        found += _flat(v) if isinstance(v, (tuple, list)) else [v]
    return found


def install() -> None:
    """Wrap the simulator's device (this process only) so that `RECORDER` sees its work."""
    launch, to_device, xp = SimDevice.launch, SimDevice.to_device, SimDevice.xp

    def counted_launch(self, name, grid, block, args):
        if self is RECORDER.device and not RECORDER.in_kernel:
            params = RECORDER.signatures[name]
            arrays = [(p, a) for p, a in zip(params, args) if isinstance(a, np.ndarray)]
            if any(not p.endswith("*") for p, _ in arrays):
                raise AssertionError(f"{name}: an array passed for a scalar parameter")
            RECORDER.ops.append(DeviceOp(
                "kernel", name,
                read=sum(a.nbytes for p, a in arrays if p.startswith("const ")),
                written=sum(a.nbytes for p, a in arrays if not p.startswith("const "))))
        RECORDER.in_kernel = True
        try:
            launch(self, name, grid, block, args)
        finally:
            RECORDER.in_kernel = False

    def counted_to_device(value):
        if RECORDER.on and type(value) is np.ndarray:
            RECORDER.ops.append(DeviceOp("H2D", RECORDER.host_op, written=value.nbytes))
        return to_device(value)

    def counted_zeros(shape, dtype):
        made = xp.zeros(shape, dtype)
        if RECORDER.on:
            RECORDER.ops.append(DeviceOp("memset", RECORDER.host_op, written=made.nbytes))
        return made

    def array_ufunc(self, ufunc, method, *inputs, **kwargs):
        plain = [i.view(np.ndarray) if isinstance(i, SimArray) else i for i in inputs]
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, SimArray) else o for o in out)
        RECORDER.depth += 1
        try:
            result = getattr(ufunc, method)(*plain, **kwargs)
        finally:
            RECORDER.depth -= 1
        if RECORDER.on:
            made = _flat([result]) if out is None else list(kwargs["out"])
            kind = "cuBLAS" if ufunc is np.matmul else "device op"
            name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
            RECORDER.ops.append(DeviceOp(kind, f"{RECORDER.host_op}: {name}",
                                         read=_nbytes(plain), written=_nbytes(made)))
        if out is not None:
            return out[0] if len(out) == 1 else out
        if isinstance(result, tuple):
            return tuple(r.view(SimArray) if isinstance(r, np.ndarray) else r for r in result)
        return result.view(SimArray) if isinstance(result, np.ndarray) else result

    def array_function(self, func, types, args, kwargs):
        RECORDER.depth += 1
        try:
            result = np.ndarray.__array_function__(self, func, types, args, kwargs)
        finally:
            RECORDER.depth -= 1
        if RECORDER.on and func.__name__ not in FREE_FUNCTIONS | ALLOCATING:
            RECORDER.ops.append(DeviceOp(
                "device op", f"{RECORDER.host_op}: np.{func.__name__}",
                read=_nbytes(_flat(list(args) + list(kwargs.values()))),
                written=_nbytes(_flat([result]))))
        return result

    item, getitem, setitem = np.ndarray.item, np.ndarray.__getitem__, np.ndarray.__setitem__

    def counted_setitem(self, key, value):
        if RECORDER.on:
            target = getitem(self, key)
            RECORDER.ops.append(DeviceOp(
                "device op", f"{RECORDER.host_op}: a[...] = v",
                read=value.nbytes if isinstance(value, np.ndarray) else 0,
                written=target.nbytes if isinstance(target, np.ndarray) else self.itemsize))
        RECORDER.depth += 1
        try:
            setitem(self, key, value)
        finally:
            RECORDER.depth -= 1

    def counted_item(self, *args):
        if RECORDER.on:
            RECORDER.ops.append(DeviceOp("D2H", RECORDER.host_op, read=self.itemsize))
        return item(self, *args)

    def counted_getitem(self, key):
        found = getitem(self, key)
        if RECORDER.on and not isinstance(found, np.ndarray):
            RECORDER.ops.append(DeviceOp("D2H", RECORDER.host_op, read=self.itemsize))
        return found

    SimDevice.launch = counted_launch
    SimDevice.to_device = staticmethod(counted_to_device)
    SimDevice.xp = type(xp)(empty=xp.empty, zeros=counted_zeros)
    SimArray.__array_ufunc__ = array_ufunc
    SimArray.item = counted_item
    SimArray.__getitem__ = counted_getitem
    SimArray.__setitem__ = counted_setitem
    SimArray.__array_function__ = array_function
    _name_host_ops()


def _name_host_ops() -> None:
    """The host program's steps, wrapped so that a device op or transfer is named after
    the IR op that made it (the step factory is looked up in entry.py at each compile)."""
    from astjit.backend.cuda import entry

    device_steps = entry.device_steps

    def named_steps(device, launches):
        inner = device_steps(device, launches)

        def step(node, inputs, outputs, own):
            found = inner(node, inputs, outputs, own)
            if node in launches:
                name = "result of " + "/".join(launches[node])
            elif node.regions:
                return found
            else:
                name = node.op
            run = found or own()

            def named(frame):
                RECORDER.host_op = name
                try:
                    run(frame)
                finally:
                    RECORDER.host_op = "?"
            return named
        return step

    entry.device_steps = named_steps


# ---- the CuPy model ------------------------------------------------------------------------

FREE_FUNCTIONS = {"transpose", "reshape", "shape", "ndim", "size", "result_type", "squeeze",
                  "expand_dims", "broadcast_to", "may_share_memory", "shares_memory"}
"""NumPy API calls that make views or read metadata: no kernel in CuPy either."""
ALLOCATING = {"empty_like", "empty"}
"""Allocations without a fill: no kernel."""


class CupyModel(np.ndarray):
    """A NumPy array standing for a CuPy one: each NumPy call that makes an array is
    recorded as the kernel (or cuBLAS call) CuPy would launch for it."""

    ops: list[DeviceOp] = []
    depth = 0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [i.view(np.ndarray) if isinstance(i, CupyModel) else i for i in inputs]
        if "out" in kwargs:
            raise NotImplementedError("the CuPy model does not take out=")
        CupyModel.depth += 1
        try:
            result = getattr(ufunc, method)(*plain, **kwargs)
        finally:
            CupyModel.depth -= 1
        name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        return self._record(name, ufunc is np.matmul, plain, result)

    def __array_function__(self, func, types, args, kwargs):
        CupyModel.depth += 1
        try:
            result = super().__array_function__(func, types, args, kwargs)
        finally:
            CupyModel.depth -= 1
        if func.__name__ in FREE_FUNCTIONS:
            return result
        return self._record(func.__name__, False, _flat(list(args) + list(kwargs.values())), result)

    @staticmethod
    def _record(name: str, matmul: bool, operands: list, result):
        if CupyModel.depth == 0:
            made = _flat([result])
            CupyModel.ops.append(DeviceOp("cuBLAS" if matmul else "kernel", name,
                                          read=_nbytes(operands),
                                          written=sum(np.asarray(m).nbytes for m in made)))
        if isinstance(result, np.ndarray) and not isinstance(result, CupyModel):
            return result.view(CupyModel)
        return result


def cupy_model(fn: Callable, args: tuple) -> list[DeviceOp]:
    """The kernels and cuBLAS calls of `fn` written with CuPy arrays (see the module doc)."""
    CupyModel.ops = []
    fn(*[a.view(CupyModel) if isinstance(a, np.ndarray) else a for a in args])
    return CupyModel.ops


# ---- the cases -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    name: str
    label: str
    fn: Callable
    cupy_fn: Callable
    """The same program as CuPy array code (the NumPy code run on CupyModel arrays)."""
    args: Callable[[], tuple]
    one_launch: bool = False
    """Targets: one launch and ≤ BYTES_LIMIT × the minimum bytes (else: fewer launches than CuPy)."""
    fewer_than_cupy: bool = False


def _float32_ramps(n: int) -> tuple:
    return (np.linspace(-3.0, 3.0, n, dtype=np.float32),
            np.linspace(-2.0, 2.0, n, dtype=np.float32)[::-1].copy())


def _float32_rows(rows: int, cols: int) -> tuple:
    return ((np.random.default_rng(2).standard_normal((rows, cols)) * 3.0).astype(np.float32),)


EXPRESSION_N = 1 << 16
SOFTMAX_SHAPE = (256, 512)
SUM_N = 1 << 16
MLP_BATCH = 256

CASES = [
    Case("expression", f"n = {EXPRESSION_N}, float32", expression, expression,
         lambda: _float32_ramps(EXPRESSION_N), one_launch=True),
    Case("softmax", f"{SOFTMAX_SHAPE[0]}×{SOFTMAX_SHAPE[1]}, float32", softmax, softmax,
         lambda: _float32_rows(*SOFTMAX_SHAPE), one_launch=True),
    Case("sum_squares", f"n = {SUM_N}, float32", sum_squares, sum_squares,
         lambda: (np.random.default_rng(1).standard_normal(SUM_N).astype(np.float32),)),
    Case("mlp_step", "→".join(map(str, MLP_LAYERS)) + f", batch {MLP_BATCH}, float32",
         mlp_step, mlp_step_numpy, lambda: mlp_batch(MLP_BATCH), fewer_than_cupy=True),
]


@dataclass
class Measured:
    case: Case
    ops: list[DeviceOp]
    cupy: list[DeviceOp]
    minimum: int
    agrees: bool
    source: str

    @staticmethod
    def launches(ops: list[DeviceOp]) -> int:
        return sum(op.launch for op in ops)

    @staticmethod
    def traffic(ops: list[DeviceOp]) -> int:
        return sum(op.read + op.written for op in ops if op.launch)

    def count(self, kind: str) -> int:
        return sum(op.kind == kind for op in self.ops)


def measure(case: Case) -> Measured:
    args = case.args()
    expected = case.fn(*args)
    jitted = astjit.jit(case.fn, target="cuda-sim")
    on_device = [a.view(SimArray) if isinstance(a, np.ndarray) else a for a in args]
    jitted(*on_device)  # compiles; the device is made on the first call
    (specialization,) = jitted.dispatcher.specializations.values()
    compiled = specialization.compiled
    with RECORDER.recording(compiled.device, compiled.program.kernels) as ops:
        got = jitted(*on_device)
    agrees = all(np.allclose(np.asarray(g), np.asarray(e), rtol=1e-4, atol=1e-6)
                 for g, e in zip(_flat([got]), _flat([expected]), strict=True))
    minimum = _nbytes(args) + sum(np.asarray(e).nbytes for e in _flat([expected]))
    return Measured(case, list(ops), cupy_model(case.cupy_fn, args), minimum, agrees,
                    compiled.cuda_source)


# ---- the report ----------------------------------------------------------------------------

def _size(n: int) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def summary_table(results: list[Measured]) -> str:
    rows = []
    for r in results:
        launches, cupy_launches = r.launches(r.ops), r.launches(r.cupy)
        traffic, cupy_traffic = r.traffic(r.ops), r.traffic(r.cupy)
        split = f"{r.count('kernel')} + {r.count('cuBLAS')} + {r.count('device op') + r.count('memset')}"
        transfers = f"{r.count('H2D')} / {r.count('D2H')}"
        rows.append([r.case.name + ("" if r.agrees else " ✗"), r.case.label, str(launches), split,
                     str(cupy_launches), fmt_ratio(launches / cupy_launches), _size(traffic),
                     _size(r.minimum), fmt_ratio(traffic / r.minimum), _size(cupy_traffic),
                     fmt_ratio(cupy_traffic / r.minimum), fmt_ratio(traffic / cupy_traffic),
                     transfers])
    return markdown(["case", "size", "launches", "kernels + cuBLAS + other", "CuPy launches",
                     "launches / CuPy", "bytes", "minimum", "bytes / min", "CuPy bytes",
                     "CuPy / min", "bytes / CuPy", "H2D / D2H"], rows)


def launch_list(r: Measured) -> str:
    rows = [[op.kind, op.name, _size(op.read), _size(op.written)] for op in r.ops]
    return f"{r.case.name} (astjit):\n" + markdown(["kind", "name", "read", "written"], rows)


def targets(results: list[Measured]) -> list[str]:
    lines = []
    for r in results:
        launches, ratio = r.launches(r.ops), r.traffic(r.ops) / r.minimum
        if r.case.one_launch:
            ok = launches == 1 and ratio <= BYTES_LIMIT
            lines.append(f"{'✓' if ok else '✗'} {r.case.name}: 1 launch and ≤ {BYTES_LIMIT}× the "
                         f"minimum bytes: {launches} launch{'es' * (launches != 1)}, "
                         f"{ratio:.2f}× the minimum")
        if r.case.fewer_than_cupy:
            cupy = r.launches(r.cupy)
            ok = launches < cupy
            lines.append(f"{'✓' if ok else '✗'} {r.case.name}: fewer launches than CuPy array "
                         f"code: {launches} against {cupy}")
    return lines


def notes(results: list[Measured]) -> list[str]:
    lines = []
    for r in results:
        if not r.agrees:
            lines.append(f"{r.case.name}: the cuda-sim result differs from NumPy's (✗)")
        made = sorted({op.name for op in r.ops if op.kind == "H2D"})
        if made:
            lines.append(f"{r.case.name}: arrays made on the host and copied to the device by: "
                         + ", ".join(made))
        other = sorted({op.name for op in r.ops if op.kind in ("device op", "memset")})
        if other:
            lines.append(f"{r.case.name}: device ops of the host program (CuPy kernels on a "
                         "GPU): " + ", ".join(other))
        reads = sorted({op.name for op in r.ops if op.kind == "D2H"})
        if reads:
            lines.append(f"{r.case.name}: device-to-host reads (a synchronisation each) by: "
                         + ", ".join(reads))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list every launch of each case")
    parser.add_argument("--dump", nargs="?", const=str(DUMP_DIR), metavar="DIR",
                        help=f"write each case's CUDA source to DIR/<case>.cu (default {DUMP_DIR})")
    options = parser.parse_args(argv)
    install()
    results = [measure(case) for case in CASES]
    print("GPU launches and bytes per call, counted with target='cuda-sim' (no timings)\n")
    print(summary_table(results))
    print("\nlaunches: kernels + cuBLAS + other device ops; bytes: what they read and write in "
          "device memory;\nminimum: inputs read once + outputs written once; H2D / D2H: "
          "host-to-device copies / device-to-host reads\n")
    for line in targets(results):
        print(line)
    extra = notes(results)
    if extra:
        print("\nNotes:")
        for line in extra:
            print("- " + line)
    if options.list:
        for r in results:
            print()
            print(launch_list(r))
    if options.dump:
        folder = Path(options.dump)
        folder.mkdir(parents=True, exist_ok=True)
        for r in results:
            path = folder / f"{r.case.name}.cu"
            path.write_text(r.source)
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
