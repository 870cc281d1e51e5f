"""Compiled code lives as long as something refers to it (backend/llvm/jit/engine.py).

Each compile links into code of its own (an image the disk cache's ELF linker mapped, or
an MCJIT engine where that linker refuses the objects), kept by the CompiledModule, which
the builtin's pins keep: dropping a jitted function unmaps its machine code, and the
process's RSS and memory mappings stay flat over many compile-and-drop cycles (run in
a child: it measures its own memory). What a caller still needs stays: a callee compiled
into a live caller, a derived function, the builtin itself, the runtime's shared
functions. The cache's API: a module's object code, linked again by `Engine.load`.
"""
import ctypes
import gc
import json
import subprocess
import sys
import textwrap
import weakref

import llvmlite.binding as llvm
import numpy as np
import pytest

from astjit import grad, jit
from astjit.backend.llvm.jit import split
from astjit.backend.llvm.jit.engine import ObjectImage, engine, runtime_llvm_ir
from astjit.backend.llvm.shared import RUNTIME

FRESH = """
def f_{k}(x, y):
    a = x * {k} + y
    if a > {k}.25:
        return a - {m}.5
    return a * 0.{k:04d}
"""

CHILD = textwrap.dedent("""
    import ctypes, gc, importlib, json, linecache, sys
    from astjit import jit

    per_module, warmup, modules = map(int, sys.argv[1:])
    trim = getattr(ctypes.CDLL(None), "malloc_trim", lambda pad: 0)

    def rss():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * 4096

    def maps():
        with open("/proc/self/maps") as lines:
            return sum(1 for _ in lines)

    def cycle(i):
        mod = importlib.import_module(f"fresh_{i}")
        for k in range(per_module):
            plain = getattr(mod, f"f_{k}")
            assert jit(plain)(1.5, 3) == plain(1.5, 3)
        del mod, plain, sys.modules[f"fresh_{i}"]
        linecache.clearcache()
        gc.collect()
        trim(0)

    for i in range(warmup):
        cycle(i)
    before = (rss(), maps())
    most = 0
    for i in range(warmup, modules):
        cycle(i)
        most = max(most, maps())
    print("RESULT", json.dumps([rss() - before[0], before[1], most]))
""")


