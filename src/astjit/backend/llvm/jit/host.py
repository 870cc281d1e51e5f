"""The host CPU as LLVM names it, read once per process.

The engine's target machines are made for it, the runtime cache's key names it
(`runtime_cache`, on a kernel's first call) and the lowerings ask it for single features
(vecmath's AVX2 and AVX-512, a reduction's 512-bit vectors, complex arithmetic's FMA);
asking LLVM again is not free (the features come back as a map of every feature LLVM
knows, flattened in Python, each time), and a process's CPU does not change.
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm


@functools.cache
def host_cpu() -> tuple[str, str]:
    """LLVM's name for the host CPU and its features, flattened ("+avx2,-avx512f,...")."""
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


@functools.cache
def host_features() -> frozenset[str]:
    """The features the host CPU has ("avx2", "fma", ...), read from `host_cpu`'s."""
    return frozenset({entry[1:] for entry in host_cpu()[1].split(",") if entry[:1] == "+"})
