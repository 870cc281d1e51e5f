"""The derivative rules of the operations on complex numbers that are not holomorphic:
np.real, np.imag, np.conj, np.abs, np.angle, np.sign (their entries: ops/complexes.py,
ops/scalar.py).

JAX's convention (docs/arrays.md: gradients), which makes the holomorphic ops' real rules
hold unchanged: a complex value w = u + iv carries the tangent dw = du + i dv, and the
adjoint dL/du - i dL/dv of a real result L. So `grad` of a real-valued f(z) is
df/dx - i df/dy, and the adjoint of a holomorphic op's operand is g * f'(z). A reverse
rule here is the transpose of the forward one in that pairing: for a real result r(z)
with dr = Re(c * dz), the adjoint of z is g * c (np.abs: c = conj(z) / |z|).

Each rule takes a real operand too (then the op is the identity, a zero or a step).
"""
from __future__ import annotations

from ..types import ArrayType, weak
from .vjp import c, div, is_complex, select


def to_complex(e, g, like):
    """The float (array) `g` as a complex of `like`'s dtype, its imaginary part zero."""
    t = like.type
    dtype = t.dtype if isinstance(t, ArrayType) else t
    if isinstance(g.type, ArrayType):
        return e.op("array_astype", g, dtype=weak(dtype))
    return e.op("cast", g, to=dtype)


def _times(e, g, factor):
    """g (a float adjoint) times `factor` (a complex): a complex adjoint."""
    return e.op("mul", to_complex(e, g, factor), factor)


def real_adjoint(e, g, x, out):
    """Re: the transpose of dz -> Re(dz) is g -> g + 0i."""
    return to_complex(e, g, x) if is_complex(x) else g


def imag_adjoint(e, g, x, out):
    """Im: the transpose of dz -> Im(dz) = Re(-i dz) is g -> -i g; of a real operand none."""
    if not is_complex(x):
        return None
    return _times(e, g, c(e, -1j, x))


def part_write_adjoint(e, read, part):
    """A write `np.real(z)[i] = v` / `np.imag(z)[i] = v`: z's adjoint there is
    dL/dx - i dL/dy, so v's is its real part (`read`, the real view of it), or minus its
    imaginary part (the imaginary view, negated)."""
    return e.op("neg", read) if part else read


def conj_adjoint(e, g, x, out):
    """conj: dz -> conj(dz), whose transpose is g -> conj(g)."""
    return e.op("conj", g) if is_complex(x) else g


def _magnitude_or_one(e, out):
    """|z|, or 1 where z is 0 (JAX's rules give 0 there: conj(0) / 1)."""
    return select(e, e.op("eq", out, c(e, 0.0, out)), c(e, 1.0, out), out)


def abs_adjoint(e, g, z, out):
    """|z|: d|z| = Re(conj(z) dz) / |z|, so the adjoint is g conj(z) / |z| (0 at z = 0)."""
    return _times(e, div(e, g, _magnitude_or_one(e, out)), e.op("conj", z))


def abs_tangent(e, dz, z, out):
    return div(e, e.op("real", e.op("mul", e.op("conj", z), dz)), _magnitude_or_one(e, out))


def _squared_magnitude(e, z):
    return e.op("real", e.op("mul", e.op("conj", z), z))


def angle_adjoint(e, g, z, out):
    """atan2(Im z, Re z): d angle = Im(conj(z) dz) / |z|^2 = Re(-i conj(z) dz) / |z|^2, so
    the adjoint is -i g conj(z) / |z|^2 (NaN at 0, as atan2's derivative there); of a real
    operand (a step) none."""
    if not is_complex(z):
        return None
    scaled = div(e, g, _squared_magnitude(e, z))
    return _times(e, scaled, e.op("mul", e.op("conj", z), c(e, -1j, z)))


def angle_tangent(e, dz, z, out):
    """Im(conj(z) dz) / |z|^2; of a real operand Im(dx), a zero."""
    if not is_complex(z):
        return e.op("imag", dz)
    return div(e, e.op("imag", e.op("mul", e.op("conj", z), dz)), _squared_magnitude(e, z))


def _sign_turn(e, z, out):
    """i s / |z| of s = sign(z) (0 at z = 0, where s is): ds is it times Im(conj(s) dz),
    the part of dz across z's ray (along the ray s does not change)."""
    magnitude = _magnitude_or_one(e, e.op("abs", z))
    return div(e, e.op("mul", out, c(e, 1j, out)), to_complex(e, magnitude, out))


def sign_tangent(e, dz, z, out):
    """np.sign(z) = z / |z|: ds = i s Im(conj(s) dz) / |z|."""
    across = e.op("imag", e.op("mul", e.op("conj", out), dz))
    return _times(e, across, _sign_turn(e, z, out))


def sign_adjoint(e, g, z, out):
    """The transpose of `sign_tangent`: with t = i s / |z|, Re(g t Im(conj(s) dz)) is
    Re(-i conj(s) dz) Re(g t), so the adjoint is -i conj(s) Re(g t)."""
    weight = e.op("real", e.op("mul", g, _sign_turn(e, z, out)))
    return _times(e, weight, e.op("mul", e.op("conj", out), c(e, -1j, out)))