def test_dropped_functions_leave_rss_and_mappings_flat(tmp_path):
    per_module, warmup, modules = 50, 1, 6  # 250 compiles measured
    for i in range(modules):
        body = "\n".join(FRESH.format(k=k, m=(k + i) % 7 + 1) for k in range(per_module))
        (tmp_path / f"fresh_{i}.py").write_text(body)
    proc = subprocess.run([sys.executable, "-c", CHILD, *map(str, (per_module, warmup, modules))],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    growth, maps_before, maps_most = json.loads(line[len("RESULT "):])
    compiles = per_module * (modules - warmup)
    # before issue 15 every compile kept its code, its modules and 2-4 mappings
    assert growth < compiles * 20 * 1024, f"RSS grew {growth / compiles / 1024:.1f} KiB a compile"
    assert maps_most <= maps_before + 20, (maps_before, maps_most)


def write_module(tmp_path, monkeypatch, name, source):
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    return __import__(name)


def collected(ref: weakref.ref) -> bool:
    gc.collect()
    return ref() is None


def test_a_caller_keeps_a_dropped_callees_code(tmp_path, monkeypatch):
    mod = write_module(tmp_path, monkeypatch, "callee_kept", """
        def callee(x):
            return x * x + 1.0

        def caller(x):
            return callee(x) * 2.0
    """)
    callee = jit(mod.callee)
    assert callee(3.0) == 10.0
    caller = jit(mod.caller)
    assert caller(3.0) == 20.0
    (spec,) = callee.dispatcher.specializations.values()
    code = weakref.ref(spec.compiled.compiled)
    del callee, spec
    assert collected(code)
    assert caller(4.0) == 34.0


def test_a_builtin_keeps_its_code(tmp_path, monkeypatch):
    mod = write_module(tmp_path, monkeypatch, "builtin_kept", """
        import numpy as np

        def norm(x):
            return np.sqrt((x * x).sum())
    """)
    f = jit(mod.norm)
    x = np.arange(5.0)
    f(x)
    (spec,) = f.dispatcher.specializations.values()
    builtin = spec.compiled.call
    del f, spec
    gc.collect()
    assert builtin(x) == np.sqrt(30.0)
    compiled = weakref.ref(builtin.__self__.code)
    del builtin
    assert collected(compiled)


def test_a_derived_function_outlives_the_jitted_one(tmp_path, monkeypatch):
    mod = write_module(tmp_path, monkeypatch, "derived_kept", """
        def cube(x):
            return x * x * x
    """)
    f = jit(mod.cube)
    df = grad(f)
    assert f(2.0) == 8.0
    del f
    gc.collect()
    assert df(2.0) == 12.0


def test_loops_of_dropped_array_code_resolve_nowhere(tmp_path, monkeypatch):
    mod = write_module(tmp_path, monkeypatch, "loops_dropped", """
        def scaled(x):
            return x * 2.0 + 1.0
    """)
    f = jit(mod.scaled)
    x = np.linspace(0.0, 1.0, 7)
    np.testing.assert_array_equal(f(x), x * 2.0 + 1.0)
    (spec,) = f.dispatcher.specializations.values()
    compiled = spec.compiled.compiled
    assert compiled.pipelines == ("direct", "glue")
    loops = [fn.name for fn in compiled.parts[0].module.functions if not fn.is_declaration]
    assert loops and set(loops) <= set(compiled.addresses)
    assert all(llvm.address_of_symbol(name) is None for name in loops)  # the glue's alone
    del f, spec, compiled
    gc.collect()
    again = jit(mod.scaled)  # the runtime's shared functions are still there
    np.testing.assert_array_equal(again(x), x * 2.0 + 1.0)


TWICE = """
define double @astjit_test_twice(double %x) {
  %y = call double @sqrt(double %x)
  %z = fmul double %y, 2.0
  ret double %z
}
declare double @sqrt(double)
"""


def test_object_code_loads_again_with_the_same_lifetime():
    compiled = engine().compile_ir(TWICE)
    image = compiled.image()
    assert image.names == ("astjit_test_twice",)
    assert image.imports == ("sqrt",)
    assert [pipeline for pipeline, _ in image.objects] == ["scalar"]
    del compiled
    loaded = engine().load(image)
    twice = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(
        loaded.addresses["astjit_test_twice"])
    assert twice(9.0) == 6.0
    with pytest.raises(ValueError, match="loaded from object code"):
        _ = loaded.llvm_ir_optimized
    ref = weakref.ref(loaded)
    del twice, loaded
    assert collected(ref)


def test_object_code_needing_an_unknown_symbol_is_refused():
    image = engine().compile_ir(TWICE).image()
    missing = ObjectImage(image.objects, image.names, ("astjit_no_such_symbol",), ())
    with pytest.raises(LookupError, match="astjit_no_such_symbol"):
        engine().load(missing)


def test_an_image_carries_the_runtime_functions_it_calls(tmp_path, monkeypatch):
    mod = write_module(tmp_path, monkeypatch, "runtime_image", """
        def total(x):
            return (x * 3.0).sum()
    """)
    f = jit(mod.total)
    x = np.arange(4.0)
    assert f(x) == 18.0
    (spec,) = f.dispatcher.specializations.values()
    image = spec.compiled.compiled.image()
    defined = {name for text in image.runtime for name in split.definitions(text)}
    called = set(image.imports) & RUNTIME.compiled
    assert called and called <= defined
    loaded = engine().load(image)  # all compiled here already: links only
    assert set(loaded.addresses) == set(image.names)


THREADS = textwrap.dedent("""
    import gc, sys, threading
    from astjit import jit
    import threaded_compiles as mod

    errors = []

    def work(first):
        try:
            for k in range(first, 40, 4):
                plain = getattr(mod, f"f_{k}")
                assert jit(plain)(1.5, 3) == plain(1.5, 3)
                gc.collect()
        except BaseException as error:
            errors.append(repr(error))

    threads = [threading.Thread(target=work, args=(first,)) for first in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("RESULT", errors)
""")


def test_threads_compile_and_drop_at_once(tmp_path):
    """Compiles on four threads while the collector frees other compiles' code (in a child:
    a lifetime bug here crashes)."""
    (tmp_path / "threaded_compiles.py").write_text(
        "\n".join(FRESH.format(k=k, m=k % 7 + 1) for k in range(40)))
    proc = subprocess.run([sys.executable, "-c", THREADS], cwd=tmp_path, capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RESULT []" in proc.stdout, proc.stdout[-3000:]


def test_runtime_modules_loaded_from_object_code_have_no_ir(monkeypatch):
    """The disk cache links runtime modules from object code: images and the runtime's
    IR dump leave their (unkept) IR out instead of failing."""
    loaded = engine().load(engine().compile_ir(TWICE).image())
    monkeypatch.setattr(RUNTIME, "modules", [*RUNTIME.modules, loaded])
    assert "loaded from object code: astjit_test_twice" in runtime_llvm_ir()
    image = engine().compile_ir(TWICE.replace("@astjit_test_twice", "@astjit_test_again")).image()
    assert image.runtime == ()


def test_a_compile_links_by_the_elf_linker_else_by_mcjit(monkeypatch):
    """`Engine.link`: the ELF linker's image where it takes the objects, MCJIT's engine where
    it refuses them; the same machine code runs either way, and each is freed with its
    module."""
    from astjit import cabi
    from astjit.cache import elf

    x = np.arange(6.0)
    codes = []
    for refused in (False, True):
        if refused:
            monkeypatch.setattr(elf, "laid_out", lambda objects: None)
        f = jit(lambda_free_expression)
        np.testing.assert_allclose(f(x, 2.0), lambda_free_expression(x, 2.0))
        (spec,) = f.dispatcher.specializations.values()
        compiled = spec.compiled.compiled
        assert isinstance(compiled.code, cabi.Image) is (not refused and cabi.supported_host())
        codes.append(weakref.ref(compiled.code))
        del f, spec, compiled
    assert all(collected(code) for code in codes)


def lambda_free_expression(x, s):
    return np.exp(-x * x) * s + np.sin(x)
