"""Subcommands of the `custody` CLI, one module each.

Every module here defines `register(subparsers)`, which adds its parser and sets
`func` (a callable taking the parsed arguments and returning an exit code).
`cluster.cli` discovers the modules, so adding a command is adding a file.
"""


def stop_on_signals(log, doing: str):
    """A threading.Event set by SIGTERM or SIGINT (logged as "received X: `doing`"):
    the long-running commands stop cleanly on either. `kill -USR1 <pid>` prints every
    thread's stack to stderr (a stuck node's jstack) and the command goes on."""
    import faulthandler
    import signal
    import threading

    stop = threading.Event()

    def on_signal(number, _frame) -> None:
        log.info("received %s: %s", signal.Signals(number).name, doing)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    return stop
