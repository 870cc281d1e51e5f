"""The parent's side of a worker process (`fuzz.worker`): send a program, read its verdict.

A worker that dies while judging (a crash), or spends more than the timeout's CPU time on
one program (a hang: it is killed), turns into a `Died` verdict for that program; the next request starts a
fresh worker. Workers are also replaced every `RECYCLE` programs: compiled machine code
stays mapped until its process exits (README, "Tests and benchmarks").
"""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECYCLE = 150
POLL_SECONDS = 1.0
WALL_FACTOR = 20             # a worker starved of the CPU is still stopped after this many timeouts


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system) process `pid` has used, from /proc; None off Linux."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
        ready = self.wait(timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            return self.died("no verdict within the timeout" if not ready else "the worker died")
        return json.loads(line)

    def wait(self, timeout: float) -> bool:
        """Whether the worker answered before spending `timeout` seconds of CPU time.

        CPU time, as the worker's own timers count it (`judge.timed`): a loaded machine
        stretches the wall clock, and a slow answer is not a hang. The wall clock still
        bounds the wait, at WALL_FACTOR timeouts.
        """
        start_wall, start_cpu = time.monotonic(), cpu_seconds(self.proc.pid)
        while True:
            ready, _, _ = select.select([self.proc.stdout], [], [], POLL_SECONDS)
            if ready:
                return True
            wall = time.monotonic() - start_wall
            cpu = cpu_seconds(self.proc.pid)
            spent = wall if cpu is None or start_cpu is None else cpu - start_cpu
            if spent > timeout or wall > WALL_FACTOR * timeout:
                return False

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
