"""What else compiled code depends on: astjit itself, LLVM, NumPy, Python and the CPU.

Machine code is tuned to the host CPU (its name and features, as the engine targets
them), calls NumPy's C API by the table of the NumPy it was compiled against, and is
made by one astjit and one LLVM. An entry made under another of any of these is
foreign: its key differs, so it is never found. astjit's own code is identified by
its version and the size and modification time of each of its source files, so that
editing astjit (a development checkout) does not load code an older astjit compiled.
"""
from __future__ import annotations

import functools
import hashlib
import os
import platform
import sys
from pathlib import Path

FORMAT = 1
"""The version of the entries' layout (store.py, entries.py): part of every key."""


@functools.cache
def fingerprint() -> str:
    """One line naming everything above, for this process (computed once)."""
    import llvmlite
    import llvmlite.binding as llvm
    import numpy

    version = sys.modules["astjit"].__version__  # imported by now (an import: a cycle)
    parts = [
        f"format={FORMAT}",
        f"astjit={version}:{_package_state(Path(__file__).resolve().parent.parent)}",
        f"llvmlite={llvmlite.__version__}",
        "llvm=" + ".".join(map(str, llvm.llvm_version_info)),
        f"numpy={numpy.__version__}",
        f"python={sys.version.split()[0]}:{sys.implementation.cache_tag}",
        f"machine={platform.machine()}",
        f"cpu={llvm.get_host_cpu_name()}:{llvm.get_host_cpu_features().flatten()}",
    ]
    return ";".join(parts)


def _package_state(root: Path) -> str:
    """A digest of the size and modification time of every source file of the package."""
    entries = []
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                stat = os.stat(os.path.join(directory, name))
                entries.append(f"{os.path.relpath(os.path.join(directory, name), root)}:"
                               f"{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()[:16]
