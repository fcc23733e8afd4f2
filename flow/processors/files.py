"""GetFile, ListFile + FetchFile, and PutFile: files on local disk.

PutFile is idempotent by FlowFile identity, so that a sink never delivers a FlowFile
twice when its session is retried: it writes to a temporary name, syncs, then renames
to a name derived from the FlowFile's uuid. A retry after a crash - the WAL never
recorded the first attempt - renames the same bytes onto the same name, so the
directory never holds a FlowFile twice.

Sources delete or move their input files only in `on_success`, after the session that
holds the data is durable: a crash before that offers the files again, so delivery is
at-least-once, never at-most-once.
"""

from __future__ import annotations

import errno
import itertools
import os
import re
import shutil
import threading
import time

from repositories.storage.local import fsync_directory

from ..processor import ProcessContext, Processor, PropertyDescriptor


def _scan(directory: str, pattern, recurse: bool, minimum_age_s: float):
    now = time.time()
    for root, dirs, names in os.walk(directory):
        if not recurse:
            dirs[:] = []
        for name in names:
            if not pattern.fullmatch(name):
                continue
            path = os.path.join(root, name)
            try:
                status = os.stat(path)
            except FileNotFoundError:
                continue
            if now - status.st_mtime < minimum_age_s:
                continue
            yield path, name, status


def _file_attributes(directory: str, path: str, name: str, status) -> dict:
    folder = os.path.dirname(path)
    relative = os.path.relpath(folder, directory)
    return {"filename": name, "path": "./" if relative == "." else relative + "/", "absolute.path": folder + "/",
            "file.size": str(status.st_size), "file.lastModifiedTime": str(int(status.st_mtime * 1000))}


_FILE_PROPERTIES = (
    PropertyDescriptor("input_directory", "string", required=True),
    PropertyDescriptor("file_filter", "regex", default=r"[^\.].*"),
    PropertyDescriptor("recurse", "boolean", default=False),
    PropertyDescriptor("minimum_file_age", "duration", default=0),
    PropertyDescriptor("batch_size", "integer", default=10),
)


class GetFile(Processor):
    type_name = "GetFile"
    description = "Picks up files from a directory; deletes them once the session is durable."
    is_source = True
    properties = _FILE_PROPERTIES + (PropertyDescriptor("keep_source_file", "boolean", default=False),)

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._lock = threading.Lock()
        self._in_flight: set[str] = set()

    def on_trigger(self, context: ProcessContext, session) -> None:
        directory = context["input_directory"]
        if not os.path.isdir(directory):
            context.logger.warning("%s: input directory %s does not exist", self.id, directory)
            context.yield_()
            return
        picked = []
        with self._lock:
            for path, name, status in _scan(directory, context["file_filter"], context["recurse"],
                                            context["minimum_file_age"]):
                if path in self._in_flight:
                    continue
                picked.append((path, name, status))
                self._in_flight.add(path)
                if len(picked) >= context["batch_size"]:
                    break
        if not picked:
            context.yield_()
            return
        try:
            for path, name, status in picked:
                flowfile = session.create(attributes=_file_attributes(directory, path, name, status))
                with open(path, "rb") as source:
                    flowfile = session.import_from(flowfile, source)
                session.receive(flowfile, f"file://{path}")
                session.transfer(flowfile, "success")
        except BaseException:
            self._release([p for p, _, _ in picked])
            raise
        paths = [p for p, _, _ in picked]
        keep = context["keep_source_file"]

        def delete_sources() -> None:
            if not keep:
                for path in paths:
                    try:
                        os.remove(path)
                    except FileNotFoundError:
                        pass
            self._release(paths)

        session.commit_async(delete_sources, lambda error: self._release(paths))

    def _release(self, paths) -> None:
        with self._lock:
            self._in_flight.difference_update(paths)


class ListFile(Processor):
    type_name = "ListFile"
    description = "Lists files (no content); remembers what it listed in state, committed with the listing."
    is_source = True
    properties = _FILE_PROPERTIES[:4]

    def on_trigger(self, context: ProcessContext, session) -> None:
        directory = context["input_directory"]
        if not os.path.isdir(directory):
            context.yield_()
            return
        state = session.get_state()
        last = int(state.get("timestamp", "-1"))
        seen_at_last = set(filter(None, state.get("names", "").split("\0")))
        found = [(path, name, status) for path, name, status in
                 _scan(directory, context["file_filter"], context["recurse"], context["minimum_file_age"])
                 if int(status.st_mtime * 1000) > last
                 or (int(status.st_mtime * 1000) == last and path not in seen_at_last)]
        if not found:
            context.yield_()
            return
        newest = max(int(status.st_mtime * 1000) for _, _, status in found)
        names = {path for path, _, status in found if int(status.st_mtime * 1000) == newest}
        if newest == last:
            names |= seen_at_last
        for path, name, status in found:
            flowfile = session.create(attributes=_file_attributes(directory, path, name, status))
            session.transfer(flowfile, "success")
        session.set_state({"timestamp": str(newest), "names": "\0".join(sorted(names))})


