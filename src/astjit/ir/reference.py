"""docs/ir_reference.md, written from the op table, so the page lists exactly the ops the
compiler has: `python -m astjit.ir.reference --write` rewrites it, and
tests/ir/test_ir_reference.py fails when the page and the table disagree.

The page's hand-written parts (the text format, the types, the structural ops) are the
constants below; each primitive's entry is read from its `OpDef` (ops/table.py): what it
computes, its spellings, traits, derivative rules, and its CPU and GPU lowerings.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .ops import OPS
from .ops.reductions import REDUCTIONS
from .ops.table import CExpr, LibCall, OnHost, OpDef, Refused

PAGE = Path(__file__).resolve().parents[3] / "docs" / "ir_reference.md"
"""Where the page lives in a source checkout."""

HEADER = """\
# IR reference

astjit compiles a Python function through one graph IR, printed at every stage by
`f.ir(*args, stage="parsed" | "typed" | "optimized")`, `ASTJIT_DUMP=dir`, `python -m
astjit ir FILE.py:FUNC` and the explorer (`python -m astjit explore`). This page lists
every operation of that IR. The primitives' entries are generated from the op table
(`src/astjit/ir/ops/`) by `python -m astjit.ir.reference --write`, and
`tests/ir/test_ir_reference.py` fails when the page and the table disagree.

## The text format

```
graph @newton_sqrt[f64](%x: f64) -> f64 {  # ex.py:1
  %0 = const 1.0 : f64                     # ex.py:2
  %1 = gt %x, %0 : bool                    # ex.py:2
  %y = select %1, %x, %0 : f64             # ex.py:2
  %y.4 = while [%x] (%y) {                 # ex.py:3
    cond (%x.1: f64, %y.1: f64) {          # ex.py:3
      %2 = mul %y.1, %y.1 : f64            # ex.py:3
      %3 = sub %2, %x.1 : f64              # ex.py:3
      %4 = abs %3 : f64                    # ex.py:3
      %5 = const 1e-12 : f64               # ex.py:3
      %6 = mul %x.1, %5 : f64              # ex.py:3
      %7 = gt %4, %6 : bool                # ex.py:3
      yield %7
    }
    body (%x.2: f64, %y.2: f64) {          # ex.py:3
      %8 = const 0.5 : f64                 # ex.py:4
      %9 = truediv %x.2, %y.2 : f64        # ex.py:4
      %10 = add %y.2, %9 : f64             # ex.py:4
      %y.3 = mul %10, %8 : f64             # ex.py:4
      yield %y.3
    }
  } : f64
  return %y.4
}
```

- A **module** is one or more `graph @name[signature](params) -> result { ... }`, the
  entry first; a callee that was not inlined is a graph of its own.
- One **node** per line: `results = op operands {attributes} : result types`. Values keep
  the user's variable name with an SSA suffix (`%y`, `%y.1`, ...); temporaries are `%0`,
  `%1`, ...; names are unique within a function graph, regions included.
- **Attributes** print as `{name=value, ...}` after the operands, except those an op's
  own syntax shows: a `const`'s value and a `getitem`'s index as trailing operands
  (`const 1.0`, `getitem %t, 1`), a cast's target as `to` (`cast %x to i64`), a call's
  callee as `@name`, a `while`'s invariants in brackets.
- **Regions** are indented under a header naming their parameters (`then (...)`,
  `cond (...)`, `body (...)`, `kernel (...)`, `rows (...)`) and end with `yield`.
- The **source location** is the trailing comment `# file.py:line`: the line of the
  function's source the node came from.
- `format="dot"` gives the same graphs as Graphviz DOT: operators are boxes, values
  edges, regions nested clusters.

## Types

