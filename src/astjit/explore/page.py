"""The explorer's page: one self-contained HTML file (styles, script and drawings inline,
nothing fetched), the source on the left beside every stage of its compilation.

Every source line, every printed IR line and every drawn IR node carries `data-line`
(its line in the explored file); clicking any of them highlights everything with that
line in every stage, and a second click clears it. The page also selects on load from
its address's fragment, `PAGE.html#line=4`, by clicking that source line, which is how
a headless browser drives it (tests/explore/test_explorer_browser.py). The selection
is written back into the document (`body[data-selected]`, each stage's
`data-highlighted` count, the `#selection` text), so a DOM dump shows it.
"""
from __future__ import annotations

import html
import os
import re

from ..ir.printer import format_module
from .graphviz import graphviz_svg
from .layout import module_svg
from .stages import Stage

LOCATION = re.compile(r"#\s*(?P<file>[^\s:#]+):(?P<line>\d+)\s*$")
"""The trailing location comment of a printed IR line (and of the CUDA kernels' headers,
which print their IR node)."""

STYLE = """
body { margin: 0; font: 14px/1.4 system-ui, sans-serif; color: #222; }
header { padding: 8px 16px; background: #263238; color: #eceff1; }
header h1 { font-size: 18px; margin: 0 0 4px; }
header p { margin: 0; }
main { display: flex; align-items: flex-start; }
#source { position: sticky; top: 0; flex: 0 0 36%; max-height: 100vh; overflow: auto;
          border-right: 1px solid #ccc; }
#stages { flex: 1 1 auto; min-width: 0; padding: 0 12px; }
pre { font: 12px/1.35 monospace; margin: 0; }
.src, .ir-line { display: block; white-space: pre; cursor: pointer; }
.src .num { display: inline-block; width: 3.5em; color: #90a4ae; text-align: right;
            margin-right: 1em; user-select: none; }
.ir-line:not([data-line]) { cursor: default; }
.src:hover, .ir-line[data-line]:hover { background: #eceff1; }
.src.hl, .ir-line.hl { background: #ffe082; }
nav a { margin-right: 12px; }
.stage { border-bottom: 1px solid #ddd; padding: 6px 0; }
.stage summary { font-weight: 600; cursor: pointer; }
.stage summary .what { font-weight: normal; color: #555; }
.graph { overflow: auto; max-height: 75vh; margin: 6px 0; border: 1px solid #eee; }
.text { overflow: auto; max-height: 60vh; background: #fafafa; border: 1px solid #eee; }
.unavailable { color: #b71c1c; white-space: pre-wrap; }
.ir-block { fill: none; stroke: #b0bec5; stroke-dasharray: 4 3; }
.block-title { fill: #607d8b; }
.ir-edge { fill: none; stroke: #78909c; }
.ir-node > rect { fill: #fff; stroke: #546e7a; }
.ir-node.param > rect, .ir-node.sink > rect { fill: #eceff1; }
.ir-node .types { fill: #607d8b; }
.ir-node[data-line] { cursor: pointer; }
.ir-node.hl > rect, .ir-node.hl > polygon, .ir-node.hl > ellipse {
  fill: #ffd54f; stroke: #e65100; stroke-width: 2; }
"""

SCRIPT = """
(function () {
  "use strict";
  var selected = null;
  function select(line) {
    var marked = document.querySelectorAll(".hl");
    for (var i = 0; i < marked.length; i++) marked[i].classList.remove("hl");
    selected = line;
    var status = document.getElementById("selection");
    var stages = document.querySelectorAll(".stage");
    if (line === null) {
      document.body.removeAttribute("data-selected");
      for (var s = 0; s < stages.length; s++) stages[s].removeAttribute("data-highlighted");
      status.textContent = "no line selected";
      return;
    }
    var hits = document.querySelectorAll('[data-line="' + line + '"]');
    for (var j = 0; j < hits.length; j++) hits[j].classList.add("hl");
    var counts = [];
    for (var k = 0; k < stages.length; k++) {
      var nodes = stages[k].querySelectorAll(".ir-node.hl").length;
      var lines = stages[k].querySelectorAll(".ir-line.hl").length;
      stages[k].setAttribute("data-highlighted", String(nodes + lines));
      counts.push(stages[k].getAttribute("data-stage") + ": " + nodes + " nodes, " +
                  lines + " lines");
    }
    document.body.setAttribute("data-selected", line);
    status.textContent = "line " + line + " \\u2192 " + counts.join("; ");
  }
  document.addEventListener("click", function (event) {
    var target = event.target.closest ? event.target.closest("[data-line]") : null;
    if (!target) return;
    var line = target.getAttribute("data-line");
    select(line === selected ? null : line);
  });
  function selectFromAddress() {
    var found = /(?:^#|&)line=(\\d+)/.exec(window.location.hash);
    if (!found) return;
    var source = document.querySelector('.src[data-line="' + found[1] + '"]');
    if (source) source.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  }
  window.addEventListener("hashchange", selectFromAddress);
  selectFromAddress();
})();
"""


def render_page(title: str, filename: str, first_line: int, lines: list[str],
                stages: list[Stage], *, graphviz: bool = True) -> str:
    """The whole page; `graphviz=False` draws with layout.py even where `dot` exists."""
    source = "".join(
        f'<span class="src" data-line="{first_line + k}"><span class="num">{first_line + k}'
        f'</span>{html.escape(text)}</span>' for k, text in enumerate(lines))
    basename = os.path.basename(filename)
    nav = " ".join(f'<a href="#stage-{s.name}">{s.name}</a>' for s in stages)
    body = "".join(_stage(stage, filename, basename, graphviz) for stage in stages)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>astjit explorer: {html.escape(title)}</title><style>{STYLE}</style></head>"
        f"<body><header><h1>astjit explorer: {html.escape(title)}</h1>"
        f"<p>{html.escape(filename)}. Click a source line (or an IR node or line) to "
        "highlight what it produced in every stage; click again to clear. "
        '<span id="selection">no line selected</span></p></header>'
        f'<main><aside id="source"><pre>{source}</pre></aside>'
        f'<section id="stages"><nav>{nav}</nav>{body}</section></main>'
        f"<script>{SCRIPT}</script></body></html>\n")


def _stage(stage: Stage, filename: str, basename: str, graphviz: bool) -> str:
    head = (f'<details class="stage" id="stage-{stage.name}" data-stage="{stage.name}" open>'
            f'<summary>{stage.name} <span class="what">— {html.escape(stage.description)}'
            "</span></summary>")
    if stage.unavailable:
        return head + f'<p class="unavailable">{html.escape(stage.unavailable)}</p></details>'
    drawing = ""
    text = stage.text
    if stage.module is not None:
        svg = graphviz_svg(stage.module, filename) if graphviz else None
        drawing = f'<div class="graph">{svg or module_svg(stage.module, filename)}</div>'
        text = format_module(stage.module)
    return head + drawing + f'<pre class="text">{_text_lines(text, basename)}</pre></details>'


def _text_lines(text: str, basename: str) -> str:
    """Each line of a stage's text, marked with its source line where it names one in the
    explored file."""
    out = []
    for row in text.splitlines():
        found = LOCATION.search(row)
        line = f' data-line="{found["line"]}"' if found and found["file"] == basename else ""
        out.append(f'<span class="ir-line"{line}>{html.escape(row)}</span>')
    return "".join(out)
