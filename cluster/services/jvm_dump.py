"""What a JVM service that does not answer is doing, for the message of the error that
says so: its main thread's stack and its heap's use.

A HotSpot JVM that receives SIGQUIT prints every thread's stack ("Full thread dump")
and then its heap's use ("Heap") to its standard output, which the harness writes to
the service's log, and goes on running. `hang_report(process)` sends it, waits for the
heap lines to appear after that point of the log, and returns the "main" thread's
stack and the heap lines: one answer to "is it stuck, and where, or is its heap full".
"""

from __future__ import annotations

import os
import signal

from .process import ManagedProcess, ServiceError, wait_until

DUMP_DEADLINE_S = 15.0  # a JVM in long garbage collections prints its dump late
HEAP_LINES = 12


def hang_report(process: ManagedProcess, deadline: float = DUMP_DEADLINE_S) -> str:
    """The main thread's stack and the heap's use of the JVM `process`, printed on
    SIGQUIT into its log; a line saying why when there is none."""
    if not process.alive():
        return "(the JVM is not running)"
    try:
        start = os.path.getsize(process.log_path)
    except OSError as error:
        return f"(no log to read a thread dump from: {error})"
    process.signal(signal.SIGQUIT)

    def printed() -> str | None:
        with open(process.log_path, "rb") as handle:
            handle.seek(start)
            text = handle.read().decode(errors="replace")
        dump = text.find("Full thread dump")
        heap = text.find("\nHeap\n", dump)
        return text[dump:] if dump >= 0 and heap >= 0 and text.find("\n", heap + 6) >= 0 else None

    try:
        dump = wait_until(printed, deadline, "the JVM's thread dump", interval=0.2)
    except ServiceError:
        return f"(the JVM printed no thread dump within {deadline:.0f} s of a SIGQUIT)"
    blocks = dump.split("\n\n")
    main = next((block for block in blocks if block.startswith('"main"')), '(no thread named "main")')
    heap = dump[dump.find("\nHeap\n") + 1 :].splitlines()[:HEAP_LINES]
    return "main thread:\n" + main.strip() + "\n" + "\n".join(heap)
