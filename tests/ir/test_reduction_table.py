"""The reduction table (ir/ops/reductions.py): every kind is one complete row, and a new
kind is one new row. The second test takes `prod`'s row out of a scratch copy of the
package and puts a simpler one in, by changing that row and nothing else, and checks it
end to end in a fresh interpreter:
the frontend spellings, the type rule, fusion, the interpreter, the compiled code (CPU,
and the GPU's kernels on the simulator), the row-wise group and the gradient."""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import astjit
from astjit.backend.llvm.reduction_nests import COMBINE_ROUTINES
from astjit.ir.ops import Builder, Intrinsic, Routine, kind
from astjit.ir.ops.reductions import REDUCTIONS, ReductionKind
from astjit.ir.types import BOOL, F32, F64, I64

PROD_ROW = '''
    ReductionKind("prod", ("prod",), "multiply", _sum_dtype, {"f": 1.0, "i": 1}, False,
                  "prod", {"f": Builder("fmul"), "i": Builder("mul")}, None, None, False,
                  lambda e, g, x, out, axes, keepdims: div(e, e.op(
                      "mul", _expand(e, g, x, axes, keepdims), _expand(e, out, x, axes, keepdims)),
                      x),
                  cuda_combine={"*": CExpr("({0} * {1})")}),
'''

CHECK = '''
import numpy as np
from astjit import grad, jit
from astjit.ir.ops.reductions import REDUCTIONS


def whole(a):
    return np.prod(a * 2.0)


def columns(a):
    return (a + 1.0).prod(axis=0)


def rows(a):
    return a / np.prod(a, axis=1, keepdims=True)


def ints(a):
    return np.prod(a + 1, axis=1)


def plain(a):
    return np.prod(a)


assert "prod" in REDUCTIONS
x = np.linspace(0.5, 1.5, 12).reshape(3, 4)
for f, arg in ((whole, x), (columns, x), (rows, x), (ints, np.arange(12).reshape(3, 4))):
    for target in ("cpu", "cuda-sim"):
        got, want = jit(f, target=target)(arg), f(arg)
        assert np.allclose(got, want) and np.asarray(got).dtype == np.asarray(want).dtype, \
            (target, got, want)
assert "reduce='prod'" in jit(rows).ir(x)
g = grad(plain)(x)
assert np.allclose(g, np.prod(x) / x), g
print("prod ok")
'''


def test_every_row_is_complete():
    for row in REDUCTIONS.values():
        for f in dataclasses.fields(ReductionKind):
            assert getattr(row, f.name) is not None or f.name in ("finish", "pick", "cuda_finish"), \
                (row.name, f)
        # the `_or_identity` rows are parts of np.max(x, initial=v), with no spelling
        assert row.spellings or row.reference_initial, row.name
        assert row.reference and callable(row.vjp) and callable(row.dtype)
        accumulators = {kind(row.dtype(t)) for t in (BOOL, I64, F64, F32)}  # 'b' for any/all
        assert set(row.identity) >= accumulators and set(row.combine) >= accumulators, row.name
        assert accumulators <= set(row.cuda_combine) or "*" in row.cuda_combine, row.name
        for lowering in [*row.combine.values(), row.finish]:
            assert lowering is None or isinstance(lowering, (Builder, Intrinsic)) or \
                isinstance(lowering, Routine) and lowering.name in COMBINE_ROUTINES


def test_a_new_kind_is_one_row(tmp_path: Path):
    package = Path(astjit.__file__).parent
    scratch = tmp_path / "astjit"
    shutil.copytree(package, scratch, ignore=shutil.ignore_patterns("__pycache__"))
    table = scratch / "ir" / "ops" / "reductions.py"
    text = table.read_text()
    start = text.index('    ReductionKind("prod"')
    text = text[:start] + text[text.index("    ReductionKind(", start + 1):]  # prod's row out
    end = '))}\n"""Every reduction kind'
    assert text.count(end) == 1
    table.write_text(text.replace(end, PROD_ROW.lstrip("\n") + end))
    script = tmp_path / "check_prod.py"
    script.write_text(CHECK)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    assert "prod ok" in run.stdout
