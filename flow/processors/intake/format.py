"""The intake state layout: what a source has taken and not yet finished with.

GetFile, FetchFile, ListFile and ListenHTTP keep it as their processor state, which
a session writes in the same WAL transaction as the FlowFiles it creates
(`ProcessSession.set_state`). So the record of what was taken is durable exactly when
the data is, and a crash between that commit and the source's own last step (deleting
or moving a file, answering a client) neither loses nor duplicates: the next run reads
the record, finishes the step, and never takes the same input again. This module is
the only place the layout is read and written; the cluster hands a dead incarnation's
intake states to the next incarnation with `flow.processors.intake.hand_over`.

A processor state is a map of text to text, stored as the attributes of one WAL record
per processor (`flow.shard`; the bytes are the WAL's record format). Layout version 2,
one row per entry:

    key                                   value
    "intake.layout"                       "2"
    "taken:<inode>:<mtime_ns>:<size>"     "delete" NUL <path>
                                          "move" NUL <path> NUL <destination directory>
    "listed.timestamp_ms"                 <ms>: the newest modification time listed
                                          (no entry before the first listing)
    "listed:<path>"                       "" (a path listed with exactly that time)
    "key:<idempotency key>"               <ms> ":" <fingerprint>: when the request that
                                          carried it was committed, and its payload's
                                          fingerprint; or <ms> alone, for a key carried
                                          over from version 1 (no fingerprint known)

Numbers are decimal ASCII digits, no sign, no leading zero (<ms> since the Unix epoch;
<mtime_ns> in nanoseconds, as `os.stat` gives it: the finest time the file system
keeps, so that a file rewritten in place is told apart as often as it can be).
<path> is the path the source read, as text; NUL
never occurs in a path. An idempotency key is 1 to `MAX_KEY_LENGTH` characters of the
request header, printable ASCII. "taken" entries are the files taken and not yet
deleted or moved (GetFile, FetchFile); the "listed" entries are ListFile's mark; the
"key" entries are ListenHTTP's recent keys. Each processor writes only its own kind.

A payload's <fingerprint> (`payload_fingerprint`, the IETF Idempotency-Key draft's
fingerprint) is the first 8 bytes of a SHA-256, in unpadded base64url (RFC 4648 5,
11 characters), over:

    b"custody.listenhttp.fingerprint.1" NUL
    for each attribute the request's headers gave, by name:
        u32 length, UTF-8 name, u32 length, UTF-8 value      (big-endian lengths)
    u64 body length, the body

so that a retry that repeats its first request finds the same fingerprint in any later
release: changing this computation needs a new layout version. A different payload
passes for the same once in 2**64 comparisons.

Version 1 is version 2 without fingerprints: "intake.layout" is "1" and a "key" entry's
value is <ms> alone. A state is written in the oldest version that holds it: version 2
only when a key has a fingerprint, so that the release before this layout still reads
every other state (GetFile's, ListFile's, FetchFile's, a ListenHTTP's without keys) in
a cluster upgraded node by node. Keys read from version 1 are carried over without a
fingerprint, and a retry with one of them is answered as version 1 answered it,
whatever its payload.

Version 0 (no "intake.layout" key; read, never written) is ListFile's state before this
layout: {"timestamp": <ms, or -1>, "names": the paths joined by NUL}. An empty state is
version 0 with nothing in it.

A state with another version, a key of no known kind, or a value that does not parse
is refused with `IntakeStateError`, never read in part: a record skipped would let the
source take that input a second time.
"""

from __future__ import annotations

import base64
import hashlib
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ...errors import FlowError

LAYOUT_KEY = "intake.layout"
VERSION = 2
READABLE_VERSIONS = ("1", "2")  # and 0, which has no LAYOUT_KEY
TAKEN_PREFIX = "taken:"
LISTED_TIMESTAMP_KEY = "listed.timestamp_ms"
LISTED_PREFIX = "listed:"
KEY_PREFIX = "key:"
LEGACY_TIMESTAMP_KEY = "timestamp"
LEGACY_NAMES_KEY = "names"
MAX_KEY_LENGTH = 200

DELETE = "delete"
MOVE = "move"
ACTIONS = (DELETE, MOVE)

_NUMBER = r"(?:0|[1-9][0-9]*)"
_TAKEN_KEY = re.compile(rf"taken:({_NUMBER}):({_NUMBER}):({_NUMBER})")
_DECIMAL = re.compile(_NUMBER)
_PRINTABLE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
_FINGERPRINT = re.compile(r"[A-Za-z0-9_-]{11}")
_COMMITTED_KEY = re.compile(rf"({_NUMBER})(?::([A-Za-z0-9_-]{{11}}))?")
FINGERPRINT_DOMAIN = b"custody.listenhttp.fingerprint.1\0"
FINGERPRINT_BYTES = 8
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
assert _TAKEN_KEY.fullmatch("taken:12:1700000000123456789:0") and not _TAKEN_KEY.fullmatch("taken:01:1:1")
assert _COMMITTED_KEY.fullmatch("1700:AAAAAAAAAAA") and not _COMMITTED_KEY.fullmatch("1700:")


