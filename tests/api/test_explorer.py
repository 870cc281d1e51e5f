"""The IR explorer's page (astjit/explore/): the source beside every stage, each IR node and
printed line marked with the source line it came from, drawn by the built-in layout and by
Graphviz where installed, nothing fetched; `python -m astjit explore` writing it; and the
page in headless Chromium, where clicking a source line highlights what it produced.

Chromium: the page clicks the source line its address's fragment names (`#line=7`) on
load, and `--dump-dom` prints the document as the script left it. Skipped only where no
chromium is installed (CI installs it: .ci/run)."""
import importlib.util
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pytest

from astjit import jit
from astjit.explore import explore

SOURCE = '''\
import numpy as np


def newton_sqrt(x):
    y = x if x > 1.0 else 1.0
    while abs(y * y - x) > 1e-12 * x:
        y = 0.5 * (y + x / y)
    return y


def halve(n):
    return n // 2


def collatz_steps(n):
    steps = 0
    while n != 1:
        n = halve(n) if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def gaussian_sum(x):
    y = np.exp(-x * x)
    return np.sum(y * 2.0)
'''
LOOP_BODY = 7
"""`y = 0.5 * (y + x / y)`'s line in SOURCE."""
GRAPH_STAGES = ("parsed", "typed", "optimized", "grad")


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    path = tmp_path_factory.mktemp("explorer") / "explored.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("explored", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Marks(HTMLParser):
    """Per stage: the source lines its drawn nodes and printed lines are marked with."""

    def __init__(self):
        super().__init__()
        self.stage = None
        self.nodes: dict[str, list[int]] = {}
        self.lines: dict[str, list[int]] = {}
        self.unavailable: dict[str, bool] = {}
        self.svgs: dict[str, int] = {}
        self.source: list[int] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if "stage" in classes:
            self.stage = attrs["data-stage"]
            self.nodes[self.stage], self.lines[self.stage] = [], []
        elif tag == "svg":
            self.svgs[self.stage] = self.svgs.get(self.stage, 0) + 1
        elif "unavailable" in classes:
            self.unavailable[self.stage] = True
        if "data-line" not in attrs:
            return
        line = int(attrs["data-line"])
        if "src" in classes:
            self.source.append(line)
        elif "ir-node" in classes:
            self.nodes[self.stage].append(line)
        elif "ir-line" in classes:
            self.lines[self.stage].append(line)


def marks_of(page: str) -> Marks:
    marks = Marks()
    marks.feed(page)
    return marks


@pytest.mark.parametrize("graphviz", [False, True], ids=["builtin", "graphviz"])
def test_every_graph_stage_marks_the_nodes_each_line_made(explored, graphviz):
    if graphviz and shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed (the built-in layout is tested)")
    page = explore(explored.newton_sqrt, (2.0,), graphviz=graphviz)
    marks = marks_of(page)
    assert marks.source == [4, 5, 6, 7, 8]
    for stage in GRAPH_STAGES:
        assert marks.svgs[stage] == 1, stage
        # the loop body's nodes: its operations; the typed stage keeps the parsed ones
        assert marks.nodes[stage].count(LOOP_BODY) >= 3, (stage, marks.nodes[stage])
        assert set(marks.nodes[stage]) <= {4, 5, 6, 7, 8}
        assert set(marks.lines[stage]) == set(marks.nodes[stage]) | {4}  # + the graph header
    assert marks.nodes["parsed"].count(5) > marks.nodes["optimized"].count(5) > 0  # if -> select
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page, re.IGNORECASE)


def test_text_stages_and_their_marks(explored):
    page = explore(explored.newton_sqrt, (2.0,), graphviz=False)
    marks = marks_of(page)
    assert "fdiv double" in page and "fcmp ogt double" in page  # llvm, llvm-opt: the text
    assert not marks.lines["llvm"] and not marks.lines["llvm-opt"]  # LLVM IR has no locations
    assert "this function has no kernels" in page  # scalar code: the CUDA C is the prelude
    array_page = explore(explored.gaussian_sum, (np.linspace(0.0, 1.0, 5),), graphviz=False)
    array_marks = marks_of(array_page)
    assert "__global__" in array_page  # the CUDA C
    assert "gaussian_sum(ndarray[float64, shape (5,)])" in array_page  # the title
    assert "this function has no kernels" not in array_page
    assert {24, 25} <= set(array_marks.lines["cuda"])  # kernels headed by their fused node


def test_grad_of_a_function_of_ints_is_shown_as_unavailable(explored):
    marks = marks_of(explore(explored.collatz_steps, (27,), graphviz=False))
    assert marks.unavailable == {"grad": True}
    assert "grad" not in marks.svgs


