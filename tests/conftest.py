"""Test setup: verify the IR after every pass, and import the helper modules in support/.

The tests are grouped by layer (frontend/, ir/, passes/, ad/, backend/, e2e/, api/); the
corpora, case lists and checks they share live in support/, on sys.path for all of them."""
import gc
import os
import sys

os.environ.setdefault("ASTJIT_VERIFY", "1")
# Bytecode is cached even where PYTHONDONTWRITEBYTECODE is set (as container images often do):
# otherwise each xdist worker compiles astjit's source and rewrites every test module's asserts
# again, and each interpreter a test starts (pickling, Dask, the disk cache, signals, mutants)
# compiles astjit's source again. The files go to the __pycache__ folders git ignores; the
# started interpreters read them.
sys.dont_write_bytecode = False
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "support"))


def pytest_collection_finish(session):
    """Move what importing and collecting made (every test module, NumPy, hypothesis, LLVM's
    bindings) out of the collector's reach: the tests that count references or memory call
    gc.collect(), which otherwise walks all of it each time, a sixth of a second apiece.
    Nothing frozen here is garbage a test could be waiting for: the tests have not run."""
    gc.collect()
    gc.freeze()
