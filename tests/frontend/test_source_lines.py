"""Reading a function's definition (frontend/source.py `definition_lines`): the lines and
first line number `inspect.getsourcelines` gives, without `inspect.getmodule`, whose walk
over `sys.modules` every process's first compile paid."""
from __future__ import annotations

import functools
import importlib
import inspect
import sys
import zipfile

import pytest
from corpus import CASES

from astjit import jit
from astjit.frontend.source import definition_lines


def decorator(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper


@decorator
def decorated(x):
    return x * 2.0


def outer(y):
    def inner(x):  # a nested definition: indented lines
        return x + y
    return inner


class Holder:
    @staticmethod
    def method(x):
        return x - 1.0


FUNCTIONS = [decorated.__wrapped__, outer(1.0), Holder.method, outer,
             *(case[0] for case in CASES[:40])]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=[f.__qualname__ for f in FUNCTIONS])
def test_the_lines_inspect_reads(fn):
    assert definition_lines(fn.__code__, fn.__globals__) == inspect.getsourcelines(fn.__code__)


LAYOUTS = '''
def trailing_comment(x):
    y = x + 1.0
    # a comment indented as the body: inspect keeps it
    return y
    # so is this one


def dead_code(x):
    return x
    y = x * 2.0


def ends_in_pass(x):
    if x > 0:
        pass


def one_line(x): return x + 1.0


def multi_line_return(x):
    return (x +
            1.0
)


class Box:
    def method(self, x):
        return x
  # a comment between the two levels

    def other(self):
        def inner(y):
            return y
        return inner


def docstring_only():
    """Only
    a docstring."""


def tabbed(x):
\treturn x
'''


def test_layouts_read_as_inspect_reads_them(tmp_path, monkeypatch):
    """`definition_lines` reads where a definition ends off its code object where it can
    (frontend/source.py `_block_by_positions`), else as inspect does: the same lines."""
    (tmp_path / "layouts.py").write_text(LAYOUTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("layouts")
    try:
        functions = [value for value in vars(module).values() if inspect.isfunction(value)]
        functions += [module.Box.method, module.Box.other, module.Box().other()]
        assert len(functions) == 10
        for fn in functions:
            assert definition_lines(fn.__code__, fn.__globals__) == \
                inspect.getsourcelines(fn.__code__), fn.__qualname__
    finally:
        sys.modules.pop("layouts", None)


def test_a_module_in_a_zip_file_reads_through_its_loader(tmp_path, monkeypatch):
    archive = tmp_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("zipped_kernels.py", "import numpy as np\n\n\n"
                        "def scaled(x):\n    return np.sum(x) * 3.0\n")
    monkeypatch.syspath_prepend(str(archive))
    module = importlib.import_module("zipped_kernels")
    try:
        fn = module.scaled
        lines, first = definition_lines(fn.__code__, fn.__globals__)
        assert (lines, first) == inspect.getsourcelines(fn.__code__)
        assert first == 4 and lines[0].startswith("def scaled")
        import numpy as np
        assert jit(fn)(np.arange(4.0)) == 18.0
    finally:
        sys.modules.pop("zipped_kernels", None)


def test_no_source_is_an_os_error():
    code = compile("def f(x):\n    return x\n", "<no file>", "exec")
    namespace: dict = {}
    exec(code, namespace)
    with pytest.raises(OSError):
        definition_lines(namespace["f"].__code__, namespace)


def test_compiling_never_asks_inspect_for_the_module(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("inspect.getmodule walks every module in sys.modules")

    monkeypatch.setattr(inspect, "getmodule", refuse)

    def fresh(x):
        return x * 3.0 + 1.0

    assert jit(fresh)(2.0) == 7.0
