"""jit(cache=True): machine code on disk, loaded by later processes (astjit/cache).

Processes that compile and load run as children (a fresh interpreter each, with a temporary
ASTJIT_CACHE_DIR and a timeout); the file format and the keys are also checked in process.
"""
import functools
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import astjit
from astjit import cabi, cache, jit
from astjit.backend.llvm.jit import runtime_cache
from astjit.cache import key
from astjit.cache.key import Uncacheable, digest

MODULE = '''
import os
import numpy as np
from astjit import grad, jit

SCALE = int(os.environ.get("SCALE", "3"))
BIAS = 0.5

def helper(x):
    return x * x + 1.0

def scalar_kernel(x, n):
    s = 0.0
    for i in range(n):
        s += helper(x + i) * SCALE
    return s

def loss(w, x):
    return np.mean(np.tanh(x @ w + BIAS) ** 2)

def step(w, x, lr):
    return w - lr * grad(loss)(w, x)

def divide(a, b):
    return a / b

def column_sums(x):
    return np.sum(x * 2.0, axis=0)

def count_down(n):
    k = 0
    while n > 0:
        n -= 1
        k += n % 7
    return k

jit_scalar = jit(scalar_kernel, cache=True)
jit_step = jit(step, cache=True)
jit_divide = jit(divide, cache=True)
jit_columns = jit(column_sums, cache=True)
jit_grad = jit(grad(loss), cache=True)  # a derived function, jitted with options
'''

CHILD = '''
import json, sys
import numpy as np
sys.path.insert(0, ".")
import kernels as k

before = set(sys.modules)

def loaded(f):
    return all(spec.optimized is None for spec in f.signatures.values())

w = np.linspace(-1.0, 1.0, 9).reshape(3, 3)
x = np.linspace(0.0, 1.0, 12).reshape(4, 3)
m = np.arange(12.0).reshape(3, 4)
out = {"scalar": k.jit_scalar(0.5, 10), "python_scalar": k.scalar_kernel(0.5, 10),
       "step": k.jit_step(w, x, 0.1).tolist(), "columns": k.jit_columns(m).tolist()}
out["loaded"] = [loaded(k.jit_scalar), loaded(k.jit_step), loaded(k.jit_columns)]
out["llvmlite"] = "llvmlite" in sys.modules  # array code too: NumPy's table, SciPy's BLAS
out["astjit"] = sorted(m for m in set(sys.modules) - before if m.startswith("astjit"))
out["columns_t"] = k.jit_columns(m.T).tolist()  # a transposed view: may leave the first tier
try:
    k.jit_divide(1.0, 0.0)
except ZeroDivisionError as error:
    out["error"] = str(error)
out["loaded_divide"] = loaded(k.jit_divide)
out["grad"] = k.jit_grad(w, x).tolist()
out["loaded_grad"] = loaded(k.jit_grad)
print("RESULT " + json.dumps(out))
'''


SCALAR_CHILD = '''
import json, sys
sys.path.insert(0, ".")
import kernels as k

before = set(sys.modules)
out = {"scalar": k.jit_scalar(0.5, 100000), "python_scalar": k.scalar_kernel(0.5, 100000),
       "loaded": all(spec.optimized is None for spec in k.jit_scalar.signatures.values())}
out["astjit"] = sorted(m for m in set(sys.modules) - before if m.startswith("astjit"))
try:
    k.jit_divide(1.0, 0.0)
except ZeroDivisionError as error:
    out["error"] = str(error)
out["astjit_error"] = sorted(m for m in set(sys.modules) - before if m.startswith("astjit"))
out["llvmlite"] = sorted(m for m in sys.modules if m.partition(".")[0] == "llvmlite"
                        or m == "numpy.ma" or m.startswith("numpy.ma."))
if len(sys.argv) > 1:  # then compile in the same process: it calls the loaded runtime
    from astjit import jit
    from astjit.backend.llvm import shared
    from astjit import cache
    out["adopted"] = bool(cache._runtime) and set(cache._runtime) <= shared.RUNTIME.compiled
    counting = jit(k.count_down, cache=True)
    out["count"] = [counting(n) for n in (10, 100000)]
    out["python_count"] = [k.count_down(n) for n in (10, 100000)]
    out["count_loaded"] = all(s.optimized is None for s in counting.signatures.values())
print("RESULT " + json.dumps(out))
'''


