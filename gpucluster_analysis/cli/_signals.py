"""SIGTERM and SIGHUP stop gca as Ctrl-C does.

A command stopped by any of the three undoes its unfinished part (the file being stored is
rolled back, a report's new directory and an `ingest --to`'s temporary store are removed,
worker processes end), prints `gca: interrupted` and exits 130 (cli/_output.py, `guarded`).
Without this, SIGTERM (systemd, `timeout`, a batch scheduler) and SIGHUP (a closed terminal)
would end the process on the spot and leave all of that behind.

Python runs a signal's handler in the main thread, and DuckDB lets it only between parts of
a query, which at scale take minutes. So a thread wakes on the signal (signal.set_wakeup_fd)
while the main thread is still inside the query, stops the queries running on the open
stores (db/connect.py, interrupt_queries) and, for SIGTERM and SIGHUP, interrupts the main
thread as Ctrl-C (SIGINT) does.
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading
from types import FrameType

STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)  # no SIGHUP on Windows

_received: list[int] = []  # the signals that stopped gca, in order
_ignore_ctrl_c: list[bool] = [False]  # SIGINT was ignored when gca started (a job put in the background by sh)
_stopping = threading.RLock()  # also taken by the handler in the main thread, which a second signal can re-enter
_installed: dict[int, object] = {}  # signal -> the handler it had before
_wakeup: list[int] = []  # [read end, write end] of the pipe the signals wake the thread through


def install() -> None:
    """Handle Ctrl-C, SIGTERM and SIGHUP as one interrupt (main thread, before the command).
    A signal ignored when gca started (nohup's SIGHUP, sh's SIGINT of a job started with &)
    stays ignored."""
    if threading.current_thread() is not threading.main_thread() or _installed:
        return
    _received.clear()
    ctrl_c = signal.getsignal(signal.SIGINT)
    if ctrl_c is signal.default_int_handler or ctrl_c == signal.SIG_IGN:
        # ours even when ignored: a stop signal is passed on as SIGINT (_stop)
        _ignore_ctrl_c[0] = ctrl_c == signal.SIG_IGN
        _installed[signal.SIGINT] = signal.signal(signal.SIGINT, _on_interrupt)
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) == signal.SIG_DFL:
            _installed[sig] = signal.signal(sig, _on_stop)
    if not any(sig in _installed for sig in STOP_SIGNALS):
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    if signal.set_wakeup_fd(write_end, warn_on_full_buffer=False) != -1:
        # another part of the process watches signals this way: leave it to it; the handler
        # below still stops gca, once the running query is done
        signal.set_wakeup_fd(-1)
        os.close(read_end)
        os.close(write_end)
        return
    _wakeup[:] = [read_end, write_end]
    threading.Thread(target=_forward, args=(read_end,), name="gca-signals", daemon=True).start()


def restore() -> None:
    """Put back the handlers install() replaced (the command has run: a late signal then
    ends the process as it would any other)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig, handler in _installed.items():
        signal.signal(sig, handler)  # type: ignore[arg-type]  # what signal.signal() gave back
    _installed.clear()
    if _wakeup:
        signal.set_wakeup_fd(-1)
        os.close(_wakeup[1])  # the thread reads the end of the pipe and returns
        _wakeup.clear()


def interrupted_by() -> str | None:
    """The name of the signal that stopped gca (SIGINT, SIGTERM, SIGHUP), or None."""
    return signal.Signals(_received[0]).name if _received else None


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    if _ignore_ctrl_c[0] and not _received:  # a Ctrl-C gca was started to ignore, not a stop signal passed on
        return
    _received.append(signum)
    raise KeyboardInterrupt


def _on_stop(signum: int, frame: FrameType | None) -> None:
    # Reached first only when the thread could not be started, or when the main thread
    # is running Python code.
    _stop(signum)


def _forward(read_end: int) -> None:
    stop_numbers = {int(sig) for sig in STOP_SIGNALS}
    try:
        while data := os.read(read_end, 64):
            for signum in data:
                if signum in stop_numbers:
                    _stop(signum)
                elif signum == signal.SIGINT and (_received or not _ignore_ctrl_c[0]):
                    _interrupt_queries()
    finally:
        os.close(read_end)


def _interrupt_queries() -> None:
    connect = sys.modules.get("gpucluster_analysis.db.connect")  # not imported: no store is open
    if connect is not None:
        connect.interrupt_queries()


def _stop(signum: int) -> None:
    """Interrupt the main thread as Ctrl-C does, unless gca was interrupted already: a second
    SIGTERM while gca undoes its unfinished part does not interrupt that too (SIGKILL still
    ends it at once)."""
    with _stopping:
        if _received:
            return
        _received.append(signum)
    _thread.interrupt_main(signal.SIGINT)
    _interrupt_queries()
