"""docs/ir_reference.md is the op table's: every primitive listed, nothing else, and its
text-format example the printer's own output (src/astjit/ir/reference.py writes it)."""
import re

from astjit import jit
from astjit.ir.ops import OPS
from astjit.ir.reference import PAGE, reference_page

REWRITE = "run `python -m astjit.ir.reference --write` and commit docs/ir_reference.md"


def test_page_is_the_op_tables():
    page = PAGE.read_text(encoding="utf-8")
    listed = set(re.findall(r'<a id="([a-z0-9_]+)"></a>', page))
    assert listed == set(OPS), f"ops missing: {sorted(set(OPS) - listed)}, " \
                               f"gone from the table: {sorted(listed - set(OPS))}; {REWRITE}"
    assert page == reference_page(), f"docs/ir_reference.md is stale: {REWRITE}"


def newton_sqrt(x):
    y = x if x > 1.0 else 1.0
    while abs(y * y - x) > 1e-12 * x:
        y = 0.5 * (y + x / y)
    return y


def test_text_format_example_is_the_printers_output():
    example = re.search(r"## The text format\n\n```\n(.*?)```", PAGE.read_text(), re.DOTALL)[1]
    printed = jit(newton_sqrt).ir(2.0, stage="optimized")
    first = newton_sqrt.__code__.co_firstlineno
    # the page's example is numbered from line 1 of a file ex.py
    renumbered = re.sub(r"# test_ir_reference\.py:(\d+)",
                        lambda m: f"# ex.py:{int(m[1]) - first + 1}", printed)
    assert [line.rstrip() for line in example.splitlines()] == \
        [line.rstrip() for line in renumbered.splitlines()]