def run_child(directory, code=CHILD, *arguments, **env):
    environment = dict(os.environ, ASTJIT_CACHE_DIR=str(directory / "cache"), **env)
    environment.pop("ASTJIT_DISABLE_JIT", None)
    proc = subprocess.run([sys.executable, "-c", code, *arguments], cwd=directory,
                          env=environment,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(li for li in reversed(proc.stdout.splitlines()) if li.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def entries(directory):
    return sorted((directory / "cache").glob("*.astjit"))


@pytest.fixture
def project(tmp_path):
    (tmp_path / "kernels.py").write_text(MODULE)
    return tmp_path


def expected_step():
    w = np.linspace(-1.0, 1.0, 9).reshape(3, 3)
    x = np.linspace(0.0, 1.0, 12).reshape(4, 3)
    h = np.tanh(x @ w + 0.5)
    gradient = x.T @ (2.0 * h * (1.0 - h * h)) / h.size
    return w - 0.1 * gradient


def test_a_second_process_loads_what_the_first_compiled(project):
    cold = run_child(project)
    assert cold["loaded"] == [False, False, False] and not cold["loaded_divide"]
    assert cold["scalar"] == cold["python_scalar"]
    np.testing.assert_allclose(cold["step"], expected_step(), rtol=1e-12)
    m = np.arange(12.0).reshape(3, 4)
    assert cold["columns"] == (2.0 * m).sum(axis=0).tolist()
    assert cold["columns_t"] == (2.0 * m.T).sum(axis=0).tolist()
    assert len(entries(project)) >= 4  # one per specialization (jit_columns has two)
    warm = run_child(project)
    assert warm["loaded"] == [True, True, True] and warm["loaded_divide"] and warm["loaded_grad"]
    assert cold["llvmlite"] and not warm["llvmlite"]
    assert warm["astjit"] == ["astjit.cabi", "astjit.cache", "astjit.cache.key",
                              "astjit.capsules"]
    assert not cold["loaded_grad"]
    for name in ("scalar", "step", "columns", "columns_t", "error", "grad"):
        assert warm[name] == cold[name], name
    assert "division by zero" in warm["error"]


def test_a_warm_scalar_call_links_without_llvm(project):
    """A process loading scalar code never imports llvmlite (nor NumPy's masked arrays): the
    ELF linker links it (astjit/cache, elf.py). It imports the loader's three modules and
    no other of astjit's (each import costs a warm load about as much as any step of the
    load: docs/caching.md). Code it compiles afterwards calls the runtime functions it
    loaded, and is cached in turn."""
    cold = run_child(project, SCALAR_CHILD)
    assert not cold["loaded"] and cold["scalar"] == cold["python_scalar"]
    warm = run_child(project, SCALAR_CHILD)
    assert warm["loaded"] and warm["llvmlite"] == []
    assert warm["astjit"] == ["astjit.cabi", "astjit.cache", "astjit.cache.key"]
    assert (warm["scalar"], warm["error"]) == (cold["scalar"], cold["error"])
    assert warm["astjit_error"] == warm["astjit"]  # not the op table (api.error_from_site)
    mixed = run_child(project, SCALAR_CHILD, "compile")
    assert mixed["loaded"] and mixed["adopted"] and not mixed["count_loaded"]
    assert mixed["count"] == mixed["python_count"]
    again = run_child(project, SCALAR_CHILD, "compile")
    assert again["count_loaded"] and again["count"] == mixed["count"]
    assert again["llvmlite"] == []  # read before compiling


def test_an_error_site_raises_the_exception_the_op_table_names():
    from astjit.api import error_from_site
    from astjit.errors import Loc
    from astjit.ir.ops import EXCEPTIONS

    loc = Loc("f.py", 3, 4, "x = a / b\n")
    for name, make in EXCEPTIONS.items():
        try:
            expected = make("it failed")
        except TypeError:  # UnicodeDecodeError & co. take more than a message, either way
            with pytest.raises(TypeError):
                error_from_site(name, "it failed", loc)
            continue
        error = error_from_site(name, "it failed", loc)
        assert type(error) is type(expected), name
        assert "it failed (at f.py:3: x = a / b)" in str(error), name
    assert type(error_from_site("NoSuchError", "", None)) is RuntimeError


def test_the_loader_imports_no_ctypes():
    """The loader makes its C calls with `_ctypes` alone (astjit/cabi.py): importing the
    ctypes package would cost a warm load of a scalar kernel a quarter of its instructions
    where nothing else imports it (NumPy does)."""
    code = ("import sys\n"
            "import astjit.cache\n"
            "from astjit import cabi\n"
            "cabi.thread_state(), cabi.thread_stack_limit_address()\n"
            "assert cabi.thread_stack_limit() > 0\n"
            "print('ctypes' in sys.modules, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_damaged_entries_are_compiled_again(project):
    cold = run_child(project)
    for damage in (lambda b: b[: len(b) // 2], lambda b: b[:-40] + bytes(40),
                   lambda b: b[:100] + bytes(x ^ 0xFF for x in b[100:116]) + b[116:],
                   lambda b: b""):
        for path in entries(project):
            path.write_bytes(damage(path.read_bytes()))
        again = run_child(project)
        assert again["loaded"] == [False, False, False]
        assert (again["scalar"], again["step"]) == (cold["scalar"], cold["step"])
    assert run_child(project)["loaded"] == [True, True, True]


def test_edits_and_the_values_read_are_part_of_the_key(project):
    first = run_child(project)
    path = project / "kernels.py"
    path.write_text(path.read_text().replace("x * x + 1.0", "x * x + 2.0"))  # the callee
    edited = run_child(project)
    assert edited["loaded"] == [False, True, True]
    assert edited["scalar"] == edited["python_scalar"] != first["scalar"]
    five = run_child(project, SCALE="5")  # a global's value
    assert five["loaded"][0] is False and five["scalar"] == five["python_scalar"]
    again = run_child(project, SCALE="3")
    assert again["loaded"][0] is True and again["scalar"] == edited["scalar"]
    path.write_text(path.read_text().replace("BIAS = 0.5", "BIAS = 0.7"))  # the callee's global
    bias = run_child(project)
    assert bias["loaded"] == [True, False, True] and bias["step"] != first["step"]


def test_concurrent_writers_leave_one_valid_entry_each(project):
    environment = dict(os.environ, ASTJIT_CACHE_DIR=str(project / "cache"))
    procs = [subprocess.Popen([sys.executable, "-c", CHILD], cwd=project, env=environment,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out.splitlines()[-1][len("RESULT "):]))
    assert all(r["scalar"] == r["python_scalar"] and r["step"] == results[0]["step"]
               for r in results)
    assert not [p for p in (project / "cache").iterdir() if p.name.startswith(".tmp")]
    assert run_child(project)["loaded"] == [True, True, True]


PICKLER = '''
import json, pickle, sys
sys.path.insert(0, ".")
import kernels as k
from astjit import jit
f = jit(k.divide, cache=True)  # not a module attribute: pickled as jit(divide, cache=True)
with open("f.pickle", "wb") as fh:
    pickle.dump(f, fh)
print("RESULT " + json.dumps({"value": f(3.0, 2.0)}))
'''

UNPICKLER = '''
import json, pickle, sys
sys.path.insert(0, ".")
with open("f.pickle", "rb") as fh:
    f = pickle.load(fh)
value = f(3.0, 2.0)
loaded = all(spec.optimized is None for spec in f.signatures.values())
print("RESULT " + json.dumps({"value": value, "loaded": loaded}))
'''


def test_an_unpickled_function_loads_from_the_cache(project):
    assert run_child(project, PICKLER) == {"value": 1.5}
    assert run_child(project, UNPICKLER) == {"value": 1.5, "loaded": True}


# ---- in process -----------------------------------------------------------------------------

def test_the_file_layout_rejects_damage(tmp_path):
    path = tmp_path / "entry.astjit"
    assert key.write_file(path, b"payload" * 100)
    assert key.read_file(path) == b"payload" * 100
    data = path.read_bytes()
    for damaged in (data[:-1], data[:20], data[:60] + b"X" + data[61:], b"ASTJITC?" + data[8:]):
        path.write_bytes(damaged)
        assert key.read_file(path) is None
    assert key.read_file(tmp_path / "absent.astjit") is None


def test_the_folder_is_chosen_by_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ASTJIT_CACHE_DIR", str(tmp_path))
    assert key.directory() == tmp_path
    monkeypatch.delenv("ASTJIT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert key.directory() == tmp_path / "xdg" / "astjit"


def test_astjit_is_keyed_by_its_files_or_by_its_wheels_record(tmp_path):
    """A checkout: every source file's size and modification time, so an in-place edit
    (the folder's own time unchanged) changes the key; installed from a wheel: RECORD."""
    version = astjit.__version__
    package = tmp_path / "checkout" / "astjit"
    (package / "ir").mkdir(parents=True)
    (package / "__init__.py").write_text("x = 1\n")
    (package / "ir" / "core.py").write_text("y = 2\n")
    checkout = key.package_state(str(package))
    assert checkout.startswith("files:")
    folder_time = os.stat(package / "ir").st_mtime_ns
    with open(package / "ir" / "core.py", "r+") as file:  # in place, as some editors write
        file.write("y = 3\n")
    os.utime(package / "ir" / "core.py", ns=(1, 10**18))
    assert os.stat(package / "ir").st_mtime_ns == folder_time
    edited = key.package_state(str(package))
    assert edited != checkout
    (package / "ir" / "new.py").write_text("")
    assert key.package_state(str(package)) not in (checkout, edited)

    site = tmp_path / "site"
    shutil.copytree(package, site / "astjit")
    info = site / f"astjit-{version}.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("astjit/__init__.py,sha256=abc,6\nastjit/ir/core.py,sha256=d,6\n")
    installed = key.package_state(str(site / "astjit"))
    assert installed.startswith("record:")
    (info / "RECORD").write_text("astjit/__init__.py,sha256=abd,6\nastjit/ir/core.py,sha256=d,6\n")
    assert key.package_state(str(site / "astjit")) not in (installed, checkout)
    # an editable install's dist-info lists a .pth file, not the package: the files count
    (info / "RECORD").write_text("__editable__.astjit.pth,sha256=abc,15\n")
    assert key.package_state(str(site / "astjit")).startswith("files:")


def closure_reading(value):
    def inner(x):
        return x * value
    return inner


def multiply(a, b):
    return a * b


TWICE = functools.partial(multiply, 2.0)


def reads_a_partial(x):
    return TWICE(x)  # a partial is keyed by nothing (dependencies.py): never cached


def test_digests_follow_values_read():
    assert digest(closure_reading(2.0)) == digest(closure_reading(2.0))
    assert digest(closure_reading(2.0)) != digest(closure_reading(3.0))
    assert digest(closure_reading(np.float32(2.0))) != digest(closure_reading(2.0))
    with pytest.raises(Uncacheable):
        digest(reads_a_partial)
    assert cache.place(reads_a_partial, {}, ()) is None


EDITED = """# a module whose file the test rewrites
# coding: utf-8

def other(x):
    return x - 1.0

def scaled(x):
    return x * 2.0
"""


def load_module(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_key_reads_the_source_as_the_file_holds_it_now(tmp_path):
    """The function's lines are read from its file at each key (as the frontend reads them
    to compile: `linecache.checkcache`), not from what linecache kept; newlines as Python
    reads them; its encoding declaration counts; other functions' lines do not."""
    import linecache

    path = tmp_path / "edited_module.py"
    path.write_text(EDITED)
    scaled = load_module(path).scaled
    first = digest(scaled)
    assert linecache.getlines(str(path))  # linecache keeps the old text from here on
    path.write_bytes(EDITED.replace("\n", "\r\n").encode())
    assert digest(scaled) == first
    path.write_text(EDITED.replace("x - 1.0", "x - 2.0"))  # another function's line
    assert digest(scaled) == first
    path.write_text(EDITED.replace("utf-8", "latin-1"))
    assert digest(scaled) != first
    path.write_text(EDITED.replace("x * 2.0", "x * 3.0"))  # the function's own line
    edited = digest(scaled)
    assert edited != first
    assert digest(load_module(path).scaled) == edited
    path.write_text(EDITED[:EDITED.index("def scaled")])  # its lines are gone
    with pytest.raises(Uncacheable):
        digest(scaled)


def test_a_source_that_is_no_file_is_read_from_linecache():
    """A notebook's cell: IPython registers its text in linecache under a name no file has."""
    import linecache

    name = "<astjit-test-cell-1>"
    text = "def cell_function(x):\n    return x + 1.0\n"
    namespace: dict = {}
    exec(compile(text, name, "exec"), namespace)
    with pytest.raises(Uncacheable):
        digest(namespace["cell_function"])
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    try:
        known = digest(namespace["cell_function"])
        linecache.cache[name] = (len(text), None, text.replace("1.0", "2.0").splitlines(True),
                                 name)
        assert digest(namespace["cell_function"]) != known
    finally:
        del linecache.cache[name]


CPUINFO = b"""processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 167
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 8
cpu MHz\t\t: 2000.000
flags\t\t: fpu vme de pse tsc avx2 avx512f
bogomips\t: 4000.00"""


def test_the_cpu_is_keyed_by_its_name_and_features(monkeypatch):
    """/proc/cpuinfo's vendor, family, model, name, stepping and flags of the first
    processor; not its clock (which varies from read to read)."""
    monkeypatch.setattr(key, "_first_processor", lambda: CPUINFO)
    known = key.cpu()
    assert known.startswith("cpuinfo:")
    for line, changed in ((b"2000.000", b"2400.117"), (b"4000.00", b"4000.01")):
        monkeypatch.setattr(key, "_first_processor", lambda: CPUINFO.replace(line, changed))
        assert key.cpu() == known
    for line, changed in ((b"avx512f", b"avx512bw"), (b"Intel", b"AMD"), (b": 167", b": 85"),
                          (b": 8", b": 7"), (b": 6", b": 25")):
        monkeypatch.setattr(key, "_first_processor", lambda: CPUINFO.replace(line, changed, 1))
        assert key.cpu() != known, changed


def test_an_uncacheable_function_compiles_and_writes_nothing(monkeypatch, tmp_path):
    """Nothing of the function is written; the runtime's shared functions may be, where this
    is the process's first compile (the runtime cache, in the same folder)."""
    monkeypatch.setenv("ASTJIT_CACHE_DIR", str(tmp_path))
    assert jit(reads_a_partial, cache=True)(1.5) == 3.0
    assert not [path for path in tmp_path.glob("*") if path.name != runtime_cache.FOLDER]


def test_compiled_code_names_python_objects_by_symbol(monkeypatch, tmp_path):
    monkeypatch.setenv("ASTJIT_CACHE_DIR", str(tmp_path))
    f = jit(lambda_free_scale, cache=True)
    assert f(2.0) == 5.0
    text = f.ir(2.0, stage="llvm")  # compiled again: a loaded entry keeps no IR
    assert '@"astjit.obj.builtins:float"' in text and "inttoptr (i64 " not in text


def lambda_free_scale(x):
    return x * 2.5


def test_options_are_checked():
    with pytest.raises(TypeError, match="cache"):
        jit(lambda_free_scale, cache="yes")
    with pytest.raises(ValueError, match="cache=True"):
        jit(lambda_free_scale, cache=True, target="cuda-sim")


def test_a_second_dispatcher_in_one_process_loads_the_entry(monkeypatch, tmp_path):
    monkeypatch.setenv("ASTJIT_CACHE_DIR", str(tmp_path))
    first = jit(closure_reading(4.0), cache=True)
    assert first(2.0) == 8.0
    assert len(list(tmp_path.glob("*.astjit"))) == 1
    second = jit(closure_reading(4.0), cache=True)
    assert second(2.0) == 8.0 and first(3.0) == 12.0
    assert all(spec.optimized is None for spec in second.signatures.values())


def scale_in_place(a, k):
    for i in range(a.shape[0]):
        a[i] = a[i] * k
    return a.sum()


def test_a_loaded_entry_takes_unaligned_arrays_and_writes_them_back(monkeypatch, tmp_path):
    """A loaded specialization has no IR to say which arrays it writes: each unaligned one
    goes as an aligned copy and is copied back."""
    monkeypatch.setenv("ASTJIT_CACHE_DIR", str(tmp_path))
    words = np.arange(5, dtype=np.float64)
    assert jit(scale_in_place, cache=True)(words.copy(), 2.0) == 20.0
    loaded = jit(scale_in_place, cache=True)
    unaligned = np.frombuffer(bytearray(b"\0" + words.tobytes()), dtype=np.float64, offset=1)
    assert unaligned.ctypes.data % 8
    assert loaded(unaligned, 3.0) == 30.0
    assert all(spec.optimized is None for spec in loaded.signatures.values())
    np.testing.assert_array_equal(unaligned, words * 3.0)


# ---- the ELF linker (cache/elf.py) ----------------------------------------------------------

LINKED_IR = r'''
@counter = global i64 5
@table = internal constant [4 x double] [double 1.5, double 2.5, double 3.5, double 4.5]
declare i64 @labs(i64)
define i64 @bump(i64 %x) noinline {
  %c = load i64, ptr @counter
  %n = add i64 %c, %x
  store i64 %n, ptr @counter
  %a = call i64 @labs(i64 %n)
  ret i64 %a
}
define double @pick(i64 %i) {
  %p = getelementptr [4 x double], ptr @table, i64 0, i64 %i
  %v = load double, ptr %p
  ret double %v
}
define i64 @twice(i64 %x) {
  %a = call i64 @bump(i64 %x)
  %b = call i64 @bump(i64 %a)
  ret i64 %b
}
'''


def object_code(codemodel, reloc, text=LINKED_IR):
    import llvmlite.binding as llvm

    from astjit.backend.llvm.jit.engine import engine

    machine = engine().target.create_target_machine(codemodel=codemodel, reloc=reloc)
    return machine.emit_object(llvm.parse_assembly(text))


def c_function(name):
    import ctypes

    return ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value


@pytest.mark.parametrize("codemodel, reloc", [("jitdefault", "default"), ("small", "pic"),
                                              ("large", "pic")])
def test_the_elf_linker_applies_each_code_models_relocations(codemodel, reloc):
    """The large model's absolute addresses (what the engine emits), the small PIC model's
    PC-relative calls and GOT loads, the large PIC model's GOT offsets: the linked
    functions read and write their globals and call the C library's `labs`."""
    import ctypes

    from astjit.cache import elf

    image = elf.link([object_code(codemodel, reloc)], {"labs": c_function("labs")}.get)
    twice = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(image.symbols["twice"])
    pick = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_int64)(image.symbols["pick"])
    assert twice(-20) == 0  # counter 5 - 20 = -15, |-15| = 15; then -15 + 15 = 0
    assert ctypes.c_int64.from_address(image.symbols["counter"]).value == 0
    assert twice(3) == 6  # 0 + 3 = 3; 3 + 3 = 6
    assert [pick(i) for i in range(4)] == [1.5, 2.5, 3.5, 4.5]


def relocation_tables(obj):
    from astjit.cache import elf

    parsed = elf._parse(obj)
    return [s for s in parsed.sections if s.kind == elf.SHT_RELA]


def test_the_elf_linker_refuses_what_it_does_not_handle():
    from astjit.cache import elf

    obj = object_code("jitdefault", "default")
    resolve = {"labs": c_function("labs")}.get
    foreign = bytearray(obj)
    foreign[18:20] = (183).to_bytes(2, "little")  # AArch64
    unknown = bytearray(obj)
    table = relocation_tables(obj)[0]
    unknown[table.offset + 8:table.offset + 12] = (37).to_bytes(4, "little")  # IRELATIVE
    scrambled = bytearray(obj)
    scrambled[table.offset:table.offset + 48] = b"\xff" * 48  # symbol indices past the table
    for damaged in (bytes(foreign), bytes(unknown), bytes(scrambled), obj[:40],
                    b"\x7fELF" + bytes(60)):
        with pytest.raises(elf.Unsupported):
            elf.link([damaged], resolve)
    with pytest.raises(cabi.Unresolved, match="labs"):
        elf.link([obj], {}.get)


def mapped(address):
    with open("/proc/self/maps") as maps:
        spans = [line.split()[0].split("-") for line in maps]
    return any(int(low, 16) <= address < int(high, 16) for low, high in spans)


def test_linked_memory_is_unmapped_with_its_image():
    import gc

    from astjit.cache import elf

    image = elf.link([object_code("jitdefault", "default")], {"labs": c_function("labs")}.get)
    base = image.base
    assert mapped(base)
    del image
    gc.collect()
    assert not mapped(base)


def test_a_foreign_entry_is_not_decoded():
    """An entry read under another key (a file-name collision, another environment's file
    put in place), or whose error sites do not parse, decodes to nothing: the entry is
    compiled and written again."""
    meta_key, other = "format=2;one environment", "format=2;another"
    payload = cache.marshal.dumps({"key": meta_key, "sizes": [], "sums": [], "parts": [],
                                   "roles": [], "runtime": [], "plans": [None], "errors": [],
                                   "details": {}})
    blob = len(payload).to_bytes(4, "little") + payload
    assert cache.decode(blob, meta_key) is not None
    assert cache.decode(blob, other) is None
    assert cache.decode(blob[:-3], meta_key) is None
    assert cache.decode(b"\x07\x00\x00\x00garbage", meta_key) is None
    sites = cache.marshal.dumps({"key": meta_key, "sizes": [], "sums": [], "parts": [],
                                 "roles": [], "runtime": [], "plans": [None],
                                 "errors": [["ValueError", "m", [1, 2, 3, 4, 5]]],
                                 "details": {}})
    assert cache.decode(len(sites).to_bytes(4, "little") + sites, meta_key) is None


def test_the_loader_names_libmvec_as_the_code_generator_does():
    from astjit.backend.llvm import vecmath

    assert cache.LIBMVEC == vecmath.LIBRARY


def test_the_loader_links_blas_of_the_int_width_the_code_was_compiled_for():
    # NumPy's OpenBLAS takes 64-bit ints, SciPy's 32: which one a process finds is not in the
    # key, so the symbol names the width, and a loader with the other library refuses it
    from astjit import capsules
    from astjit.backend.llvm.runtime import blas, lapack

    for module, found in ((blas, capsules.blas()), (lapack, capsules.lapack())):
        name = module.symbol("dgemm" if module is blas else "dgesv")
        rest = name.rpartition(".")[2]
        address = cache._process_symbol(name)
        assert address == found.addresses[rest] and address
        other = 96 - found.int_bits  # 32 <-> 64
        assert cache._process_symbol(name.replace(f".i{found.int_bits}.", f".i{other}.")) \
            is None


def test_an_entry_the_elf_linker_refuses_links_through_llvm(monkeypatch, tmp_path):
    monkeypatch.setenv("ASTJIT_CACHE_DIR", str(tmp_path))
    assert jit(closure_reading(6.0), cache=True)(2.0) == 12.0
    monkeypatch.setattr(cache, "link_natively", lambda saved, pins: None)
    loaded = jit(closure_reading(6.0), cache=True)
    assert loaded(3.0) == 18.0
    spec = next(iter(loaded.signatures.values()))
    assert spec.optimized is None and type(spec.compiled.compiled).__name__ == "CompiledModule"


def test_object_code_only_llvm_reads_is_checked_where_it_is_read(monkeypatch, tmp_path):
    """The file's header checks an entry's metadata, which holds the image a native link
    maps; the object code after it (read by a link through LLVM, and a runtime batch's where
    this process links it) has checksums of its own in the metadata, checked where it is
    read: damaged there, the entry still links natively, and never through LLVM."""
    monkeypatch.setenv("ASTJIT_CACHE_DIR", str(tmp_path))
    assert jit(closure_reading(7.0), cache=True)(2.0) == 14.0
    (path,) = tmp_path.glob("*.astjit")
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    native = jit(closure_reading(7.0), cache=True)
    assert native(3.0) == 21.0
    assert next(iter(native.signatures.values())).optimized is None  # loaded
    monkeypatch.setattr(cache, "link_natively", lambda saved, pins: None)
    again = jit(closure_reading(7.0), cache=True)
    assert again(3.0) == 21.0
    assert next(iter(again.signatures.values())).optimized is not None  # compiled
    saved = cache.decode(key.read_file(path), cache.place(
        closure_reading(7.0), {"cache": True}, next(iter(again.signatures))).key)
    assert saved is not None and cache.objects_intact(saved)  # written again, whole