class FetchFile(Processor):
    type_name = "FetchFile"
    description = "Reads the file a FlowFile names into its content; completes (delete/move) after commit."
    properties = (
        PropertyDescriptor("file", "expression", default="${absolute.path}${filename}"),
        PropertyDescriptor("completion_strategy", "choice", default="none", choices=("none", "delete", "move")),
        PropertyDescriptor("move_destination_directory", "string"),
    )
    relationships = ("success", "not.found", "permission.denied", "failure")

    @classmethod
    def validate(cls, properties, dynamic):
        if properties["completion_strategy"] == "move" and not properties.get("move_destination_directory"):
            return [("move_destination_directory", "required when completion_strategy is move")]
        return []

    def on_trigger(self, context: ProcessContext, session) -> None:
        completed = []
        for flowfile in session.get_batch(10):
            path = context["file"].evaluate(flowfile)
            try:
                with open(path, "rb") as source:
                    flowfile = session.import_from(flowfile, source)
            except FileNotFoundError:
                session.transfer(session.penalize(flowfile), "not.found")
                continue
            except PermissionError:
                session.transfer(session.penalize(flowfile), "permission.denied")
                continue
            session.transfer(flowfile, "success")
            completed.append(path)
        strategy = context["completion_strategy"]
        target = context.get("move_destination_directory")

        def complete() -> None:
            for path in completed:
                try:
                    if strategy == "delete":
                        os.remove(path)
                    elif strategy == "move":
                        os.makedirs(target, exist_ok=True)
                        shutil.move(path, os.path.join(target, os.path.basename(path)))
                except OSError as error:
                    context.logger.warning("%s: could not complete %s: %s", self.id, path, error)

        session.commit_async(complete if strategy != "none" else None)


_SAFE = re.compile(r"[^A-Za-z0-9_.\-]")
PARTIAL_MAX_AGE_S = 600.0  # a temporary file older than this is a crashed write's leftover
_TEMPORARY = itertools.count(int.from_bytes(os.urandom(4), "big"))
_SWEPT: set[str] = set()  # directories whose crashed temporaries this process has swept
_SWEPT_LOCK = threading.Lock()


class PutFile(Processor):
    type_name = "PutFile"
    description = "Writes each FlowFile to a file named after its uuid (idempotent: temp name, then rename)."
    properties = (
        PropertyDescriptor("directory", "expression", required=True),
        PropertyDescriptor("create_missing_directories", "boolean", default=True),
        PropertyDescriptor("name_suffix", "string", default="", description="appended to the uuid-derived name"),
        PropertyDescriptor("sync", "boolean", default=True, description="fsync files and the directory"),
        PropertyDescriptor("batch_size", "integer", default=100),
    )
    relationships = ("success", "failure")

    _PARTIAL = re.compile(r"^\.[0-9a-f\-]{36}\.[0-9a-f]{8}\.partial$")

    def on_scheduled(self, context: ProcessContext) -> None:
        # A crash mid-write leaves a temporary file; the retry writes a new one. Remove
        # the leftovers of earlier runs (only where the directory does not vary), once
        # they are old enough not to be another node's write in progress: nodes of a
        # cluster deliver to one destination. The sweep reads the whole directory, which
        # may hold millions of delivered files, so it runs once per directory per process
        # (not again for every shard a node adopts) and off the caller's thread: an
        # engine starts, and an adopted shard resumes, without waiting on it.
        directory = context["directory"]
        self.sweeper = None
        if not directory.is_literal:
            return
        path = directory.evaluate()
        with _SWEPT_LOCK:
            if path in _SWEPT:
                return
            _SWEPT.add(path)
        self.sweeper = threading.Thread(target=self._sweep, args=(path, context.logger), name="put-file-sweep",
                                        daemon=True)
        self.sweeper.start()

    @classmethod
    def _sweep(cls, directory: str, logger) -> None:
        now = time.time()
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return
        except OSError as error:
            logger.warning("PutFile: cannot list %s to remove crashed writes' temporaries: %s", directory, error)
            return
        for name in names:
            if name.startswith(".") and cls._PARTIAL.match(name):
                path = os.path.join(directory, name)
                try:
                    if now - os.stat(path).st_mtime >= PARTIAL_MAX_AGE_S:
                        os.remove(path)
                except FileNotFoundError:
                    pass
                except OSError as error:
                    logger.warning("PutFile: cannot remove a crashed write's temporary %s: %s", path, error)

    def on_trigger(self, context: ProcessContext, session) -> None:
        sync = context["sync"]
        suffix = _SAFE.sub("_", context["name_suffix"])
        directories = set()
        written = []
        for flowfile in session.get_batch(context["batch_size"]):
            directory = context["directory"].evaluate(flowfile)
            target = os.path.join(directory, flowfile.id + suffix)
            temporary = None
            try:
                if context["create_missing_directories"] and directory not in directories:
                    os.makedirs(directory, exist_ok=True)
                temporary = os.path.join(directory, f".{flowfile.id}.{next(_TEMPORARY) & 0xFFFFFFFF:08x}.partial")
                fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    with session.read(flowfile) as source:
                        while chunk := source.read(1 << 20):
                            view = memoryview(chunk)
                            while view:
                                view = view[os.write(fd, view):]
                    if sync:
                        os.fsync(fd)
                finally:
                    os.close(fd)
                # The name depends only on the FlowFile's identity: a retry lands on it again.
                os.replace(temporary, target)
            except OSError as error:
                if temporary is not None:
                    try:
                        os.remove(temporary)
                    except OSError:
                        pass
                if error.errno in (errno.ENOSPC, errno.EDQUOT):
                    context.logger.error("%s: %s is full (%s); FlowFile %s is penalized and kept", self.id,
                                         directory, error.strerror, flowfile.id)
                else:
                    context.logger.error("%s: cannot write %s: %s", self.id, target, error)
                session.transfer(session.penalize(flowfile), "failure")
                continue
            directories.add(directory)
            written.append((flowfile, target))
        if sync:
            for directory in directories:
                fsync_directory(directory)
        for flowfile, target in written:
            session.send(flowfile, f"file://{target}")
            session.transfer(flowfile, "success")