| type | what |
|---|---|
| `bool`, `i64`, `f64` | Python scalars (weak, in NumPy's NEP 50 sense): `bool`, `int`, `float` |
| `np.bool`, `np.i64`, `np.f64` | NumPy scalars (strong) of those dtypes |
| `i8`, `i16`, `i32`, `u8` ... `u64`, `f32`, `c64`, `c128` | dtypes only NumPy has: always NumPy scalars |
| `int\\|bool` | an `i64` tagged with whether it is a bool (`n > 0 or m` keeps CPython's type) |
| `array<dtype, ndim>` | a strided NumPy array |
| `tuple<...>`, other containers by their class | tuples, lists, dicts, dataclasses... (docs/trees.md) |
| `key<'w'>` | a dict's key in a loop over the dict, known at compile time |
| `tape<...>` | what a differentiated loop records for its backward pass |
| `none` | `None` |

## Structural ops

A closed set, handled by hand by every consumer (verifier, interpreter, passes, AD, both
backends). Values enter and leave their regions only through parameters and `yield`: a
region has no free variables.

- `if`: inputs `[cond, *captured]`; regions `then` and `else`, each taking the captured
  values; results: the values both branches yield (what a phi would be).
- `while`: inputs `[*invariants, *carried]` (`n_invariants` of them invariant); regions
  `cond(invariants, carried) -> bool` and `body(invariants, carried) -> carried`;
  results: the final carried values. `for ... in range(...)` lowers to it, and `break`,
  `continue` and `return` to flags it carries.
- `call`: inputs: the callee's arguments; `attrs['callee']` names a graph of the module;
  result: the callee's. Kept for recursion, inlined otherwise.
- `fused`: inputs: the arrays and scalars a kernel reads; region `kernel`: scalar leaf
  ops run once per point of a broadcast iteration space; results: new arrays shaped as
  the space, and with a reduction (`reduce=`, `axes=`, `keepdims=`) the reduced result
  last.
- `rowwise`: a row group; region `rows`: `fused` nodes over the same rows (softmax,
  log_softmax, logsumexp and their gradients); a backend may run it row by row.

`fused` and `rowwise` are made by the fusion passes (`ir/passes/fuse.py`, `rowfuse.py`):
they appear in the optimized stage only.

## Reduction kinds

`reduce` and a `fused` node's reduction take a `kind`, one row of `REDUCTIONS`
(`ir/ops/reductions.py`):

| kind | NumPy | empty input |
|---|---|---|
"""

PRIMITIVES = """
## Primitives

Each entry: the op's name as the IR prints it, what it computes (where its declaration
says), and then, from its `OpDef`:

- **spelled**: the Python and NumPy spellings the frontend lowers to it;
- **operands**: how many (any: a variable number);
- **traits**: `pure` (no side effect), `raises` (may raise at run time, so it is kept
  when unused), `elementwise` (applies to arrays element by element, with NumPy's
  broadcasting, and fuses), `commutative`, `view` (its result shares its first operand's
  memory), `allocates` (a new array), `reads`/`writes` (array elements), `linear` (its
  tangent is itself applied to the tangents), `operator`/`math`/`numpy_result` (how it
  treats NumPy scalars);
- **reverse mode**: a VJP rule, or why there is none (a zero derivative, or where AD
  handles it); **forward mode**: from the VJP (elementwise), the op itself (`linear`) or a
  rule of its own; **vmap**: whether it has a batching rule (without one, vmap runs the
  function in a loop over the examples);
- **CPU**: how the LLVM backend lowers it (an `IRBuilder` instruction, an LLVM intrinsic,
  a C math function, or a named routine of the backend), **GPU**: the C expression a CUDA
  kernel computes it with, the host program, or the backend's refusal.
"""

GROUPS = (
    ("Differentiation support", lambda op: op.name.startswith("tape_")
     or op.name in ("stop_gradient", "sum_to_like", "fdiv", "powr", "logr", "add_into",
                    "zero_into", "gather_adjoint", "compress_adjoint")),
    ("Operators and conversions", lambda op: "operator" in op.traits
     or op.name in ("cast", "select", "const", "not", "add_sat", "index", "tag", "untag")),
    ("Math and other elementwise functions", lambda op: "math" in op.traits
     or "elementwise" in op.traits),
    ("Array creation", lambda op: op.name in ("array_new", "array_new_like", "array_arange",
                                              "array_linspace", "array_pack", "eye")),
    ("Array shapes, views, copies and element access", lambda op: "view" in op.traits
     or op.name.startswith("array_") or op.name == "diag"),
    ("Array computations", lambda op: "reads" in op.traits or "writes" in op.traits
     or op.name.startswith("linalg_")),
    ("Containers, calls and control", lambda op: True),
)
"""Each op goes in the first group whose test it passes."""


def reference_page() -> str:
    """The whole page, as `--write` writes it."""
    rows = [f"| `{kind.name}` | {', '.join(f'`np.{s}`' for s in kind.spellings) or 'none'} | "
            f"{'ValueError (no identity)' if kind.empty_raises else 'its identity'} |"
            for kind in REDUCTIONS.values()]
    grouped: dict[str, list[OpDef]] = {title: [] for title, _ in GROUPS}
    for op in sorted(OPS.values(), key=lambda op: op.name):
        title = next(title for title, belongs in GROUPS if belongs(op))
        grouped[title].append(op)
    index = ["", f"{len(OPS)} primitives:", ""]
    index += [f"- **{title}**: " + ", ".join(f"[`{op.name}`](#{op.name})" for op in ops)
              for title, ops in grouped.items() if ops]
    sections = []
    for title, ops in grouped.items():
        if ops:
            sections += [f"\n### {title}\n"] + [entry(op) for op in ops]
    return HEADER + "\n".join(rows) + "\n" + PRIMITIVES + "\n".join(index) + "\n" \
        + "\n".join(sections)


def entry(op: OpDef) -> str:
    """One primitive: an anchored heading, its doc, then one line of facts."""
    lines = [f'<a id="{op.name}"></a>\n#### `{op.name}`\n']
    if op.doc:
        lines.append(op.doc.strip() + "\n")
    spelled = [f"`{s}`" for s in op.python] + [f"`np.{s}`" for s in op.numpy]
    facts = [f"spelled {', '.join(spelled)}"] if spelled else []
    facts.append(f"operands: {'any' if op.arity < 0 else op.arity}")
    facts.append(f"traits: {', '.join(sorted(op.traits)) or 'none'}")
    facts.append(f"reverse mode: {reverse_mode(op)}")
    facts.append(f"forward mode: {forward_mode(op)}")
    facts.append(f"vmap: {'a rule' if op.batch else 'loop'}")
    facts.append(f"CPU: {cpu_lowering(op)}")
    facts.append(f"GPU: {gpu_lowering(op)}")
    lines.append("; ".join(facts) + ".\n")
    return "\n".join(lines)


def reverse_mode(op: OpDef) -> str:
    if op.vjp is not None:
        return "a VJP rule"
    if op.zero_derivative:
        return f"zero derivative ({_clause(op.zero_derivative)})"
    if op.no_vjp:
        return f"none of its own ({_clause(op.no_vjp)})"
    return "none"


def forward_mode(op: OpDef) -> str:
    if op.jvp is not None:
        return "a rule of its own"
    if "linear" in op.traits:
        return "the op on the tangents"
    if op.vjp is not None and "elementwise" in op.traits:
        return "from the VJP rule"
    if op.zero_derivative:
        return "zero"
    return "none"


def cpu_lowering(op: OpDef) -> str:
    kinds = {**op.llvm}
    return ", ".join(f"{_kind(k)} {_descriptor(d)}" for k, d in kinds.items())


def gpu_lowering(op: OpDef) -> str:
    if isinstance(op.cuda, OnHost):
        return "the host program"
    if isinstance(op.cuda, Refused):
        return f"refused ({_clause(op.cuda.message)})"
    return ", ".join(f"{_kind(k)} `{d.template}`" if isinstance(d, CExpr) else
                     f"{_kind(k)} {_descriptor(d)}" for k, d in op.cuda.items())


KIND_NAMES = {"f": "float", "i": "int", "u": "unsigned", "b": "bool", "c": "complex", "*": "any"}


def _kind(key: str) -> str:
    return f"({KIND_NAMES.get(key, key)})"


def _descriptor(descriptor) -> str:
    if isinstance(descriptor, LibCall):
        return f"C `{descriptor.name}`"
    name = getattr(descriptor, "method", None) or getattr(descriptor, "name", None)
    what = type(descriptor).__name__.lower()
    return f"{what} `{name}`" if name else what


def _clause(text: str) -> str:
    """A reason as a parenthesized clause: one line, no trailing period, `|` escaped."""
    return " ".join(text.split()).rstrip(".").replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m astjit.ir.reference",
                                     description="docs/ir_reference.md from the op table")
    parser.add_argument("--write", action="store_true", help=f"rewrite {PAGE}")
    options = parser.parse_args(argv)
    if options.write:
        PAGE.write_text(reference_page(), encoding="utf-8")
        print(f"wrote {PAGE}")
    else:
        sys.stdout.write(reference_page())
    return 0


if __name__ == "__main__":
    sys.exit(main())
