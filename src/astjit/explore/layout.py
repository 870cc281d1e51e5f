"""A layered drawing of IR graphs as SVG, in plain Python: the explorer's drawing where
Graphviz is not installed.

Each function graph is a block: its parameters on the top layer, then its nodes, each one
layer below the lowest node it reads from (a node reading nothing sits just above its
first reader), then `return`. Within a layer the boxes are ordered by the mean position
of what they read, which keeps most edges short and uncrossed. A structural op (`if`,
`while`, `fused`, `rowwise`) is a box holding its regions side by side, each region a
block drawn the same way, so the nesting of the IR is the nesting of the picture. Edges
are the values, from the box that defines one to each box that uses it.

Every node's group carries `data-line` (its source line in the explored file), which the
page's script uses to highlight what a source line produced.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from ..ir.core import REGION_ROLES, Graph, Module, Node, Value
from ..ir.printer import ValueNames, format_attrs, format_op

CHAR_WIDTH = 7.2
"""The width of one character of the 12 px monospace font the labels use."""
LINE_HEIGHT = 15.0
PAD = 6.0
GAP_X = 14.0
GAP_Y = 24.0
MAX_LABEL = 48
"""Labels are clipped to this many characters; the full text is the box's tooltip."""


@dataclass(eq=False)
class Box:
    """One thing drawn in a block: a parameter, a node, or the block's sink."""

    shape: str
    """'param', 'node' or 'sink' (parameters and sinks are drawn as rounded pills)."""
    label: list[str]
    title: str
    line: int | None
    inputs: list[Value]
    regions: list[tuple[str, Block]] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0
    x: float = 0.0
    y: float = 0.0
    layer: int = 0


@dataclass(eq=False)
class Block:
    """A graph laid out: its boxes in layers, and its size."""

    title: str
    boxes: list[Box]
    producers: dict[Value, Box]
    width: float = 0.0
    height: float = 0.0


def module_svg(module: Module, located: str) -> str:
    """The module's graphs, the entry first, one below the other, as one `<svg>` element;
    `located`: the file whose line numbers nodes carry as `data-line`."""
    blocks = [graph_block(module.graphs[name], located)
              for name in sorted(module.graphs, key=lambda name: name != module.entry)]
    width = max(b.width for b in blocks) + 2 * PAD
    parts, y = [], PAD
    for block in blocks:
        parts += draw_block(block, PAD, y, "ir-graph")
        y += block.height + GAP_Y
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="ir-svg" width="{width:.0f}" '
            f'height="{y:.0f}" viewBox="0 0 {width:.0f} {y:.0f}" font-family="monospace" '
            f'font-size="12">' + "".join(parts) + "</svg>")


def graph_block(graph: Graph, located: str) -> Block:
    """A function graph as a block titled `@name`."""
    return _block(graph, f"@{graph.name}", "return", ValueNames(graph), located)


def _block(graph: Graph, title: str, sink: str, names: ValueNames, located: str) -> Block:
    boxes = [Box("param", [_clip(names[p] + (f": {p.type}" if p.type else ""))],
                 names[p], None, []) for p in graph.params]
    producers = {p: box for p, box in zip(graph.params, boxes)}
    for node in graph.nodes:
        box = _node_box(node, names, located)
        boxes.append(box)
        producers.update((v, box) for v in node.outputs)
    boxes.append(Box("sink", [sink], sink, None, list(graph.outputs)))
    block = Block(title, boxes, producers)
    _assign_layers(block)
    _place(block)
    return block


def _node_box(node: Node, names: ValueNames, located: str) -> Box:
    if node.op in REGION_ROLES:
        text = node.op + format_attrs(node, names)
    elif node.op == "call":
        text = f"call @{node.attrs.get('callee')}" + format_attrs(node, names)
    else:
        text = format_op(node, names, operands=False)
    results = ", ".join(names[v] for v in node.outputs)
    types = ", ".join(str(v.type) for v in node.outputs if v.type is not None)
    label = [_clip(text)] + ([_clip(f"{results}: {types}" if types else results)] if results else [])
    line = node.loc.line if node.loc is not None and node.loc.filename == located else None
    title = f"{results} = {text}" if results else text
    regions = [(role, _block(region, role, "yield", names, located))
               for role, region in zip(REGION_ROLES.get(node.op, ()), node.regions)]
    return Box("node", label, title, line, list(node.inputs), regions)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def _assign_layers(block: Block) -> None:
    """Parameters on layer 0; a node one below the lowest node or parameter it reads; a node
    without operands (a constant) just above its first reader, so that it pushes no reader
    down and no edge runs past it; the sink below everything."""
    def free(box: Box) -> bool:
        return box.shape == "node" and not box.inputs

    readers: dict[int, list[Box]] = {}
    for box in block.boxes:
        if box.shape == "param" or free(box):
            continue
        sources = [block.producers[v] for v in box.inputs if v in block.producers]
        box.layer = 1 + max((s.layer for s in sources if not free(s)), default=0)
        for source in sources:
            readers.setdefault(id(source), []).append(box)
    sink = block.boxes[-1]
    sink.layer = 1 + max((b.layer for b in block.boxes[:-1]), default=0)
    for box in block.boxes:
        if free(box) and id(box) in readers:
            box.layer = min(r.layer for r in readers[id(box)]) - 1