class IntakeStateError(FlowError):
    """A processor's intake state cannot be read (another layout version, a damaged
    entry). Names the processor and the entry; the source takes nothing until it is fixed."""


@dataclass(frozen=True, slots=True, order=True)
class FileIdentity:
    """Which file a path held when a source took it: a new file under the same name has
    another inode, and a file rewritten in place another modification time or size."""

    inode: int
    mtime_ns: int
    size: int

    @property
    def key(self) -> str:
        """Its entry's key in the layout."""
        return f"{TAKEN_PREFIX}{self.inode}:{self.mtime_ns}:{self.size}"

    @classmethod
    def of(cls, status) -> FileIdentity:
        """The identity of an `os.stat_result`."""
        return cls(status.st_ino, status.st_mtime_ns, status.st_size)


@dataclass(frozen=True, slots=True)
class TakenFile:
    """A file taken (its FlowFile committed) whose delete or move is not known durable."""

    identity: FileIdentity
    path: str
    action: str = DELETE
    destination: str | None = None  # the directory a MOVE puts it in

    def __post_init__(self):
        if self.action not in ACTIONS:
            raise ValueError(f"unknown completion {self.action!r} (known: {', '.join(ACTIONS)})")
        if (self.action == MOVE) != (self.destination is not None):
            raise ValueError("a move needs a destination directory, and only a move has one")
        if "\0" in self.path or (self.destination is not None and "\0" in self.destination):
            raise ValueError("a path cannot contain NUL")


@dataclass(frozen=True, slots=True)
class ListingMark:
    """ListFile's mark: the newest modification time listed, and the paths listed with it."""

    timestamp_ms: int = -1
    paths: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class CommittedKey:
    """An idempotency key's request, committed: when, and its payload's fingerprint
    (None for a key carried over from layout version 1)."""

    committed_ms: int
    fingerprint: str | None = None

    def __post_init__(self):
        if self.fingerprint is not None and not _FINGERPRINT.fullmatch(self.fingerprint):
            raise ValueError(f"not a payload fingerprint: {self.fingerprint[:20]!r}")


@dataclass(frozen=True, eq=True)
class IntakeState:
    """What one processor's intake state holds (read-only; `replace` makes a changed copy)."""

    taken: Mapping[FileIdentity, TakenFile] = field(default_factory=dict)
    listing: ListingMark = ListingMark()
    keys: Mapping[str, CommittedKey] = field(default_factory=dict)  # idempotency key -> its request

    __hash__ = None

    def __post_init__(self):
        object.__setattr__(self, "taken", MappingProxyType(dict(self.taken)))
        object.__setattr__(self, "keys", MappingProxyType(dict(self.keys)))

    def replace(self, *, taken=None, listing=None, keys=None) -> IntakeState:
        return IntakeState(
            self.taken if taken is None else taken,
            self.listing if listing is None else listing,
            self.keys if keys is None else keys,
        )


def valid_key(key: str) -> bool:
    """Whether `key` may be an idempotency key (see the layout)."""
    return 0 < len(key) <= MAX_KEY_LENGTH and _PRINTABLE.fullmatch(key) is not None


def payload_fingerprint(body: bytes, attributes: Mapping[str, str]) -> str:
    """The fingerprint of a request's payload: its body and the attributes its headers
    gave (see the layout; never change it within a layout version)."""
    digest = hashlib.sha256(FINGERPRINT_DOMAIN)
    for name in sorted(attributes):
        for text in (name, attributes[name]):
            encoded = text.encode("utf-8", "surrogatepass")
            digest.update(_U32.pack(len(encoded)))
            digest.update(encoded)
    digest.update(_U64.pack(len(body)))
    digest.update(body)
    return base64.urlsafe_b64encode(digest.digest()[:FINGERPRINT_BYTES]).rstrip(b"=").decode("ascii")


def pack(state: IntakeState) -> dict[str, str]:
    """The processor state that holds `state`, in the oldest layout version that holds it."""
    fingerprinted = any(committed.fingerprint is not None for committed in state.keys.values())
    packed = {LAYOUT_KEY: str(VERSION) if fingerprinted else "1"}
    for identity, taken in state.taken.items():
        if taken.identity != identity:
            raise ValueError(f"taken file {taken.path} filed under another identity")
        fields = [taken.action, taken.path] + ([taken.destination] if taken.action == MOVE else [])
        packed[identity.key] = "\0".join(fields)
    if state.listing.timestamp_ms >= 0:
        packed[LISTED_TIMESTAMP_KEY] = str(state.listing.timestamp_ms)
        for path in state.listing.paths:
            packed[LISTED_PREFIX + path] = ""
    elif state.listing.paths:
        raise ValueError("listed paths without a listing time")
    for key, committed in state.keys.items():
        if not valid_key(key):
            raise ValueError(f"not an idempotency key: {key[: MAX_KEY_LENGTH + 1]!r}")
        packed[KEY_PREFIX + key] = (
            str(committed.committed_ms)
            if committed.fingerprint is None
            else f"{committed.committed_ms}:{committed.fingerprint}"
        )
    return packed


