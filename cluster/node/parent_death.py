"""Children that end when the process that started them dies (Linux PR_SET_PDEATHSIG).

The kernel sends a child a chosen signal when its parent dies, once the child has asked
for it with prctl(PR_SET_PDEATHSIG). The usual way to ask is a `preexec_fn`, Python run
in the child between fork and exec; but a forked child holds only a copy of the locks
other threads held at the fork, never released, and Python code there can wait on one
of them forever (Python's own documentation warns of it). A process with threads, as a
node or a test session always is, then hangs in `Popen`: the worker supervisor did, in
a CI run.

Instead the child is started through a small trampoline, a Python of its own that asks
for the signal and then `exec`s the real command; the request survives `exec`. If the
parent died before the child asked, the child sees another parent and ends at once.
The signal follows the thread that started the child: start it from a thread that
lives as long as the process means it to.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence

PR_SET_PDEATHSIG = 1

# argv: [parent pid, signal number, command...]. `-S`: no site packages, a fast start.
_TRAMPOLINE = (
    "import ctypes, os, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    f"if libc.prctl({PR_SET_PDEATHSIG}, int(sys.argv[2]), 0, 0, 0) != 0:\n"
    "    sys.exit('custody: prctl(PR_SET_PDEATHSIG) failed: ' + os.strerror(ctypes.get_errno()))\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    os._exit(1)\n"
    "try:\n"
    "    os.execvp(sys.argv[3], sys.argv[3:])\n"
    "except OSError as error:\n"
    "    print(f'custody: cannot run {sys.argv[3]}: {error.strerror}', file=sys.stderr)\n"
    "    os._exit(127)\n"
)


def dies_with_this_process(command: Sequence[str], signum: int = signal.SIGTERM) -> list[str]:
    """`command` started so that it is sent `signum` when this process dies, to give
    to `subprocess.Popen` without a `preexec_fn`. The child's pid is the command's; a
    command that cannot be run ends it with code 127 and one line on its stderr."""
    if not command:
        raise ValueError("an empty command")
    return [sys.executable, "-S", "-c", _TRAMPOLINE, str(os.getpid()), str(int(signum)), *command]
