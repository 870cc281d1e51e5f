"""Golden IR text: each syntax form of the subset, printed at each stage and compared to a file.

Each function of golden_cases.py has `golden/<name>.parsed.txt` (the untyped
graph from the frontend) and `golden/<name>.typed.txt` (after type inference),
plus `golden/<name>.optimized.txt` where the optimizer matters; all printed
with `locations=False`. `golden/located.typed.txt` is the one dump with the
`# file:line` comments.

A mismatch fails with a unified diff, expected (the file) against actual. After
a deliberate change to the IR, rewrite the files and review the diff in git:

    ASTJIT_UPDATE_GOLDEN=1 python -m pytest tests/ir/test_golden_ir.py

That writes files but deletes none: remove those of a renamed or deleted case by
hand (`test_no_stale_golden_files` lists them).
"""
from __future__ import annotations

import copy
import difflib
import os
import re

import pytest
from golden_cases import CASES, located

from astjit import jit
from astjit.frontend import lower_function
from astjit.ir.infer import infer_types
from astjit.ir.passes.pipeline import optimize
from astjit.ir.printer import format_module
from astjit.ir.types import I64
from astjit.ir.verify import verify_module

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
UPDATE = os.environ.get("ASTJIT_UPDATE_GOLDEN") == "1"


def check_golden(file_name: str, actual: str) -> None:
    """Compare `actual` with the golden file (or rewrite it under ASTJIT_UPDATE_GOLDEN=1)."""
    path = os.path.join(GOLDEN, file_name)
    if UPDATE:
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as fh:
            fh.write(actual)
        return
    if not os.path.exists(path):
        pytest.fail(f"no golden file {path}; create it with ASTJIT_UPDATE_GOLDEN=1")
    with open(path) as fh:
        expected = fh.read()
    if actual != expected:
        diff = difflib.unified_diff(expected.splitlines(keepends=True),
                                    actual.splitlines(keepends=True),
                                    f"golden/{file_name}", "actual")
        pytest.fail("IR differs from the golden file "
                    "(ASTJIT_UPDATE_GOLDEN=1 rewrites it):\n" + "".join(diff), pytrace=False)


def stages(name: str) -> dict[str, str]:
    """The IR text of case `name` at each of its stages, every stage verified."""
    case = CASES[name]
    parsed = lower_function(case.fn)
    typed = infer_types(parsed, list(case.arg_types))
    modules = {"parsed": parsed, "typed": typed}
    if case.optimized:
        modules["optimized"] = optimize(copy.deepcopy(typed), verify=verify_module)
    for module in modules.values():
        verify_module(module)
    return {stage: format_module(module, locations=False) for stage, module in modules.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_ir(name):
    for stage, text in stages(name).items():
        check_golden(f"{name}.{stage}.txt", text)


def test_no_stale_golden_files():
    """A golden file without its case (renamed, deleted, no longer optimized) is an error."""
    expected = {f"{name}.{stage}.txt" for name, case in CASES.items()
                for stage in ["parsed", "typed"] + ["optimized"] * case.optimized}
    assert set(os.listdir(GOLDEN)) == expected | {"located.typed.txt"}


def test_golden_ir_with_locations():
    text = jit(located).ir(5, stage="typed")
    # The printer shows file names only; strip any directory part should that change.
    text = re.sub(r"# \S*[/\\]", "# ", text)
    assert "# golden_cases.py:" in text
    check_golden("located.typed.txt", text)
    located_free = format_module(infer_types(lower_function(located), [I64]), locations=False)
    assert re.sub(r" *#.*", "", text) == located_free
