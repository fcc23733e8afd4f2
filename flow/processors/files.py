"""GetFile, ListFile + FetchFile, and PutFile: files on local disk.

PutFile is idempotent by FlowFile identity, so that a sink never delivers a FlowFile
twice when its session is retried: it writes to a temporary name, syncs, then renames
to a name derived from the FlowFile's uuid. A retry after a crash - the WAL never
recorded the first attempt - renames the same bytes onto the same name, so the
directory never holds a FlowFile twice.

The sources take each file exactly once (`flow.processors.intake`): a file's record
(inode, modification time, size, path) is committed with its FlowFile, the file is
deleted or moved after the commit, and a crash in between leaves the record for the
next run, which finishes the delete and never takes that file again. NiFi's GetFile
and FetchFile offer such a file again (at-least-once).

Paths built from attributes: a FetchFile that deletes or moves the file its FlowFile
names, and a PutFile whose directory is an expression, act on whatever path those
attributes lead to. Such a flow is refused at load unless the processor keeps the paths
under `allowed_root` (a path that leaves it goes to `failure`, the reason in
`path.refused`) or says `allow_any_path: true`.

A FlowFile whose content cannot be read (damaged, cut short or gone) goes to PutFile's
`failure`, penalized, the reason in `content.error` (`content_failures`); the rest of
the batch is written.
"""

from __future__ import annotations

import errno
import os
import re
import threading
import time
from typing import TYPE_CHECKING

from repositories.storage.local import fsync_directory

from ..errors import ExpressionError, UnreadableContent
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .content_failures import ContentFailures
from .expression_failures import ExpressionFailures
from .file_writes import PARTIAL, write_file
from .intake import FileIdentity, HandsOverIntake, TakenFile, TakenFiles
from .intake import format as intake_format
from .intake.ledger import choose_files, list_new
from .refusals import Refusals

if TYPE_CHECKING:
    from ..session import ProcessSession


def _scan(directory: str, pattern, recurse: bool, minimum_age_s: float):
    """(path, name, stat) of each file of `directory` (an absolute path) to take."""
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
    return {
        "filename": name,
        "path": "./" if relative == "." else relative + "/",
        "absolute.path": folder + "/",
        "file.size": str(status.st_size),
        "file.lastModifiedTime": str(int(status.st_mtime * 1000)),
    }


REFUSED_ATTRIBUTE = "path.refused"
_ALLOWED_ROOT = PropertyDescriptor(
    "allowed_root",
    "string",
    description="a directory the paths FlowFiles lead to must stay under, symlinks resolved; the others go to "
    "failure with the reason in path.refused (unset: any path, which a path built from attributes "
    "may only take with allow_any_path)",
)
_ALLOW_ANY_PATH = PropertyDescriptor(
    "allow_any_path",
    "boolean",
    default=False,
    description="accept, without allowed_root, a path built from FlowFile attributes that may lead anywhere this "
    "process can write (a FetchFile that deletes or moves, a PutFile whose directory is an expression)",
)


def _unconfined(properties, what: str) -> list[tuple[str, str]]:
    """The problem (for `Processor.validate`) of a processor whose attributes steer
    `what` (a delete, a move, a write) to any path: refused at flow load unless it keeps
    them under `allowed_root` or says `allow_any_path`. Whoever can set an attribute
    (a client of ListenHTTP, a file name) could otherwise make it delete or overwrite
    any file the node's user may."""
    if properties.get("allowed_root") or properties.get("allow_any_path"):
        return []
    return [
        (
            "allowed_root",
            f"{what}, so whoever sets those attributes chooses the path: set allowed_root to the "
            "directory the paths must stay under, or allow_any_path: true to accept any path",
        )
    ]


class _Refused(Exception):
    """A path that leaves the allowed root, or that no file can have."""


def _allowed_root(context: ProcessContext) -> str | None:
    root = context.get("allowed_root")
    return os.path.realpath(root) if root else None


def _confined(path: str, root: str | None) -> str:
    """`path` resolved (symlinks followed) when it must stay under `root`, which it does;
    else `path` as it is. Raises `_Refused` saying where it leads."""
    if "\0" in path:
        raise _Refused(f"path {path!r} holds a NUL character")
    if root is None:
        return path
    resolved = os.path.realpath(path)
    if os.path.commonpath([root, resolved]) != root:
        where = "is" if resolved == path else f"leads to {resolved},"
        raise _Refused(f"{path} {where} outside allowed_root {root}")
    return resolved


