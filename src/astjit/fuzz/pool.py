"""The parent's side of a worker process (`fuzz.worker`): send a program, read its verdict.

A worker that dies while judging (a crash), or takes longer than the timeout (a hang:
it is killed), turns into a `Died` verdict for that program; the next request starts a
fresh worker. Workers are also replaced every `RECYCLE` programs: compiled machine code
stays mapped until its process exits (README, "Tests and benchmarks").
"""
from __future__ import annotations

import json
import select
import subprocess
import sys
import tempfile
from pathlib import Path

RECYCLE = 150


class Worker:
    """One worker process, started on first use."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.errors = None
        self.judged = 0

    def judge(self, path: Path, name: str, timeout: float) -> dict:
        """The verdict on the program at `path`; {"verdict": "crash", ...} where the worker died."""
        if self.proc is None or self.judged >= RECYCLE:
            self.start()
        self.judged += 1
        try:
            self.proc.stdin.write(json.dumps({"path": str(path), "name": name}) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self.died("the worker had exited")
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            return self.died("no verdict within the timeout" if not ready else "the worker died")
        return json.loads(line)

    def died(self, what: str) -> dict:
        proc = self.proc
        self.stop()
        code = proc.returncode
        self.errors.seek(0)
        tail = self.errors.read().decode(errors="replace")[-3000:]
        self.errors.close()
        self.errors = None
        return {"verdict": "crash", "detail": f"{what} (exit status {code})", "stderr": tail}

    def start(self) -> None:
        self.close()
        self.errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "astjit.fuzz.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.errors, text=True)
        self.judged = 0

    def close(self) -> None:
        self.stop()
        if self.errors is not None:
            self.errors.close()
            self.errors = None

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except BrokenPipeError:
                pass
        self.proc = None