def test_a_jitted_function_is_explored_as_its_python_function(explored):
    page = explore(jit(explored.newton_sqrt), (2.0,), graphviz=False)
    assert marks_of(page).nodes["optimized"].count(LOOP_BODY) >= 3


def test_callees_of_the_same_file_widen_the_source_shown(explored):
    marks = marks_of(explore(explored.collatz_steps, (27,), graphviz=False))
    assert marks.source == list(range(11, 21))  # halve (11-12) and collatz_steps (15-20)
    assert 12 in marks.nodes["parsed"]  # halve's graph is in the parsed module


def test_command_line_writes_the_page(tmp_path):
    source = tmp_path / "cli_explored.py"
    source.write_text(SOURCE)
    page = tmp_path / "page.html"
    argv = [sys.executable, "-m", "astjit", "explore", f"{source}:newton_sqrt", "--args", "2.0",
            "--out", str(page), "--builtin-layout"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"wrote {page}"
    marks = marks_of(page.read_text())
    assert marks.nodes["optimized"].count(LOOP_BODY) >= 3


def test_command_line_arguments_are_expressions_in_the_files_namespace(tmp_path):
    source = tmp_path / "cli_arrays.py"
    source.write_text(SOURCE)
    page = tmp_path / "arrays.html"
    argv = [sys.executable, "-m", "astjit", "explore", f"{source}:gaussian_sum",
            "--args", "np.linspace(0.0, 1.0, 5)", "--out", str(page), "--builtin-layout"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "array&lt;f64, 1&gt;" in page.read_text()
    argv[argv.index("--args") + 1] = "np.no_such_function(3)"
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    assert "--args 'np.no_such_function(3)': AttributeError" in done.stderr


def test_command_line_reports_a_compile_error(tmp_path):
    source = tmp_path / "cli_refused.py"
    source.write_text("def f(x):\n    return {x: 1}\n")
    argv = [sys.executable, "-m", "astjit", "explore", f"{source}:f", "--args", "2.0",
            "--out", str(tmp_path / "page.html")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("astjit: ") and "line 2" in done.stderr
    assert not (tmp_path / "page.html").exists()


BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")


class Highlights(HTMLParser):
    """What the dumped document says is selected and highlighted, per stage."""

    def __init__(self):
        super().__init__()
        self.stage = None
        self.selected = None
        self.counts: dict[str, str] = {}
        self.highlighted: dict[str | None, list[tuple[str, str]]] = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "body":
            self.selected = attrs.get("data-selected")
        if "stage" in classes:
            self.stage = attrs["data-stage"]
            self.counts[self.stage] = attrs.get("data-highlighted")
        if "hl" in classes:
            kind = next(c for c in ("src", "ir-node", "ir-line") if c in classes)
            self.highlighted.setdefault(self.stage, []).append((kind, attrs.get("data-line")))


def dump_dom(page, fragment, profile):
    argv = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            f"--user-data-dir={profile}", "--enable-logging=stderr",
            "--virtual-time-budget=5000", "--dump-dom", page.as_uri() + fragment]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("chromium did not dump the page in 120 s")
    assert "Uncaught" not in done.stderr, done.stderr[-3000:]
    parsed = Highlights()
    parsed.feed(done.stdout)
    return parsed


@pytest.mark.skipif(BROWSER is None, reason="no chromium or chromium-browser on PATH")
@pytest.mark.parametrize("graphviz", [False, True], ids=["builtin", "graphviz"])
def test_clicking_a_source_line_highlights_its_nodes_in_every_stage(explored, tmp_path, graphviz):
    if graphviz and shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed (the built-in layout is tested)")
    page = tmp_path / "page.html"
    page.write_text(explore(explored.newton_sqrt, (2.0,), graphviz=graphviz))

    clicked = dump_dom(page, f"#line={LOOP_BODY}", tmp_path / "profile")
    assert clicked.selected == str(LOOP_BODY)
    assert clicked.highlighted[None] == [("src", str(LOOP_BODY))]  # the source line itself
    for stage in GRAPH_STAGES:
        marked = clicked.highlighted[stage]
        assert all(line == str(LOOP_BODY) for _, line in marked), (stage, marked)
        nodes = [kind for kind, _ in marked if kind == "ir-node"]
        assert len(nodes) >= 3, (stage, marked)  # the body's mul, add, truediv at least
        assert int(clicked.counts[stage]) == len(marked)
    for stage in ("llvm", "llvm-opt"):
        assert stage not in clicked.highlighted and clicked.counts[stage] == "0"

    untouched = dump_dom(page, "", tmp_path / "profile")
    assert untouched.selected is None and not untouched.highlighted