def _path_of(context: ProcessContext, name: str, flowfile, root: str | None, failures, refusals) -> str | None:
    """Property `name` evaluated for `flowfile` and kept under `root` (`_confined`); None
    when the FlowFile was set aside (its expression failed) or refused (its path left
    the root, or no file can have it)."""
    try:
        return _confined(context[name].evaluate(flowfile), root)
    except ExpressionError as error:
        failures.set_aside(flowfile, name, error)
    except _Refused as refused:
        refusals.refuse(flowfile, str(refused))
    return None


_FILE_PROPERTIES = (
    PropertyDescriptor("input_directory", "string", required=True),
    PropertyDescriptor("file_filter", "regex", default=r"[^\.].*"),
    PropertyDescriptor("recurse", "boolean", default=False),
    PropertyDescriptor("minimum_file_age", "duration", default=0),
    PropertyDescriptor("batch_size", "integer", default=10, minimum=1),
)


class GetFile(HandsOverIntake, Processor):
    """Takes the files of a directory, each exactly once: a file's FlowFile and the
    record that it was taken commit in one WAL transaction, the file is deleted after,
    and the record is dropped from the state once the delete is durable. After a crash
    the first run finishes the recorded deletes before it takes anything new, and never
    takes a recorded file again (by inode, modification time and size: a new file under
    the same name is taken). With `keep_source_file` the files stay and are taken again
    at every run, by design. A file whose directory this process cannot write is not
    taken (it could not be deleted). Concurrent tasks commit one at a time."""

    type_name = "GetFile"
    description = "Picks up files from a directory, each exactly once; deletes them once the session is durable."
    is_source = True
    properties = _FILE_PROPERTIES + (PropertyDescriptor("keep_source_file", "boolean", default=False),)

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._taken = TakenFiles(processor_id)

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        directory = os.path.abspath(context["input_directory"])
        if not os.path.isdir(directory):
            context.logger.warning("%s: input directory %s does not exist", self.id, directory)
            context.yield_()
            return
        keep = context["keep_source_file"]
        # Of a node's workers, each takes the files whose paths hash to it (`flow.workers`).
        worker = context.worker
        writable: dict[str, bool] = {}

        def deletable(path: str) -> bool:
            folder = os.path.dirname(path)
            if folder not in writable:
                writable[folder] = os.access(folder, os.W_OK)
            return writable[folder]

        taken = self._taken
        with taken.lock:
            state = taken.read(session)
            taken.finish_orphans(state)
            found = (
                (FileIdentity.of(status), (path, name))
                for path, name, status in _scan(
                    directory, context["file_filter"], context["recurse"], context["minimum_file_age"]
                )
                if (keep or deletable(path)) and worker.takes_path(path)
            )
            picked = choose_files(found, state, taken.claimed, context["batch_size"])
            claimed = [identity for identity, _ in picked]
            taken.claim(claimed)
        records = []
        try:
            for identity, (path, name) in picked:
                try:
                    source = open(path, "rb")
                except FileNotFoundError:
                    continue  # gone since the scan
                with source:
                    status = os.fstat(source.fileno())
                    if FileIdentity.of(status) != identity:
                        continue  # changed since the scan: the next scan sees it as it is now
                    flowfile = session.create(attributes=_file_attributes(directory, path, name, status))
                    flowfile = session.import_from(flowfile, source)
                session.receive(flowfile, f"file://{path}")
                session.transfer(flowfile, "success")
                if not keep:
                    records.append(TakenFile(identity, path))
        except BaseException:
            taken.release(claimed)
            raise
        if not taken.commit(session, records, claimed):
            context.yield_()


class ListFile(HandsOverIntake, Processor):
    """Lists files (no content), each once per modification: the listing mark (newest
    modification time listed, and the paths listed with it) is committed in the same
    WAL transaction as the FlowFiles it emits, so a crash lists a file neither twice nor
    never. A file modified again is listed again; one that appears with a modification
    time older than the mark (moved in with its time kept) is not listed. Concurrent
    tasks list one at a time."""

    type_name = "ListFile"
    description = "Lists files (no content); remembers what it listed in state, committed with the listing."
    is_source = True
    properties = _FILE_PROPERTIES[:4]

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._lock = threading.Lock()  # held from reading the mark to committing the next one

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        directory = os.path.abspath(context["input_directory"])
        if not os.path.isdir(directory):
            context.yield_()
            return
        with self._lock:
            state = intake_format.unpack(session.get_state(), self.id)
            found = {
                path: (name, status)
                for path, name, status in _scan(
                    directory, context["file_filter"], context["recurse"], context["minimum_file_age"]
                )
            }
            listed, mark = list_new(
                ((path, int(status.st_mtime * 1000)) for path, (_, status) in found.items()), state.listing
            )
            if not listed:
                context.yield_()
                return
            for path in listed:
                name, status = found[path]
                session.transfer(session.create(attributes=_file_attributes(directory, path, name, status)), "success")
            session.set_state(intake_format.pack(state.replace(listing=mark)))
            session.commit()


