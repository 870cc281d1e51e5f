"""Bad source: 500 mutants of valid functions (tests/support/mutants.py) each compile to
CPython's result, raise CPython's exception or a CompileError; never a crash, never a wrong
answer. They share one module and run in one child process (a crash names its mutant)."""
import json
import subprocess
import sys
from pathlib import Path

from mutants import make_mutants, module_source

SUPPORT = Path(__file__).resolve().parent.parent / "support"
COUNT = 500


def test_mutants_compile_correctly_or_raise_compile_error(tmp_path):
    mutants = make_mutants(COUNT)
    (tmp_path / "fz_mutants.py").write_text(module_source(mutants))
    cases = [(name, args) for name, _, args in mutants]
    code = (f"import json, sys; sys.path[:0] = [{str(tmp_path)!r}, {str(SUPPORT)!r}]; import mutants; "
            f"print('RESULT ' + json.dumps(mutants.judge_mutants('fz_mutants', {cases!r})))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    started = [line[6:] for line in proc.stdout.splitlines() if line.startswith("START ")]
    sources = {name: source for name, source, _ in mutants}
    assert proc.returncode == 0, (f"crashed (exit {proc.returncode}) in {started[-1:]}:\n"
                                  f"{sources.get(started[-1]) if started else ''}\n{proc.stderr[-3000:]}")
    verdicts = json.loads(next(line[7:] for line in proc.stdout.splitlines() if line.startswith("RESULT ")))
    bad = [f"{name}: {verdict}\n{sources[name]}" for name, verdict in verdicts.items()
           if verdict.startswith("bad")]
    assert not bad, "\n".join(bad)
    assert len(verdicts) == COUNT
    kinds = {verdict for verdict in verdicts.values()}
    assert {"CompileError", "compiled, same result", "the same exception"} <= kinds, kinds
    assert sum(v != "skipped" for v in verdicts.values()) >= 0.9 * COUNT, verdicts
