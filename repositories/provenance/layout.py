"""Where a provenance repository's files are, in each of its containers::

    journals/<first-id>.<slot>.journal      current and not yet merged generations
    events/<first-id>.prov, .toc            event files and their tables of contents
    index/shard-<created-ms>/               tantivy shards (first container only)
    layout.json                             the container list (first container only)

`layout.json` lets a tool open the repository from its first container alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from . import event_file_format as eff
from . import files
from . import journal_format as jf
from .errors import CorruptFileError, ProvenanceError

LAYOUT = "layout.json"
JOURNALS = "journals"
EVENTS = "events"
INDEX = "index"
_REWRITTEN = "the node that owns the repository writes it again when it opens it"


class ProvenanceLayout:
    def __init__(self, containers: Sequence[str]):
        self.containers = [os.path.abspath(c) for c in containers]

    @staticmethod
    def read_containers(path: str) -> Sequence[str]:
        """The containers of the repository whose first container is `path`."""
        layout = os.path.join(path, LAYOUT)
        if os.path.exists(layout):
            try:
                containers = json.loads(files.read_all(layout))["containers"]
            except (ValueError, KeyError, TypeError) as error:  # JSONDecodeError, UnicodeDecodeError too
                reason = f"not a layout ({type(error).__name__}: {error}); {_REWRITTEN}"
                raise CorruptFileError(layout, reason) from None
            if not (isinstance(containers, list) and containers and all(isinstance(c, str) and c for c in containers)):
                raise CorruptFileError(layout, f"its containers are not a list of directories; {_REWRITTEN}")
            # The node writes absolute paths of directories it made: anything else is a
            # damaged (or foreign) layout, which would show a repository with events missing.
            missing = [c for c in containers if not (os.path.isabs(c) and os.path.isdir(c))]
            if missing:
                reason = f"it names containers that are not existing absolute directories: {missing}; {_REWRITTEN}"
                raise CorruptFileError(layout, reason)
            return containers
        if not os.path.isdir(os.path.join(path, EVENTS)):
            raise ProvenanceError(f"{path} is not a provenance repository (no {LAYOUT}, no {EVENTS}/)")
        return (path,)

    @property
    def index_directory(self) -> str:
        return os.path.join(self.containers[0], INDEX)

    def events_directory(self, container: str) -> str:
        return os.path.join(container, EVENTS)

    def journals_directory(self, container: str) -> str:
        return os.path.join(container, JOURNALS)

    def prepare(self) -> None:
        """Create the directories, and write `layout.json` if it says anything new."""
        for container in self.containers:
            files.ensure_directory(self.journals_directory(container))
            files.ensure_directory(self.events_directory(container))
        target = os.path.join(self.containers[0], LAYOUT)
        data = json.dumps({"format": 1, "containers": self.containers}, indent=1).encode()
        if os.path.exists(target) and files.read_all(target) == data:
            return
        files.delete(target + ".partial")
        files.write_new(target + ".partial", [data])
        files.rename(target + ".partial", target)
        files.fsync_directory(self.containers[0])

    def journal_paths(self, first_id: int, per_container: int) -> list[tuple[str, int]]:
        """(path, slot) of every journal of the generation starting at `first_id`."""
        paths, slot = [], 0
        for container in self.containers:
            for _ in range(per_container):
                paths.append((os.path.join(self.journals_directory(container), jf.journal_name(first_id, slot)), slot))
                slot += 1
        return paths

    def existing_journals(self) -> dict[int, list[str]]:
        """Paths of the journals on disk, by generation (first event id)."""
        found: dict[int, list[str]] = {}
        for container in self.containers:
            directory = self.journals_directory(container)
            for name in files.list_names(directory):
                parsed = jf.parse_journal_name(name)
                if parsed:
                    found.setdefault(parsed[0], []).append(os.path.join(directory, name))
        return found

    def event_file_paths(self) -> list[str]:
        """Paths of the committed event files (not TOCs, not partial files)."""
        found = []
        for container in self.containers:
            directory = self.events_directory(container)
            for name in files.list_names(directory):
                parsed = eff.parse_name(name)
                if parsed and parsed[1] == eff.EVENT_SUFFIX and not parsed[2]:
                    found.append(os.path.join(directory, name))
        return found
