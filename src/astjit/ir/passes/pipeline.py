"""The optimization pipeline: inline once, then fold, simplify, CSE and DCE until nothing changes,
then small self-recursive graphs unrolled (inline.py: the rounds simplified one copy of
the body), filled arrays plus scalars folded, elementwise fusion (in memory order for
transposed operands), loop versioning for bounds checks (and a last DCE).

Every pass is a function Module -> Module that keeps the invariants of
`core.py`; `PASSES` lists them by name so each can be run (and tested) alone.
`optimize` runs the rounds while they still change the module, at most
`MAX_ROUNDS` times; "changed" compares a structural fingerprint of the module
(ops, operand wiring, attrs and types), so it needs no cooperation from the passes.
A module without arrays whose rounds settled ends there: the steps after them rewrite
arrays, then clean up after that (`has_arrays`).
"""
from __future__ import annotations

from collections.abc import Callable

from ..analysis import contains_array
from ..core import Graph, Module, Value
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .fills import fold_fills
from .fold import fold_constants
from .fuse import fuse_elementwise
from .inline import inline_calls, unroll_recursion
from .into import write_into_targets
from .rowfuse import fuse_rows
from .shapes import resolve_sums_to_like
from .simplify import simplify
from .transposes import commute_transposes
from .versioning import version_loops

Pass = Callable[[Module], Module]

PASSES: list[tuple[str, Pass]] = [
    ("inline", inline_calls),
    ("fold", fold_constants),
    ("simplify", simplify),
    ("cse", eliminate_common_subexpressions),
    ("dce", eliminate_dead_code),
]
ROUND = PASSES[1:]
"""The passes repeated after inlining."""
FINAL: list[tuple[str, Pass]] = [("shapes", resolve_sums_to_like), ("fills", fold_fills),
                                 ("fuse", fuse_elementwise), ("transposes", commute_transposes),
                                 ("rowfuse", fuse_rows), ("into", write_into_targets),
                                 ("versioning", version_loops), ("simplify", simplify),
                                 ("cse", eliminate_common_subexpressions),
                                 ("dce", eliminate_dead_code)]
"""Once, after the rounds: un-broadcasting sums that shapes prove the identity or a fixed
reduction become that (shapes.py), `full_like(a, c) + s` one filled array and
`full_like(a, c) + b` that elementwise readers broadcast `c + b` (fills.py), then
elementwise array ops become `fused` nodes (fuse.py), those of transposed arrays
kernels on the arrays in memory order, their results transposed (transposes.py), those
sharing their outer axes row groups (rowfuse.py), kernels whose result an assignment
copies into one of their inputs marked to write there (into.py), counted loops checked once for their indices
(versioning.py); then the kernels' scalar ops and the checks are simplified and merged, and
the constants they copied dropped."""
MAX_ROUNDS = 4


def optimize(module: Module, *, verify: Callable[[Module], None] | None = None,
             keep_custom_rules: bool = False, fuse: bool = True,
             before_final: Callable[[Module], None] | None = None) -> Module:
    """Run the pipeline on `module` (in place) and return it; `verify` runs after every pass.

    `keep_custom_rules` keeps calls of functions with a custom_vjp rule (see inline.py);
    `fuse=False` skips the FINAL steps (autodiff differentiates the unfused graph), and
    `before_final` is given the module as it is then where they follow (ad/derive.py keeps
    a copy of it).
    """
    module = _run(lambda m: inline_calls(m, keep_custom_rules=keep_custom_rules), module, verify)
    settled, before = False, fingerprint(module)
    for _ in range(MAX_ROUNDS):
        for _name, run_pass in ROUND:
            module = _run(run_pass, module, verify)
        after = fingerprint(module)
        settled, before = after == before, after
        if settled:
            break
    module = _run(unroll_recursion, module, verify)
    if fuse and before_final is not None:
        before_final(module)
    if settled and not has_arrays(module):
        fuse = False  # nothing for FINAL to do (see the module's docstring)
    for _name, run_pass in FINAL if fuse else []:
        module = _run(run_pass, module, verify)
    return module


def has_arrays(module: Module) -> bool:
    """Whether a parameter of `module`'s graphs or a node's result (in any region) is or
    holds an array: the values a region takes are those."""
    return any(contains_array(value.type) for graph in module.graphs.values()
               for value in (*graph.params, *(v for node in graph.walk() for v in node.outputs)))


def _run(run_pass: Pass, module: Module, verify: Callable[[Module], None] | None) -> Module:
    module = run_pass(module)
    if verify is not None:
        verify(module)
    return module


def fingerprint(module: Module) -> list:
    """A list equal for two modules exactly when they have the same structure.

    Values are numbered by definition order, so fresh Values with the same wiring give
    the same list. Each graph and node says how many items of each kind follow, so that
    the flat list reads back one way only. (A list of numbers and the types' and attrs'
    texts, not one text: `optimize` makes one per round.)
    """
    numbers: dict[Value, int] = {}
    types: dict[int, str] = {}
    tokens: list = [module.entry]
    for graph in module.graphs.values():
        _graph_tokens(graph, numbers, types, tokens)
    return tokens


def _graph_tokens(graph: Graph, numbers: dict[Value, int], types: dict[int, str],
                  tokens: list) -> None:
    """Append `graph`'s items to `tokens` (its regions' after each node's); `types` holds
    the text of each type met, by identity, while the fingerprint is made."""
    number = numbers.setdefault

    def typed(values: list[Value]) -> tuple:
        items = []
        for value in values:
            text = types.get(id(value.type))
            if text is None:
                text = types[id(value.type)] = str(value.type)
            items += (number(value, len(numbers)), text)
        return tuple(items)

    tokens += (graph.name, typed(graph.params), len(graph.nodes))
    for node in graph.nodes:
        tokens += (node.op, tuple([number(v, len(numbers)) for v in node.inputs]),
                   typed(node.outputs), repr(sorted(node.attrs.items())) if node.attrs else "",
                   len(node.regions))
        for region in node.regions:
            _graph_tokens(region, numbers, types, tokens)
    tokens.append(tuple([number(v, len(numbers)) for v in graph.outputs]))
