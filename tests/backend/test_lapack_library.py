"""Which LAPACK compiled np.linalg functions call (runtime/lapack.py, capsules.lapack).

NumPy's own OpenBLAS where NumPy bundles one: no import of SciPy, and float64 results
are NumPy's bit for bit (the same routines on the same copies). Else SciPy's
`cython_lapack`, with 32-bit ints: the fallback is checked by forcing it in the same
fresh interpreter after the first check. One child process for both, as the library
is chosen once per process.
"""
import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    from astjit import jit
    from astjit import capsules

    def linalg(a, b):
        return (np.linalg.inv(a), np.linalg.det(a), np.linalg.solve(a, b),
                np.linalg.cholesky(a @ a.T))  # a's diagonal dominates: a @ a.T is definite

    def check(dtype, exact):
        rng = np.random.default_rng(7)
        a = (rng.standard_normal((6, 6)) + 6 * np.eye(6)).astype(dtype)
        b = rng.standard_normal((6, 3)).astype(dtype)
        for got, expected in zip(jit(linalg)(a, b), linalg(a, b)):
            assert np.asarray(got).dtype == np.asarray(expected).dtype
            if exact:
                np.testing.assert_array_equal(got, expected)
            else:
                np.testing.assert_allclose(got, expected, rtol=1e-4 if dtype == np.float32
                                           else 1e-12)

    numpy_has_one = capsules.numpy_routines(capsules.LAPACK_SIGNATURES) is not None
    check(np.float64, exact=numpy_has_one)
    check(np.float32, exact=False)  # NumPy computes float32 in float64 (sgesv here): close
    print(capsules.lapack().origin, capsules.lapack().int_bits, "scipy" in sys.modules)

    from astjit.backend.llvm.runtime import lapack
    capsules.numpy_routines = lambda names: None  # as where NumPy has no OpenBLAS of its own
    capsules.lapack.cache_clear()
    lapack.api.cache_clear()
    check(np.float64, exact=False)
    print(capsules.lapack().origin, capsules.lapack().int_bits)
""")


def test_numpys_openblas_first_scipys_as_fallback(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    first, fallback = out.stdout.splitlines()
    if first.startswith("NumPy's OpenBLAS"):
        assert first == "NumPy's OpenBLAS 64 False", first  # SciPy not imported
    else:
        assert first.startswith("SciPy's cython_lapack 32"), first
    assert fallback == "SciPy's cython_lapack 32", fallback
