"""A paced HTTP GET load on loopback, run in a process of its own (`custody bench admin`).

Request k is due at `start + k / rate` (an open-loop schedule, so a slow answer does
not lower the rate asked), sent round-robin over `endpoints` by a few threads, each
on its own keep-alive connection. The load is bounded in count (`rate * max_seconds`
requests) and in time (`max_seconds`), and ends early when `stop` is set.

Kept apart from the node's process so that the client's own work is not charged to
the node's interpreter (on a small machine it still takes a share of the CPU).
"""

from __future__ import annotations

import http.client
import threading
import time
import urllib.parse

LATE_S = 0.010  # a request sent this long after it was due counts as late


def run_load(
    url: str, endpoints: list[str], rate: float, max_seconds: float, threads: int, ready, stop, results
) -> None:
    """Send the load; put one dict on `results`: per endpoint the latencies (seconds)
    of the answers with status 200, and the counts of errors and late starts."""
    address = urllib.parse.urlsplit(url)
    limit = int(rate * max_seconds)
    lock = threading.Lock()
    next_slot = [0]
    latencies: dict[str, list[float]] = {endpoint: [] for endpoint in endpoints}
    errors, late = [0], [0]

    def connect() -> http.client.HTTPConnection:
        return http.client.HTTPConnection(address.hostname, address.port, timeout=10)

    def work(started: float) -> None:
        connection = connect()
        while True:
            with lock:
                slot = next_slot[0]
                next_slot[0] += 1
            due = started + slot / rate
            if slot >= limit or stop.is_set() or due - started > max_seconds:
                break
            delay = due - time.perf_counter()
            if delay > 0 and stop.wait(delay):
                break
            endpoint = endpoints[slot % len(endpoints)]
            sent = time.perf_counter()
            try:
                connection.request("GET", endpoint)
                response = connection.getresponse()
                response.read()
                ok = response.status == 200
            except (OSError, http.client.HTTPException):
                connection.close()
                connection = connect()
                ok = False
            answered = time.perf_counter()
            with lock:
                if ok:
                    latencies[endpoint].append(answered - sent)
                else:
                    errors[0] += 1
                if sent - due > LATE_S:
                    late[0] += 1
        connection.close()

    ready.set()
    started = time.perf_counter()
    workers = [threading.Thread(target=work, args=(started,), daemon=True) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    results.put(
        {"seconds": time.perf_counter() - started, "latencies": latencies, "errors": errors[0], "late": late[0]}
    )
