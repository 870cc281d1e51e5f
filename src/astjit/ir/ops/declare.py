"""Declaring a primitive: one call puts its complete, final `OpDef` in the table.

The rules an op's declaration gives are composed here, once: an elementwise
op's type rule is lifted to arrays (`elementwise.lift`) and to NumPy scalars
(`strong.with_strength`), its VJP rule reduces adjoints to the operands'
shapes (`vjp.unbroadcasting`), its symbolic shape is the broadcast of its
operands' (`shape_algebra.broadcast_rule`, unless it declares one), and it
batches as its array form (`batching.elementwise`, unless it declares its own
rule). Nothing
changes an entry after this, so the order in which the modules declaring ops
are imported does not matter.
"""
from __future__ import annotations

from ..shape_algebra import broadcast_rule
from . import batching
from .elementwise import BITWISE_UFUNCS, UFUNCS, lift
from .strong import with_strength
from .table import OPS, OnHost, OpDef
from .vjp import unbroadcasting


def _def(name, arity, rule, evaluate, llvm, traits=("pure",), *, vjp=None, zero_derivative=None,
         no_vjp=None, python=(), numpy=(), ufunc=None, cuda=None, **kw) -> OpDef:
    """Declare the primitive `name`: its scalar type `rule`, its Python `evaluate`, its CPU
    lowering `llvm`, `traits`; its VJP rule or why it has none (`zero_derivative`: its
    result does not change with float inputs; `no_vjp`: AD handles it elsewhere or
    refuses it); its Python and NumPy spellings and the NumPy function computing it
    (`ufunc`, by default the first NumPy spelling); its CUDA lowering `cuda`: how a kernel
    computes it (`CExpr`s) or how the host program runs it
    (`OnHost`, the default)."""
    assert name not in OPS, name
    traits = frozenset(traits)
    elementwise = "elementwise" in traits
    ufunc = ufunc or (numpy[0] if numpy else None)
    if elementwise:
        kw.setdefault("shape", broadcast_rule)  # NumPy broadcasting (ir/shape_algebra.py)
    if elementwise:
        kw.setdefault("batch", batching.elementwise())  # its array form (ops/batching.py)
    typed = with_strength(name, lift(name, rule) if elementwise else rule, traits, ufunc)
    OPS[name] = OpDef(name, arity, typed, evaluate, llvm, traits, **kw,
                      vjp=unbroadcasting(vjp) if vjp and elementwise else vjp,
                      zero_derivative=zero_derivative, no_vjp=no_vjp, scalar_rule=rule,
                      python=tuple(python), numpy=tuple(numpy), ufunc=ufunc,
                      cuda=cuda or OnHost())
    if ufunc:
        (UFUNCS if elementwise else BITWISE_UFUNCS)[name] = ufunc
    return OPS[name]