def _size(box: Box) -> None:
    text_width = max(len(line) for line in box.label) * CHAR_WIDTH + 2 * PAD
    text_height = len(box.label) * LINE_HEIGHT + PAD
    if not box.regions:
        box.width, box.height = text_width, text_height
        return
    inner_width = sum(b.width for _, b in box.regions) + GAP_X * (len(box.regions) - 1)
    box.width = max(text_width, inner_width + 2 * PAD)
    box.height = text_height + max(b.height for _, b in box.regions) + PAD


def _place(block: Block) -> None:
    """Order each layer by the mean position of what its boxes read, then stack the
    layers, each centred, under the block's title."""
    for box in block.boxes:
        _size(box)
    layers: dict[int, list[Box]] = {}
    for box in block.boxes:
        layers.setdefault(box.layer, []).append(box)
    rank: dict[int, float] = {}
    ordered = []
    for number in sorted(layers):
        row = layers[number]
        for position, box in enumerate(row):
            sources = [rank[id(block.producers[v])] for v in box.inputs
                       if v in block.producers and id(block.producers[v]) in rank]
            rank[id(box)] = sum(sources) / len(sources) if sources else float(position)
        row.sort(key=lambda box: rank[id(box)])
        for position, box in enumerate(row):
            rank[id(box)] = float(position)
        ordered.append(row)
    widths = [sum(b.width for b in row) + GAP_X * (len(row) - 1) for row in ordered]
    block.width = max([len(block.title) * CHAR_WIDTH, *widths]) + 2 * PAD
    y = LINE_HEIGHT + PAD
    for row, width in zip(ordered, widths):
        x = (block.width - width) / 2
        for box in row:
            box.x, box.y = x, y
            x += box.width + GAP_X
        y += max(b.height for b in row) + GAP_Y
    block.height = y - GAP_Y + PAD


def draw_block(block: Block, x0: float, y0: float, css: str) -> list[str]:
    """SVG elements of `block` with its top left corner at (x0, y0): edges under boxes."""
    parts = [f'<g class="{css}"><rect class="ir-block" x="{x0:.1f}" y="{y0:.1f}" '
             f'width="{block.width:.1f}" height="{block.height:.1f}" rx="4"/>'
             f'<text class="block-title" x="{x0 + PAD:.1f}" y="{y0 + LINE_HEIGHT - 2:.1f}">'
             f'{html.escape(block.title)}</text>']
    for box in block.boxes:
        for k, value in enumerate(box.inputs):
            source = block.producers.get(value)
            if source is not None:
                parts.append(_edge(source, box, k, x0, y0))
    for box in block.boxes:
        parts += _draw_box(box, x0, y0)
    parts.append("</g>")
    return parts


def _edge(source: Box, target: Box, k: int, x0: float, y0: float) -> str:
    """A curve from the bottom of `source` to the k-th operand slot on top of `target`."""
    x1, y1 = x0 + source.x + source.width / 2, y0 + source.y + source.height
    slot = (k + 1) / (len(target.inputs) + 1)
    x2, y2 = x0 + target.x + target.width * slot, y0 + target.y
    bend = max((y2 - y1) / 2, GAP_Y / 2)
    return (f'<path class="ir-edge" d="M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 + bend:.1f} '
            f'{x2:.1f},{y2 - bend:.1f} {x2:.1f},{y2:.1f}"/>')


def _draw_box(box: Box, x0: float, y0: float) -> list[str]:
    x, y = x0 + box.x, y0 + box.y
    line = f' data-line="{box.line}"' if box.line is not None else ""
    radius = box.height / 2 if box.shape != "node" else 3
    parts = [f'<g class="ir-node {box.shape}"{line}><title>{html.escape(box.title)}</title>'
             f'<rect x="{x:.1f}" y="{y:.1f}" width="{box.width:.1f}" '
             f'height="{box.height:.1f}" rx="{min(radius, 12):.1f}"/>']
    for k, text in enumerate(box.label):
        anchor = f'x="{x + box.width / 2:.1f}" text-anchor="middle"' if not box.regions \
            else f'x="{x + PAD:.1f}"'
        css = ' class="types"' if k else ""  # the second line: results and their types
        parts.append(f'<text {anchor} y="{y + PAD / 2 + LINE_HEIGHT * (k + 1) - 3:.1f}"{css}>'
                     f'{html.escape(text)}</text>')
    inner_x = x + PAD
    inner_y = y + len(box.label) * LINE_HEIGHT + PAD
    for _, region in box.regions:
        parts += draw_block(region, inner_x, inner_y, "ir-region")
        inner_x += region.width + GAP_X
    parts.append("</g>")
    return parts
