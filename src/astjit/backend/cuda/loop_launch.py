"""The host's side of an element loop's kernel (element_loops.py): before the one launch,
the checks the CPU would make during the loop, made for the whole range at once.

- Bounds: every access of every iteration is in bounds (Python's negative wrap), and the
  counter's wrapped indices are distinct (`range(-3, 3)` of 5 elements touches `y[2]`
  twice), so no two threads touch one element.
- Aliasing: no array the loop writes shares memory with another array it accesses, unless
  both are the same view accessed at the same indices (then thread `i` alone touches its
  elements). A pointer-range check, whatever the arrays' dtypes: conservative for
  interleaved views, which then run on the host.

If either fails, the interpreter's own step runs the loop on the host, one element at a
time: it raises the CPU's IndexError at the same iteration after the same writes. So
does a checked loop (one whose ops raise with Python's semantics) whose dry launch found
an iteration that raises: the host raises the CPU's exception after the CPU's writes.
"""
from __future__ import annotations

from ...ir.core import Node
from ...ir.interp import Step
from ...ir.types import ArrayType
from .element_loops import COUNTER, THREADS, element_loop
from .space import kernel_scalar


class ElementLoopLaunch:
    """A parallel element loop's step: the checks, then one launch (a checked loop's dry
    launch before it); else `host`, the interpreter's own step (the loop one element at a
    time)."""

    def __init__(self, device, node: Node, name: str, inputs: list[int], outputs: list[int],
                 host: Step):
        self.device, self.name, self.inputs, self.outputs = device, name, inputs, outputs
        self.host = host
        self.plan = element_loop(node)
        self.n = node.attrs["n_invariants"]

    def step(self, frame: list) -> None:
        values = [frame[s] for s in self.inputs]
        start, stop = values[self.n], values[self.plan.stop]
        if start >= stop:
            frame[self.outputs[0]] = start
            return
        if not (self.in_bounds(values, start, stop) and self.apart(values)):
            return self.host(frame)
        args = []
        for k, t in sorted(self.plan.used.items()):
            a = values[k]
            if isinstance(t, ArrayType):
                args += [a, *a.shape, *(s // a.itemsize for s in a.strides)]
            else:
                args.append(kernel_scalar(a, t))
        grid = max(1, min(-(-(stop - start) // THREADS), self.device.max_blocks))
        args += [start, stop]
        if self.plan.checked:
            error = self.device.xp.zeros(1, dtype="int32")
            self.device.launch(self.name, grid, THREADS, args + [error, 1])  # dry: no writes
            if int(error[0]):
                return self.host(frame)
            args += [error, 0]
        self.device.launch(self.name, grid, THREADS, args)
        frame[self.outputs[0]] = stop

    def in_bounds(self, values: list, start: int, stop: int) -> bool:
        """Every access of every iteration in bounds, the counter's indices distinct."""
        for k, patterns in self.plan.patterns.items():
            shape = values[k].shape
            for pattern in patterns:
                for n, index in zip(shape, pattern):
                    if index == COUNTER:
                        if not (-n <= start and stop <= n and stop - start <= n):
                            return False
                        continue
                    value = values[index[1]] if index[0] == "p" else index[1]
                    if not -n <= value < n:
                        return False
        return True

    def apart(self, values: list) -> bool:
        """No written array shares memory with another array of the loop, unless both are
        the same view accessed at the same indices."""
        arrays = sorted(self.plan.patterns)
        for k in self.plan.written:
            for q in arrays:
                if q == k or values[q] is values[k] and self.plan.patterns[q] == self.plan.patterns[k]:
                    continue
                a, b = values[k], values[q]
                same = _extent(a) == _extent(b) and a.shape == b.shape and a.strides == b.strides \
                    and a.dtype == b.dtype and self.plan.patterns[q] == self.plan.patterns[k]
                if not same and _overlap(_extent(a), _extent(b)):
                    return False
        return True


def _extent(a) -> tuple[int, int] | None:
    """The bytes [first, end) array `a` spans (a CuPy array's or a NumPy one's), or None."""
    if a.size == 0:
        return None
    ptr = a.data.ptr if hasattr(a.data, "ptr") else a.__array_interface__["data"][0]
    low = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s > 0)
    return ptr + low, ptr + high + a.itemsize


def _overlap(a, b) -> bool:
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]
