"""Helpers of the tests that stop or kill a real `gca` process midway.

`start_gca` runs gca in a process of its own that stops at a chosen call (a function of a
gca module, its n-th call) and says so through a file, so that a test sends its signal at a
known point, not after a guessed delay. Every process it starts, and every process those
start (the forkserver, its workers, the resource tracker), carries a mark in its
environment: `marked` finds them through /proc, wherever they were moved in the tree.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

needs_proc = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads processes through /proc (Linux)")

# Stops at the call GCA_TEST_STOP names ([module, function, n, "before" | "after"]), having
# set the attributes GCA_TEST_SET names ([[module, name, value], ...]), then runs gca's main.
_DRIVER = r"""
import importlib, json, os, signal, sys, time
# gca as a terminal or a scheduler starts it, whatever this test run inherited (a suite started
# under nohup ignores SIGHUP, and gca rightly keeps an ignored signal ignored)
for stop_signal in (signal.SIGHUP, signal.SIGTERM):
    signal.signal(stop_signal, signal.SIG_DFL)
for module, name, value in json.loads(os.environ.get("GCA_TEST_SET", "[]")):
    setattr(importlib.import_module(module), name, value)
module, name, nth, when = json.loads(os.environ["GCA_TEST_STOP"])
owner = importlib.import_module(module)
real = getattr(owner, name)
calls = []

def stopped(*args, **kwargs):
    calls.append(1)
    if len(calls) != nth:
        return real(*args, **kwargs)
    result = real(*args, **kwargs) if when == "after" else None
    open(os.environ["GCA_TEST_READY"], "w").close()
    time.sleep(300)
    return result if when == "after" else real(*args, **kwargs)

setattr(owner, name, stopped)
from gpucluster_analysis.cli import main
sys.argv = ["gca", *sys.argv[1:]]
main()
"""


class Gca:
    """A gca process started by start_gca."""

    def __init__(self, proc: subprocess.Popen[str], mark: str, ready: Path) -> None:
        self.proc = proc
        self.mark = mark
        self.ready = ready

    def wait_stopped(self, timeout: float = 60) -> None:
        """Until the process reached its stop (the test fails if it ended first)."""
        deadline = time.monotonic() + timeout
        while not self.ready.exists():
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                pytest.fail(f"gca ended (exit {self.proc.returncode}) before its stop:\n{err}")
            if time.monotonic() > deadline:
                pytest.fail("gca did not reach its stop")
            time.sleep(0.05)

    def signal(self, sig: signal.Signals, timeout: float = 60) -> tuple[int, str, str]:
        """Send `sig`, then read stdout and stderr to their end: returns only once no process
        holds them (gca and whatever it started), as `gca ... | tee log` would; exit code,
        stdout, stderr."""
        self.proc.send_signal(sig)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_all()
            pytest.fail(f"the output pipes were still held {timeout} s after {sig.name}: {self.left()}")
        return self.proc.returncode, out, err

    def left(self) -> dict[int, str]:
        """The processes of this run still alive (not gca's own, once it has ended)."""
        return {pid: cmd for pid, cmd in marked(self.mark).items() if pid != self.proc.pid}

    def wait_all_gone(self, timeout: float = 20) -> dict[int, str]:
        """Until no process of this run is left; what was left at the timeout."""
        deadline = time.monotonic() + timeout
        while (left := self.left()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return left

    def kill_all(self) -> None:
        for pid in [self.proc.pid, *self.left()]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()


def start_gca(
    args: list[str | Path],
    tmp_path: Path,
    stop: tuple[str, str, int, str],
    settings: Sequence[tuple[str, str, object]] = (),
    env: dict[str, str] | None = None,
) -> Gca:
    """gca ARGS in a process of its own, stopping at `stop`: (module, function, n, "before"
    or "after" the n-th call runs)."""
    mark = uuid.uuid4().hex
    ready = tmp_path / f"stopped-{mark}"
    environment = {
        **os.environ,
        **(env or {}),
        "GCA_TEST_MARK": mark,
        "GCA_TEST_READY": str(ready),
        "GCA_TEST_STOP": json.dumps(list(stop)),
        "GCA_TEST_SET": json.dumps([list(s) for s in settings]),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, *map(str, args)],
        env=environment,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return Gca(proc, mark, ready)


def marked(mark: str) -> dict[int, str]:
    """Live processes whose environment holds GCA_TEST_MARK=mark: pid -> command line."""
    needle = f"GCA_TEST_MARK={mark}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = (entry / "environ").read_bytes()  # empty for a zombie: it has ended
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in environment.split(b"\0"):
            found[int(entry.name)] = command.replace(b"\0", b" ").decode(errors="replace").strip()
    return found


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])