class FetchFile(HandsOverIntake, Processor):
    """Reads the file a FlowFile names into its content. With a completion strategy
    (delete or move) the file is finished exactly once: its record commits with the
    FlowFile, the delete or move follows the commit, and the first run after a crash
    finishes what is recorded (it runs when a FlowFile waits for it); a file rewritten
    since it was read is left alone."""

    type_name = "FetchFile"
    description = "Reads the file a FlowFile names into its content; completes (delete/move) after commit."
    properties = (
        PropertyDescriptor("file", "expression", default="${absolute.path}${filename}"),
        PropertyDescriptor("completion_strategy", "choice", default="none", choices=("none", "delete", "move")),
        PropertyDescriptor("move_destination_directory", "string"),
        _ALLOWED_ROOT,
        _ALLOW_ANY_PATH,
    )
    relationships = ("success", "not.found", "permission.denied", "failure")

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._taken = TakenFiles(processor_id)

    @classmethod
    def validate(cls, properties, dynamic):
        strategy = properties["completion_strategy"]
        if strategy == "move" and not properties.get("move_destination_directory"):
            return [("move_destination_directory", "required when completion_strategy is move")]
        if strategy != "none" and not properties["file"].is_literal:
            return _unconfined(
                properties,
                f"completion_strategy {strategy} {strategy}s whatever file the FlowFile's "
                f"attributes name (file: {properties['file'].text[:200]})",
            )
        return []

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        strategy = context["completion_strategy"]
        destination = context.get("move_destination_directory")
        root = _allowed_root(context)
        failures = ExpressionFailures(self.id, context, session, to_failure=True)
        refusals = Refusals(self.id, context, session, REFUSED_ATTRIBUTE)
        taken = self._taken
        with taken.lock:
            taken.finish_orphans(taken.read(session))
        records, claimed = [], []
        try:
            for flowfile in session.get_batch(10):
                path = _path_of(context, "file", flowfile, root, failures, refusals)
                if path is None:
                    continue
                path = os.path.abspath(path)
                try:
                    source = open(path, "rb")
                except FileNotFoundError:
                    session.transfer(session.penalize(flowfile), "not.found")
                    continue
                except PermissionError:
                    session.transfer(session.penalize(flowfile), "permission.denied")
                    continue
                except OSError as error:  # a directory, a name too long, ...
                    refusals.refuse(flowfile, f"cannot open {path}: {error.strerror or error}")
                    continue
                with source:
                    identity = FileIdentity.of(os.fstat(source.fileno()))
                    flowfile = session.import_from(flowfile, source)
                session.transfer(flowfile, "success")
                if strategy == "delete":
                    records.append(TakenFile(identity, path))
                elif strategy == "move":
                    records.append(TakenFile(identity, path, intake_format.MOVE, os.path.abspath(destination)))
                else:
                    continue
                taken.claim([identity])
                claimed.append(identity)
        except BaseException:
            taken.release(claimed)
            raise
        failures.log()
        refusals.log()
        taken.commit(session, records, claimed)


_SAFE = re.compile(r"[^A-Za-z0-9_.\-]")
PARTIAL_MAX_AGE_S = 600.0  # a temporary file older than this is a crashed write's leftover
_SWEPT: set[str] = set()  # directories whose crashed temporaries this process has swept
_SWEPT_LOCK = threading.Lock()


