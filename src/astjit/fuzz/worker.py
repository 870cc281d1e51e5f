"""The worker process: judges the programs its parent names, one JSON line in, one out.

Compiled code runs here, not in the fuzzer's process, so a crash (a segfault, an abort
inside LLVM) ends only the worker; the parent (`fuzz.pool`) sees the pipe close and knows
which program was running. Results go to a private copy of the original stdout; fd 1 is
pointed at stderr, so nothing a program or a library prints can corrupt the protocol.
"""
from __future__ import annotations

import json
import os
import sys
import warnings

from astjit.fuzz.judge import judge, load


def serve() -> None:
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    warnings.simplefilter("ignore")  # NumPy's RuntimeWarnings on the CPython side
    for line in sys.stdin:
        request = json.loads(line)
        try:
            result = judge(load(request["path"], request["name"]))
        except Exception as exc:  # noqa: BLE001 - a program that cannot be judged is reported
            result = {"verdict": "error", "detail": f"the judge raised {type(exc).__name__}: {exc}"}
        finally:
            sys.modules.pop(request["name"], None)
        results.write(json.dumps(result) + "\n")
        results.flush()


if __name__ == "__main__":
    serve()
