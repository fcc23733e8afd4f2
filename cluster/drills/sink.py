"""The drills' sink: the one directory every node's PutFile delivers to, read as the
drill goes (how many delivered, which ids delivered twice). Lost ids can only be
counted once everything has settled (`checker.check_cluster`).

A delivered file is named by its FlowFile's uuid and its content starts with the
uuid the source gave it; PutFile's dot-temporaries are not delivered files.
"""

from __future__ import annotations

import os
import threading
from typing import Protocol

from .directory_watch import DirectoryNames


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
        self._names = DirectoryNames(path)
        self._read = (-1, 0)  # (generation of the names, how many of them) `duplicates` has read

    def delivered(self) -> int:
        return self._names.count()

    def pending(self) -> int:
        """0: the nodes' sources make the ids, and only their queues say what is left."""
        return 0

    def names(self) -> list[str]:
        """The delivered files, in the order they appeared (`directory_watch`: kept up to date by
        inotify, not listed again at each call)."""
        return self._names.names()

    def duplicates(self) -> dict[str, list[str]]:
        """Ids that more than one sink file carries (or that a file named otherwise
        carries) -> those files, read incrementally: new files only."""
        generation, names = self._names.snapshot()
        with self._lock:
            read_generation, read = self._read
        for name in names[read:] if generation == read_generation else names:
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
            self._read = (generation, len(names))
            return {carried: list(self._carriers[carried]) for carried in self._suspects}
