"""The host CPU as LLVM names it, read once per process.

The engine's target machines are made for it, the runtime cache's key names it
(`runtime_cache`, on a kernel's first call) and the lowerings ask it for single features
(vecmath's AVX2 and AVX-512, complex arithmetic's FMA);
asking LLVM again is not free (the features come back as a map of every feature LLVM
knows, flattened in Python, each time), and a process's CPU does not change.
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm


@functools.cache
def host_cpu() -> tuple[str, str]:
    """LLVM's name for the host CPU and the features astjit compiles for, flattened
    ("+avx2,-avx512f,..."): the host's, and on AVX-512 hosts no `prefer-256-bit`.

    LLVM keeps to 256-bit vectors on most AVX-512 CPUs (that tuning feature: Skylake to
    Sapphire Rapids; not Zen 4 and 5), but astjit's vector math and reductions ran faster
    with 512-bit ones (vecmath.py, reduction_nests.py). Preferring them in the machines'
    features, not by a function attribute (`"prefer-vector-width"`) on those kernels, keeps
    every function of a machine on one subtarget key: the code generator builds its
    tables for the host once per key and machine, and the first kernel with the
    attribute in a process built a second set (docs/measurements.md)."""
    features = llvm.get_host_cpu_features().flatten()
    if "+avx512f" in features.split(","):
        features += ",-prefer-256-bit"
    return llvm.get_host_cpu_name(), features


@functools.cache
def host_features() -> frozenset[str]:
    """The features the host CPU has ("avx2", "fma", ...), read from `host_cpu`'s."""
    return frozenset({entry[1:] for entry in host_cpu()[1].split(",") if entry[:1] == "+"})
