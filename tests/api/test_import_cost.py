"""`import astjit` stays cheap: the compiler and LLVM load on the first compile.

Checked by which modules a fresh interpreter holds after the import (a timing check
would be flaky on a loaded machine): the public API is importable without the
frontend, the op table, the passes, the backends, llvmlite or SciPy, and the first
compile brings the compiler in.
"""
import subprocess
import sys
import textwrap

HEAVY = ("astjit.frontend", "astjit.ir.ops", "astjit.ir.passes", "astjit.ir.infer",
         "astjit.backend", "llvmlite", "llvmlite.binding", "scipy")

PROGRAM = textwrap.dedent("""
    import sys
    import numpy
    import astjit
    from astjit import *  # every public name
    from astjit import jit, grad, value_and_grad, vectorize, CompileError

    def loaded():
        print(",".join(m for m in {heavy!r} if m in sys.modules))

    loaded()

    @jit
    def add_one(x):
        return x + 1.0

    loaded()  # decorating compiles nothing
    assert add_one(1.0) == 2.0
    loaded()
""")


def test_import_loads_no_compiler(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM.format(heavy=HEAVY))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    after_import, after_decorate, after_call = out.stdout.splitlines()
    assert after_import == "", f"import astjit loaded {after_import}"
    assert after_decorate == "", f"@jit loaded {after_decorate}"
    assert {"astjit.frontend", "astjit.backend", "llvmlite.binding"} <= set(after_call.split(","))
