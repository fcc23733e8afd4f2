"""`LazyPool`: a thread pool made on first use, for the content repository's side jobs
(checksum-file syncs beside their resource file's, parallel syncs, background closes).

Most repositories never need one (one resource, local disk), so none is started until
a job arrives. `_lock` guards `_pool`; `shutdown` waits for the jobs under way (unless
told not to), and a job submitted after it starts a new pool.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor


class LazyPool:
    def __init__(self, name: str, threads: int):
        self._name = name
        self._threads = threads
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self._threads, thread_name_prefix=self._name)
            return self._pool

    def submit(self, job: Callable, *args) -> Future:
        return self.executor().submit(job, *args)

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop taking jobs; with `wait`, wait for the jobs under way (without it, those
        queued are dropped and those running finish on their own: an abandoned
        repository, whose jobs may wait on a storage that does not answer)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=wait, cancel_futures=not wait)