class PutFile(Processor):
    """Writes each FlowFile to a file: by default named after its uuid (a retry after a
    crash lands on its own file); with `file_name` (NiFi's way, `${filename}`) named as
    the expression says, and `conflict_resolution` deciding what a name already taken
    does, as NiFi's Conflict Resolution Strategy: `replace` it, `ignore` the FlowFile
    (to success, the file left as it was), or `fail` (to failure). Each is safe to run
    again after a crash that lost the session: replace writes the same file again,
    ignore finds it there, and fail takes a file holding exactly the FlowFile's bytes for
    its own earlier write. The file is written whole before it has its name, synced, and
    then named, never over another file but with replace (`file_writes`)."""

    type_name = "PutFile"
    description = "Writes each FlowFile to a file: named after its uuid, or file_name (NiFi's ${filename})."
    properties = (
        PropertyDescriptor("directory", "expression", required=True),
        PropertyDescriptor(
            "file_name",
            "expression",
            default="",
            description="the file's name (NiFi's PutFile: ${filename}); unset: the FlowFile's uuid and name_suffix",
        ),
        PropertyDescriptor(
            "conflict_resolution",
            "choice",
            default="replace",
            choices=("replace", "ignore", "fail"),
            description="what a file_name already taken does: replace the file, ignore the FlowFile (to success), "
            "or fail it",
        ),
        PropertyDescriptor("create_missing_directories", "boolean", default=True),
        PropertyDescriptor("name_suffix", "string", default="", description="appended to the uuid-derived name"),
        PropertyDescriptor("sync", "boolean", default=True, description="fsync files and the directory"),
        PropertyDescriptor("batch_size", "integer", default=100, minimum=1),
        _ALLOWED_ROOT,
        _ALLOW_ANY_PATH,
    )
    relationships = ("success", "failure")

    @classmethod
    def validate(cls, properties, dynamic):
        directory = properties["directory"]
        if directory.is_literal:
            return []
        return _unconfined(
            properties, f"the directory is built from the FlowFile's attributes ({directory.text[:200]})"
        )

    _PARTIAL = PARTIAL  # a crashed write's temporary file (file systems without unnamed files)

    def on_scheduled(self, context: ProcessContext) -> None:
        # A crash mid-write leaves a temporary file where the file system has no unnamed
        # files (`file_writes`) and in releases before them; the retry writes a new one.
        # Remove the leftovers of earlier runs (only where the directory does not vary),
        # once they are old enough not to be another node's write in progress: nodes of
        # a cluster deliver to one destination. The sweep reads the whole directory, which
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
        self.sweeper = threading.Thread(
            target=self._sweep, args=(path, context.logger), name="put-file-sweep", daemon=True
        )
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
            if name.startswith(".") and cls._PARTIAL.fullmatch(name):
                path = os.path.join(directory, name)
                try:
                    if now - os.stat(path).st_mtime >= PARTIAL_MAX_AGE_S:
                        os.remove(path)
                except FileNotFoundError:
                    pass
                except OSError as error:
                    logger.warning("PutFile: cannot remove a crashed write's temporary %s: %s", path, error)

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        sync = context["sync"]
        suffix = _SAFE.sub("_", context["name_suffix"])
        create = context["create_missing_directories"]
        root = _allowed_root(context)
        named = bool(context["file_name"].text)
        conflict = context["conflict_resolution"] if named else "replace"
        failures = ExpressionFailures(self.id, context, session, to_failure=True)
        refusals = Refusals(self.id, context, session, REFUSED_ATTRIBUTE)
        unreadable = ContentFailures(self.id, context, session)
        directories = set()
        written = []
        batch = session.get_batch(context["batch_size"])
        session.prefetch(batch)
        for flowfile in batch:
            directory = _path_of(context, "directory", flowfile, root, failures, refusals)
            if directory is None:
                continue
            name = _file_name(context, flowfile, suffix, failures, refusals) if named else flowfile.id + suffix
            if name is None:
                continue
            target = os.path.join(directory, name)
            try:
                if create and directory not in directories:
                    os.makedirs(directory, exist_ok=True)
                placed = write_file(session, flowfile, directory, target, sync, conflict)
            except UnreadableContent as error:
                unreadable.set_aside(flowfile, error)
                continue
            except OSError as error:
                if error.errno in (errno.ENOSPC, errno.EDQUOT):
                    context.limited_log.error(
                        f"{self.id}:full",
                        "%s: %s is full (%s); FlowFile %s is penalized and routed to failure",
                        self.id,
                        directory,
                        error.strerror,
                        flowfile.id,
                    )
                else:
                    context.limited_log.error(
                        f"{self.id}:write",
                        "%s: cannot write %s: %s; the FlowFile is penalized and routed to failure",
                        self.id,
                        target,
                        error,
                    )
                session.transfer(session.penalize(flowfile), "failure")
                continue
            if placed == "taken":
                context.limited_log.warning(
                    f"{self.id}:taken",
                    "%s: %s already holds another file; FlowFile %s goes to failure (conflict_resolution fail)",
                    self.id,
                    target,
                    flowfile.id,
                )
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
        failures.log()
        refusals.log()
        unreadable.log()


def _file_name(context: ProcessContext, flowfile, suffix: str, failures, refusals) -> str | None:
    """`file_name` evaluated for `flowfile`: one name in the directory, never a path (a
    name with a slash, `.` or `..`, or a NUL is refused, as is an empty one)."""
    try:
        name = context["file_name"].evaluate(flowfile)
    except ExpressionError as error:
        failures.set_aside(flowfile, "file_name", error)
        return None
    if not name or name in (".", "..") or "/" in name or "\0" in name or len(name.encode()) > 255:
        refusals.refuse(flowfile, f"file_name {name[:200]!r} is not a file name in the directory")
        return None
    return name
