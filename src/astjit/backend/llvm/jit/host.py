"""The host CPU as LLVM names it, read once per process.

The engine's target machines are made for it and the runtime cache's key names it
(`runtime_cache`, on a kernel's first call); asking LLVM again is not free (the features
come back as a map of every feature LLVM knows, flattened in Python), and a process's CPU
does not change.
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm


@functools.cache
def host_cpu() -> tuple[str, str]:
    """LLVM's name for the host CPU and its features, flattened ("+avx2,-avx512f,...")."""
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
