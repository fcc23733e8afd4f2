"""The stop of a long-running command: an event set by SIGTERM or SIGINT.

Python runs a signal's handler in the main thread, between two of its bytecodes. The
kernel's part, Python's C-level handler, which only marks the signal as received, runs
in whichever thread the kernel picks, and then the main thread must wake to run the
Python handler. A main thread blocked on a lock (`threading.Event.wait`) wakes only if
its own wait is interrupted; it is not when the kernel gives the signal to another
thread (a node has dozens, native ones included), nor when the signal lands just
before the main thread enters the wait. Then the command does not stop: `custody run`
sent SIGTERM right after "node running" stayed running about one time in six on this
machine, until another signal woke its main thread.

So the main thread waits on a pipe, not on a lock: Python's C-level handler writes
each signal's number to it (`signal.set_wakeup_fd`) from whichever thread it runs in,
and `set` writes to it too. The main thread wakes, runs the Python handler, and sees
the event set. Other threads wait on the event as on any.

The Python handler itself only starts a thread, which logs and sets the event: the
handler runs wherever the main thread is, also inside a write to stderr (which
logging's write would enter again) or holding the event's lock (which `set` takes).
"""

from __future__ import annotations

import faulthandler
import logging
import os
import select
import signal
import threading
import time


class SignalStop(threading.Event):
    """A `threading.Event` whose `wait` in the main thread also wakes for a signal
    that any thread received. Make it in the main thread (`stop_on_signals`)."""

    def __init__(self) -> None:
        super().__init__()
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)

    def set(self) -> None:
        super().set()
        try:
            os.write(self._wake_write, b"\0")
        except BlockingIOError:  # the pipe is full: the main thread has a wake-up waiting
            pass

    def wait(self, timeout: float | None = None) -> bool:
        if threading.current_thread() is not threading.main_thread():
            return super().wait(timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            # Returning to Python code here runs the handler of a signal another thread
            # received; the thread that handler starts sets the event and writes again.
            select.select([self._wake_read], [], [], remaining)
            self._drain()
        return True

    def _drain(self) -> None:
        try:
            while os.read(self._wake_read, 512):
                pass
        except BlockingIOError:
            pass


def stop_on_signals(log: logging.Logger, doing: str) -> SignalStop:
    """A `SignalStop` set by SIGTERM or SIGINT (logged as "received X: `doing`"): the
    long-running commands stop cleanly on either. `kill -USR1 <pid>` prints every
    thread's stack to stderr (a stuck node's jstack) and the command goes on."""
    stop = SignalStop()

    def stopping(number: int) -> None:
        log.info("received %s: %s", signal.Signals(number).name, doing)
        stop.set()

    def on_signal(number, _frame) -> None:
        threading.Thread(target=stopping, args=(number,), name="stop-on-signal", daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.set_wakeup_fd(stop._wake_write, warn_on_full_buffer=False)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    return stop
