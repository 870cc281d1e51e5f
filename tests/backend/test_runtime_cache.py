"""The runtime cache (backend/llvm/jit/runtime_cache.py): a runtime batch's object code kept on
disk under the key of its very IR, linked instead of compiled where found, never stored when
its code is of one process alone, a damaged file ignored and written again; a shared
function asked for by name links its stored batch without being emitted, or is emitted
where that batch does not link."""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import pytest
from llvmlite import ir

from astjit import cabi
from astjit.backend.llvm.jit import runtime_cache
from astjit.backend.llvm.jit.engine import compile_runtime, engine
from astjit.backend.llvm.shared import RUNTIME, shared_function

I64 = ir.IntType(64)
FNTY = ir.FunctionType(I64, [I64])

BATCH = """
define i64 @"astjit.test.runtime_cache.{tag}"(i64 %x) nounwind noinline {{
entry:
  %y = mul i64 %x, {factor}
  ret i64 %y
}}
"""


def batch(tag: str, factor: int = 3) -> str:
    return BATCH.format(tag=tag, factor=factor)


def call(compiled, tag: str, x: int) -> int:
    address = compiled.addresses[f"astjit.test.runtime_cache.{tag}"]
    return ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(address)(x)


@pytest.fixture
def folder(monkeypatch, tmp_path):
    monkeypatch.setenv("ASTJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(runtime_cache.SWITCH, raising=False)
    return tmp_path / runtime_cache.FOLDER


def test_a_batch_compiled_once_is_linked_from_its_object_code(folder):
    compiled = engine().compile_shared(batch("once"))
    assert compiled.parts[0].module is not None and len(list(folder.iterdir())) == 1
    loaded = engine().compile_shared(batch("once"))
    assert loaded.parts[0].module is None  # linked, not compiled
    if cabi.supported_host():  # by the disk cache's ELF linker, not MCJIT
        assert isinstance(loaded.code, cabi.Image)
    assert call(loaded, "once", 7) == call(compiled, "once", 7) == 21
    assert loaded.llvm_ir_optimized == compiled.llvm_ir_optimized
    assert loaded.imports == compiled.imports


def test_a_batch_the_elf_linker_refuses_is_linked_by_llvm(folder, monkeypatch):
    from astjit.cache import elf

    monkeypatch.setattr(elf, "laid_out", lambda objects: None)
    compiled = engine().compile_shared(batch("refused"))
    loaded = engine().compile_shared(batch("refused"))
    assert loaded.parts[0].module is None and not isinstance(loaded.code, cabi.Image)
    assert call(loaded, "refused", 4) == call(compiled, "refused", 4) == 12
    assert loaded.llvm_ir_optimized == compiled.llvm_ir_optimized


def test_other_ir_is_another_key(folder):
    engine().compile_shared(batch("other", 3))
    changed = engine().compile_shared(batch("other", 5))
    assert changed.parts[0].module is not None and call(changed, "other", 2) == 10
    assert len(list(folder.iterdir())) == 2


def test_a_damaged_entry_is_compiled_and_written_again(folder):
    compiled = engine().compile_shared(batch("damaged"))
    (path,) = folder.iterdir()
    data = path.read_bytes()
    at = data.index(compiled.parts[0].object) + 16  # a byte of its machine code
    path.write_bytes(data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:])
    again = engine().compile_shared(batch("damaged"))
    assert again.parts[0].module is not None and call(again, "damaged", 1) == 3
    assert path.read_bytes() == data


def test_code_of_one_process_alone_is_never_stored(folder):
    local = batch("local").replace("mul i64 %x, 3",
                                   "mul i64 %x, ptrtoint (ptr inttoptr (i64 140000000000 to ptr)"
                                   " to i64)")
    assert runtime_cache.key(local, "loops", "") is None
    engine().compile_shared(local)
    assert not folder.exists()


def test_the_switch_turns_it_off(folder, monkeypatch):
    monkeypatch.setenv(runtime_cache.SWITCH, "0")
    engine().compile_shared(batch("off"))
    assert not folder.exists()


def emit_times(factor: int, calls: list):
    """A shared function's body: x * factor (recording that it was emitted)."""
    def emit(function, builder, x):
        calls.append(function.name)
        builder.ret(builder.mul(x, ir.Constant(I64, factor)))
    return emit


def test_a_function_found_by_name_is_linked_without_emitting_it(folder):
    name = "astjit.test.runtime_cache.named"
    engine().compile_shared(batch("named"), {name: frozenset()})
    assert runtime_cache.find(name).names == (name,)
    calls = []
    shared_function(ir.Module(), name, FNTY, emit_times(3, calls))
    compile_runtime()
    assert calls == [] and name in RUNTIME.compiled
    address = llvm.address_of_symbol(name)
    assert ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(address)(5) == 15


def test_a_found_batch_that_does_not_link_is_emitted_after_all(folder, monkeypatch):
    name = "astjit.test.runtime_cache.unlinkable"
    stored = runtime_cache.Stored("0" * 64, b"", (name,), ("astjit.test.nowhere",), "",
                                  {name: ()})
    monkeypatch.setattr(runtime_cache, "find", lambda wanted: stored if wanted == name else None)
    calls = []
    shared_function(ir.Module(), name, FNTY, emit_times(4, calls))
    compile_runtime()
    assert calls == [name] and name in RUNTIME.compiled
    address = llvm.address_of_symbol(name)
    assert ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(address)(5) == 20


def test_a_checkout_is_keyed_by_the_files_the_runtime_can_run(tmp_path):
    """An edit of the LLVM backend changes the runtime's key; one of the frontend does not."""
    from astjit.cache import key

    package = tmp_path / "astjit"
    for folder in ("backend/llvm", "frontend"):
        (package / folder).mkdir(parents=True)
        (package / folder / "code.py").write_text("x = 1\n")
    state = key.package_state(str(package), runtime_cache.NOT_RUNTIME)
    whole = key.package_state(str(package))
    (package / "frontend" / "code.py").write_text("x = 22\n")
    assert key.package_state(str(package), runtime_cache.NOT_RUNTIME) == state
    assert key.package_state(str(package)) != whole  # the disk cache's key still sees it
    (package / "backend" / "llvm" / "code.py").write_text("x = 22\n")
    assert key.package_state(str(package), runtime_cache.NOT_RUNTIME) != state
