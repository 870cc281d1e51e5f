"""What the kernel lowerings share: a `fused` node's kernel parameters, and the element
each thread reads, from its position in the broadcast iteration space.

Parameters, in this order (the host program passes them so, host.py):
- per input of the node: an array's pointer `a<k>` and its strides `a<k>_s<j>` (in
  elements, one per axis of its own, 0 where it is broadcast), or a scalar `s<k>`;
- per stored output: its pointer `o<j>`, C-contiguous over the whole space;
- the lowering's own (a reduction's buffer and counts);
- the space's lengths `n<axis>` and their product `total`;
- `astjit_error` when the region can fail (prelude.py).

Two variants of each kernel: `_c` reads every array input at the linear index (the
host launches it when each is C-contiguous with the space's shape), `_s` computes
coordinates and strided offsets.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy

from ...ir.core import Node
from ...ir.kernels import Kernel, fused_attrs
from ...ir.types import NUMPY_NAMES, ArrayType, ScalarType
from .csource import Source, c_type
from .scalars import needs_error_flag


@dataclass(frozen=True)
class Operand:
    """One input of a fused node as its kernel takes it."""

    dtype: ScalarType
    ndim: int | None
    """An array's ndim (aligned with the space's last axes), or None: a scalar."""
    ones: tuple[int, ...] = ()
    """Its own axes known to have length 1: read with stride 0, whatever the host passes."""


def operands_of(node: Node) -> list[Operand]:
    spec: Kernel = fused_attrs(node)
    ones = spec.ones or (None,) * len(node.inputs)
    found = []
    for v, ndim, known in zip(node.inputs, spec.plan, ones):
        dtype = v.type.dtype if isinstance(v.type, ArrayType) else v.type
        found.append(Operand(dtype, ndim, tuple(known or ())))
    return found


def parameters(node: Node, outputs: list[ScalarType], extra: list[str]) -> list[str]:
    """The kernel's C parameters (the module docstring's order)."""
    spec = fused_attrs(node)
    params = []
    for k, op in enumerate(operands_of(node)):
        if op.ndim is None:
            params.append(f"{c_type(op.dtype)} s{k}")
            continue
        params.append(f"const {c_type(op.dtype)}* __restrict__ a{k}")
        params += [f"long long a{k}_s{j}" for j in range(op.ndim)]
    params += [f"{c_type(t)}* __restrict__ o{j}" for j, t in enumerate(outputs)]
    params += extra
    params += [f"long long n{axis}" for axis in range(spec.ndim)] + ["long long total"]
    if needs_error_flag(node.regions[0]):
        params.append("int* __restrict__ astjit_error")
    return params


def kernel_scalar(value: object, t: ScalarType) -> object:
    """A scalar argument as a kernel parameter of type `t` takes it (a NumPy scalar of its
    dtype: CuPy and the simulator pass it as that C type)."""
    return numpy.dtype(NUMPY_NAMES[t.name]).type(value)


def element_strides(a, space: tuple[int, ...]) -> list[int]:
    """The strides of array `a` in elements, its axes aligned with the last ones of the
    broadcast `space`; 0 where it is broadcast (length 1 against a longer axis)."""
    lead = len(space) - a.ndim
    return [0 if a.shape[j] == 1 and space[lead + j] != 1 else a.strides[j] // a.itemsize
            for j in range(a.ndim)]


def coordinates(src: Source, ndim: int, index: str, axes: list[int], prefix: str = "c") -> None:
    """Declare `c<axis>` for `axes` (C order among themselves) from the linear `index`."""
    if not axes:
        return
    rest = src.fresh("rest")
    src.line(f"long long {rest} = {index};")
    for axis in reversed(axes[1:]):
        src.line(f"const long long {prefix}{axis} = {rest} % n{axis}; {rest} /= n{axis};")
    src.line(f"const long long {prefix}{axes[0]} = {rest};")


def load_inputs(src: Source, node: Node, contiguous: bool, index: str) -> list[str]:
    """Load each array input's element at the current point, at the linear `index`
    (contiguous) or at the coordinates `c<axis>`; the C names of the inputs' elements."""
    ndim = fused_attrs(node).ndim
    names = []
    for k, op in enumerate(operands_of(node)):
        if op.ndim is None:
            names.append(f"s{k}")
            continue
        if contiguous:
            offset = index
        else:
            terms = [f"c{ndim - op.ndim + j} * a{k}_s{j}" for j in range(op.ndim)
                     if j not in op.ones]
            offset = " + ".join(terms) or "0"
        src.line(f"const {c_type(op.dtype)} x{k} = a{k}[{offset}];")
        names.append(f"x{k}")
    return names


def linear_index(ndim: int) -> str:
    """The C-order linear index of the point with coordinates `c<axis>` in the space."""
    index = "c0"
    for axis in range(1, ndim):
        index = f"({index}) * n{axis} + c{axis}"
    return index if ndim else "0"
