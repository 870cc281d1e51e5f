"""An optimized module as one CUDA source: every `fused` node of every graph (and of the
regions of `if`, `while` and `rowwise` nodes) becomes kernels, each headed by a comment
naming the IR node it came from; a `rowwise` group becomes one kernel too (rows.py), its
members' own kernels kept for shapes it does not take; an element loop whose iterations
are independent becomes one kernel too (element_loops.py), and one left on the host gets
a `// host:` comment saying why; everything else runs in the host program (host.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...ir.core import Graph, Module, Node
from ...ir.kernels import kernel_of, row_group_of
from ...ir.printer import ValueNames, format_node
from .csource import Source
from .element_loops import ElementLoop, element_loop, emit_element_loop, host_note
from .elementwise import emit_elementwise
from .prelude import prelude_for
from .reductions import emit_reduction
from .rows import emit_rows, has_row_kernel


@dataclass
class DeviceProgram:
    """The CUDA source of a module, and the kernels each `fused` node launches."""

    source: str
    kernels: dict[str, list[str]]
    """Kernel name -> its parameters' C types, in order."""
    launches: dict[Node, list[str]] = field(default_factory=dict)
    """A fused node -> its kernels' names (host.py picks among them)."""


def lower_module(module: Module) -> DeviceProgram:
    src = Source()
    launches: dict[Node, list[str]] = {}
    for graph in module.graphs.values():
        _lower_graph(src, graph, ValueNames(graph), launches)
    kernels = src.text()
    source = prelude_for(kernels) + kernels
    return DeviceProgram(source, _signatures(source), launches)


def _lower_graph(src: Source, graph: Graph, names: ValueNames,
                 launches: dict[Node, list[str]]) -> None:
    for node in graph.nodes:
        if row_group_of(node) is not None and has_row_kernel(node):
            _header(src, graph, node, names, f"k{len(launches)}")
            launches[node] = emit_rows(src, node, f"k{len(launches)}")
        if node.op == "while" and (plan := element_loop(node)) is not None:
            if isinstance(plan, ElementLoop):
                _header(src, graph, node, names, f"k{len(launches)}")
                launches[node] = emit_element_loop(src, plan, f"k{len(launches)}")
                continue
            src.line()
            src.line(host_note(node, plan))
        if kernel_of(node) is None:
            for region in node.regions:  # a row group's members: when its kernel can't run
                _lower_graph(src, region, names, launches)
            continue
        name = f"k{len(launches)}"
        _header(src, graph, node, names, name)
        emit = emit_elementwise if kernel_of(node).reduce is None else emit_reduction
        launches[node] = emit(src, node, name)


def _header(src: Source, graph: Graph, node: Node, names: ValueNames, name: str) -> None:
    """The comment heading a kernel: the IR node it computes, as the dump shows it."""
    src.line()
    src.line(f"// {name}: from @{graph.name}")
    src.lines += ["// " + line for line in format_node(node, names).splitlines()]


_KERNEL = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(([^)]*)\)')


def _signatures(source: str) -> dict[str, list[str]]:
    """Each kernel's parameter C types, read off its declaration."""
    found = {}
    for name, params in _KERNEL.findall(source):
        found[name] = [_c_type_of(p) for p in params.split(", ")] if params else []
    return found


def _c_type_of(param: str) -> str:
    words = param.replace("__restrict__", "").split()[:-1]
    return " ".join(words).replace(" *", "*")