def unpack(state: Mapping[str, str], owner: str = "") -> IntakeState:
    """The intake state a processor state holds (any readable version); raises
    `IntakeStateError` naming `owner` (the processor) when it cannot be read whole."""
    if LAYOUT_KEY not in state:
        return _unpack_version_0(state, owner)
    version = state[LAYOUT_KEY]
    if version not in READABLE_VERSIONS:
        raise _error(
            owner,
            f"layout version {version!r}; this custody reads versions 0, "
            f"{', '.join(READABLE_VERSIONS)}: run the version that wrote it, or clear the "
            "processor's state (its inputs may then be taken again)",
        )
    taken: dict[FileIdentity, TakenFile] = {}
    keys: dict[str, CommittedKey] = {}
    paths = set()
    timestamp_ms = None
    for key, value in state.items():
        if key == LAYOUT_KEY:
            continue
        if key.startswith(TAKEN_PREFIX):
            taken_file = _unpack_taken(key, value, owner)
            taken[taken_file.identity] = taken_file
        elif key == LISTED_TIMESTAMP_KEY:
            timestamp_ms = _number(value, key, owner)
        elif key.startswith(LISTED_PREFIX):
            if value != "" or len(key) == len(LISTED_PREFIX):
                raise _error(owner, f"entry {key!r}: a listed path with a value {value!r}")
            paths.add(key[len(LISTED_PREFIX) :])
        elif key.startswith(KEY_PREFIX):
            if not valid_key(key[len(KEY_PREFIX) :]):
                raise _error(owner, f"entry {key[:60]!r}: not an idempotency key")
            keys[key[len(KEY_PREFIX) :]] = _committed_key(value, key, version, owner)
        else:
            raise _error(owner, f"entry {key[:60]!r} is of no kind of layout version {version}")
    if paths and timestamp_ms is None:
        raise _error(owner, f"listed paths without {LISTED_TIMESTAMP_KEY!r}")
    listing = ListingMark() if timestamp_ms is None else ListingMark(timestamp_ms, frozenset(paths))
    return IntakeState(taken, listing, keys)


def _unpack_version_0(state: Mapping[str, str], owner: str) -> IntakeState:
    unknown = set(state) - {LEGACY_TIMESTAMP_KEY, LEGACY_NAMES_KEY}
    if unknown:
        raise _error(owner, f"entries {sorted(unknown)[:5]} without {LAYOUT_KEY!r}: not an intake state")
    if not state:
        return IntakeState()
    raw = state.get(LEGACY_TIMESTAMP_KEY, "-1")
    timestamp_ms = -1 if raw == "-1" else _number(raw, LEGACY_TIMESTAMP_KEY, owner)
    names = frozenset(filter(None, state.get(LEGACY_NAMES_KEY, "").split("\0")))
    if timestamp_ms < 0:
        return IntakeState()
    return IntakeState(listing=ListingMark(timestamp_ms, names))


def _unpack_taken(key: str, value: str, owner: str) -> TakenFile:
    match = _TAKEN_KEY.fullmatch(key)
    if match is None:
        raise _error(owner, f"entry {key[:60]!r}: not taken:<inode>:<mtime_ns>:<size>")
    identity = FileIdentity(*(int(group) for group in match.groups()))
    fields = value.split("\0")
    try:
        if fields[0] == DELETE and len(fields) == 2 and fields[1]:
            return TakenFile(identity, fields[1])
        if fields[0] == MOVE and len(fields) == 3 and fields[1] and fields[2]:
            return TakenFile(identity, fields[1], MOVE, fields[2])
    except ValueError:
        pass
    raise _error(
        owner, f"entry {key!r}: value {value[:80]!r} is neither delete NUL path nor move NUL path NUL directory"
    )


def _committed_key(value: str, key: str, version: str, owner: str) -> CommittedKey:
    if version == "1":
        return CommittedKey(_number(value, key, owner))
    match = _COMMITTED_KEY.fullmatch(value)
    if match is None:
        raise _error(owner, f"entry {key[:60]!r}: {value[:40]!r} is not <ms> or <ms>:<fingerprint>")
    return CommittedKey(int(match.group(1)), match.group(2))


def _number(value: str, key: str, owner: str) -> int:
    if not _DECIMAL.fullmatch(value):
        raise _error(owner, f"entry {key[:60]!r}: {value[:40]!r} is not a decimal number")
    return int(value)


def _error(owner: str, message: str) -> IntakeStateError:
    return IntakeStateError(f"{owner or 'processor'}: its intake state cannot be read: {message}")
