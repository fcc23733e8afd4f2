"""The drills' sink: the one directory every node's PutFile delivers to, read as the
drill goes (how many delivered, which ids delivered twice). Lost ids can only be
counted once everything has settled (`checker.check_cluster`).

A delivered file is named by its FlowFile's uuid and its content starts with the
uuid the source gave it; PutFile's dot-temporaries are not delivered files.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Protocol


class SinkView(Protocol):
    """Where a drill's workload delivers, as the drill reads it while it runs."""

    def delivered(self) -> int:
        """Deliveries so far (each duplicate counted). Thread-safe."""

    def duplicates(self) -> dict[str, list[str]]:
        """Ids delivered more than once -> where each delivery of it is."""

    def pending(self) -> int:
        """Ids sent to the cluster and not delivered yet, when the workload knows them."""


class SinkDirectory:
    """Thread-safe: the drill's sampler counts deliveries while its loop checks them."""

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()
        self._ids: dict[str, str] = {}  # sink file -> the id its content carries
        self._carriers: dict[str, list[str]] = {}  # carried id -> the sink files that carry it
        self._suspects: set[str] = set()  # carried ids whose files are not exactly [that id]
        self._listing: tuple[int, list[str]] = (-1, [])  # the directory's mtime (ns) when listed, its names

    def delivered(self) -> int:
        return len(self.names())

    def pending(self) -> int:
        """0: the nodes' sources make the ids, and only their queues say what is left."""
        return 0

    def names(self) -> list[str]:
        """The delivered files. Listing 400,000 names takes about a second, and drills
        poll this: the last listing is reused while the directory's mtime is unchanged
        and more than a second old (a file created in the same clock tick as the listing
        may not move the mtime)."""
        try:
            mtime = os.stat(self.path).st_mtime_ns
        except FileNotFoundError:
            return []
        with self._lock:
            listed_at, names = self._listing
            if mtime == listed_at and time.time_ns() - mtime > 1_000_000_000:
                return names
        names = [name for name in os.listdir(self.path) if not name.startswith(".")]
        with self._lock:
            self._listing = (mtime, names)
        return names

    def duplicates(self) -> dict[str, list[str]]:
        """Ids that more than one sink file carries (or that a file named otherwise
        carries) -> those files, read incrementally: new files only."""
        for name in self.names():
            with self._lock:
                if name in self._ids:
                    continue
            with open(os.path.join(self.path, name), "rb") as handle:
                first = handle.read(64).split(None, 1)
            carried = first[0].decode(errors="replace") if first else ""
            with self._lock:
                self._ids[name] = carried
                files = self._carriers.setdefault(carried, [])
                files.append(name)
                if files != [carried]:
                    self._suspects.add(carried)
        with self._lock:
            return {carried: list(self._carriers[carried]) for carried in self._suspects}
