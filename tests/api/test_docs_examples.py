"""The Python examples of the user-facing docs run and their asserts hold.

Each page's ```python blocks run in order in one child process (with a timeout), as one
file, so a block may use what an earlier one defined and astjit can read the source. A
block whose first line is `# not run: <why>` is prose only (a GPU, a side effect); one
whose first line is `# needs: <module>` runs with the other blocks needing that module,
in a process of their own, skipped where the module is not installed."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = ("guide.md", "comparison.md")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
DIRECTIVE = re.compile(r"# (not run|needs): *(\S.*)")


def example_groups(page: str) -> dict[str, list[tuple[int, str]]]:
    """The page's runnable blocks by the module they need ('' for none): (line, code)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    groups: dict[str, list[tuple[int, str]]] = {}
    for found in BLOCK.finditer(text):
        code = found[1]
        line = text.count("\n", 0, found.start(1)) + 1
        directive = DIRECTIVE.match(code.splitlines()[0]) if code.strip() else None
        if directive and directive[1] == "not run":
            continue
        needs = directive[2].strip() if directive else ""
        groups.setdefault(needs, []).append((line, code))
    return groups


CASES = [(page, needs) for page in PAGES for needs in example_groups(page)]


@pytest.mark.parametrize("page, needs", CASES,
                         ids=[f"{page}:{needs or 'astjit'}" for page, needs in CASES])
def test_examples_run(tmp_path, page, needs):
    if needs and importlib.util.find_spec(needs) is None:
        pytest.skip(f"{needs} is not installed")
    parts, origins = [], []  # origins: (first line in the file, line on the page)
    length = 0
    for line, code in example_groups(page)[needs]:
        origins.append((length + 1, line))
        parts.append(code)
        length += code.count("\n")
    script = tmp_path / "docs_examples.py"
    script.write_text("".join(parts))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)

    def on_page(found: re.Match) -> str:
        start, line = max(o for o in origins if o[0] <= int(found[1]))
        return f"docs/{page} line {line + int(found[1]) - start}"

    where = re.sub(r'"[^"]*docs_examples\.py", line (\d+)', on_page, done.stderr)
    assert done.returncode == 0, where[-4000:]
