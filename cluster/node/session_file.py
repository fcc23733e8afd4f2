"""The ZooKeeper session of a node's current incarnation, in a file only its owner can
read: `<directory>/zookeeper-session`.

Whoever holds a session's id and password can attach to the session and act as the
node (or end it), so they are never logged or printed. A failover drill expires a
node's session from outside, as ZooKeeper itself would: it reads them here, on the
node's machine or in its container, with the rights of the node's own user.

Format (version 1): one line of UTF-8 JSON, then a newline:

    {"version": 1, "incarnation": "n1-7", "session_id": 72057..., "session_password": "<hex>"}

`session_id` is the 64-bit session id as a JSON integer, `session_password` the
session's password (16 bytes from ZooKeeper) as lowercase hex. The file is written
whole to `zookeeper-session.partial` (mode 0600, created exclusively), then renamed
over the old one, so a reader sees one incarnation's session or the one before it,
never a mix. It is removed when the incarnation ends.
"""

from __future__ import annotations

import json
import os

from repositories.storage.local import make_private_directories

FILE_NAME = "zookeeper-session"
VERSION = 1


class SessionFileError(ValueError):
    """The session file is missing, from a newer release, or not what this module writes."""


def session_path(directory: str) -> str:
    return os.path.join(directory, FILE_NAME)


def write_session(directory: str, incarnation: str, session_id: int, password: bytes) -> str:
    """Record `incarnation`'s session (0600, replacing the previous one); its path."""
    make_private_directories(directory)
    path = session_path(directory)
    partial = path + ".partial"
    try:
        os.unlink(partial)  # left by a crash between create and rename
    except FileNotFoundError:
        pass
    line = (
        json.dumps(
            {
                "version": VERSION,
                "incarnation": incarnation,
                "session_id": int(session_id),
                "session_password": bytes(password).hex(),
            }
        )
        + "\n"
    )
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(line)
    os.replace(partial, path)
    return path


def remove_session(directory: str, incarnation: str) -> None:
    """Remove the file if it still holds `incarnation`'s session."""
    path = session_path(directory)
    try:
        if read_session_text(open(path, encoding="utf-8").read(), path)["incarnation"] == incarnation:
            os.unlink(path)
    except (OSError, SessionFileError):
        pass


def read_session_text(text: str, where: str = FILE_NAME) -> dict:
    """{"incarnation", "session_id", "session_password" (bytes)} from the file's text."""
    try:
        record = json.loads(text)
        version = record["version"]
        if version != VERSION:
            raise SessionFileError(
                f"{where}: version {version!r} is not one this release reads ({VERSION}); "
                "read it with the release that wrote it"
            )
        return {
            "incarnation": str(record["incarnation"]),
            "session_id": int(record["session_id"]),
            "session_password": bytes.fromhex(record["session_password"]),
        }
    except SessionFileError:
        raise
    except (ValueError, KeyError, TypeError) as error:
        raise SessionFileError(f"{where}: not a ZooKeeper session file ({type(error).__name__}: {error})") from None
