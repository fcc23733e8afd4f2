"""A Kafka processor's look while no task runs: a thread that, every `CHECK_S`,
takes the lock of the processor's client when it is free (never waiting for it: a
task that runs serves its client itself, and waits for the look to end) and calls
`look` holding it.

PublishKafka uses it for its idle producer: librdkafka reports an outage (every
broker down) only through a callback that the producer's `poll` serves, and a
publisher with nothing queued runs no task to poll. A broker restarted meanwhile may
have left the producer's last transaction open on a partition (`hanging`), and every
read_committed reader of that partition would wait at it until the next FlowFile
came, which may be never (a shard drained on an adopter).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

CHECK_S = 1.0
LOG_EVERY_S = 60.0  # a look that keeps failing is logged once a minute, not every second
log = logging.getLogger(__name__)


def watch(name: str, lock: threading.Lock, stop: threading.Event, look: Callable[[], None]) -> threading.Thread:
    """Start the thread; it ends once `stop` is set. An error of `look` is logged (at
    most once a minute), and the next check goes on."""

    def run() -> None:
        logged = -LOG_EVERY_S
        while not stop.wait(CHECK_S):
            if not lock.acquire(blocking=False):
                continue
            try:
                if not stop.is_set():
                    look()
            except Exception:  # noqa: BLE001 - the look is retried at the next check
                if time.monotonic() - logged >= LOG_EVERY_S:
                    logged = time.monotonic()
                    log.exception("%s: the look while idle failed", name)
            finally:
                lock.release()

    thread = threading.Thread(target=run, name=f"{name}-idle", daemon=True)
    thread.start()
    return thread
