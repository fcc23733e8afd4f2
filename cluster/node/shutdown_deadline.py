"""A stopping node exits within its shutdown deadline, however its files close.

A node stopped on purpose (SIGTERM, SIGINT) leaves the cluster, closes its WAL,
content and provenance files, and exits. Closing a file on HDFS waits on its
pipeline: a DataNode that died or a network cut makes each close wait out the
storage's deadline (`[hdfs] io_timeout`), and a node with a dozen files open could
take minutes to stop. An operator (or a supervisor such as systemd or Docker, which
kills what does not stop in time) expects a bounded stop, as NiFi's graceful
shutdown period bounds its own.

Past `[node] shutdown_timeout` seconds after the stop was asked for, the node prints
every thread's stack (what it was still waiting on), says what it is doing, and
exits with `EXIT_STOPPED_LATE`. What it had not closed is left as a crash leaves
it: everything committed is in its WAL, and the node's next start, or the node that
adopts its shards, recovers it (HDFS lease recovery closes the files it left open).
"""

from __future__ import annotations

import faulthandler
import logging
import os
import sys
import threading
from collections.abc import Callable

DEFAULT_SHUTDOWN_TIMEOUT = 30.0
EXIT_STOPPED_LATE = 1


def exit_now(code: int) -> None:
    """Exit at once, with the log flushed (no thread is joined)."""
    logging.shutdown()
    os._exit(code)


def watch_shutdown(
    stop: threading.Event, timeout: float, log: logging.Logger, exit: Callable[[int], None] = exit_now
) -> tuple[threading.Event, threading.Thread]:
    """Once `stop` is set, wait `timeout` seconds for the returned event (set it when
    the node has closed everything); if it is not set by then, exit the process.
    Returns (that event, the watching thread)."""
    done = threading.Event()

    def watch() -> None:
        stop.wait()
        if done.wait(timeout):
            return
        log.error(
            "still stopping %.0f s after the stop was asked for ([node] shutdown_timeout): exiting now; "
            "what is not closed is recovered as after a crash (the next start, or the node that adopts "
            "its shards); the stacks below show what it waited on",
            timeout,
        )
        try:
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        except (OSError, ValueError):  # stderr closed: the exit matters more than the stacks
            pass
        exit(EXIT_STOPPED_LATE)

    watcher = threading.Thread(target=watch, name="shutdown-deadline", daemon=True)
    watcher.start()
    return done, watcher
