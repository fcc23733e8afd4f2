"""Bearer tokens of the admin API, kept as hashes in a file.

The token file, one token per line (blank lines and `#` comments are ignored):

    <role> <name> sha256:<64 hex digits: SHA-256 of the token's UTF-8 bytes>

    admin ops-team sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    read grafana   sha256:...

`role` is `read` (every GET) or `admin` (everything, including control). `name` says
whose token it is in the log; the token itself is never stored, printed after its
creation, or logged. Tokens are 32 random bytes (`custody admin token`), so a plain
SHA-256 is enough: there is nothing to guess that a slow hash would protect. A
presented token is hashed and compared with every stored hash in constant time
(`hmac.compare_digest`), all of them, whichever matches.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass

from ..errors import ConfigurationRefused

ROLES = ("read", "admin")
TOKEN_PREFIX = "cst_"


class TokenFileError(ConfigurationRefused):
    """The token file cannot be read or has a malformed line; the message names it."""


@dataclass(frozen=True)
class TokenEntry:
    role: str
    name: str
    digest: bytes  # SHA-256 of the token


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def parse_token_line(line: str, *, where: str) -> TokenEntry | None:
    text = line.split("#", 1)[0].strip()
    if not text:
        return None
    parts = text.split()
    if len(parts) != 3:
        raise TokenFileError(f"{where}: expected '<role> <name> sha256:<hex>', got {len(parts)} fields")
    role, name, hashed = parts
    if role not in ROLES:
        raise TokenFileError(f"{where}: role {role!r} is not one of {', '.join(ROLES)}")
    scheme, _, hex_digest = hashed.partition(":")
    if scheme != "sha256" or len(hex_digest) != 64:
        raise TokenFileError(f"{where}: the hash must be sha256:<64 hex digits>")
    try:
        digest = bytes.fromhex(hex_digest)
    except ValueError:
        raise TokenFileError(f"{where}: the hash is not hexadecimal") from None
    return TokenEntry(role, name, digest)


class Tokens:
    """The tokens a node accepts. `Tokens.disabled()`: no token file, every caller is
    an admin (allowed only on a loopback bind, see `AdminSettings.check`)."""

    def __init__(self, entries: list[TokenEntry], *, enabled: bool = True):
        self.entries = list(entries)
        self.enabled = enabled

    @classmethod
    def disabled(cls) -> Tokens:
        return cls([], enabled=False)

    @classmethod
    def load(cls, path: str) -> Tokens:
        try:
            with open(path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except OSError as error:
            raise TokenFileError(
                f"cannot read the admin token file {path}: {error.strerror or error}; "
                f"create it with: custody admin token --file {path} --role admin --name NAME"
            ) from None
        entries = [
            entry
            for number, line in enumerate(lines, 1)
            if (entry := parse_token_line(line, where=f"{path} line {number}")) is not None
        ]
        if not entries:
            raise TokenFileError(
                f"the admin token file {path} holds no token; "
                f"add one with: custody admin token --file {path} --role admin --name NAME"
            )
        return cls(entries)

    def identify(self, token: str | None) -> TokenEntry | None:
        """The entry whose hash matches `token`, comparing against every entry."""
        if token is None:
            return None
        digest = token_digest(token)
        found = None
        for entry in self.entries:
            if hmac.compare_digest(entry.digest, digest) and found is None:
                found = entry
        return found


def allows(role: str, needed: str) -> bool:
    return role == "admin" or role == needed


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def add_token(path: str, role: str, name: str) -> str:
    """Create a token, append its hash to `path` (created 0600), return the token."""
    if role not in ROLES:
        raise TokenFileError(f"role {role!r} is not one of {', '.join(ROLES)}")
    if not name or any(c.isspace() or c == "#" for c in name):
        raise TokenFileError(f"token name {name!r} must be a non-empty word (no spaces or '#')")
    token = new_token()
    line = f"{role} {name} sha256:{token_digest(token).hex()}\n"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())
    return token
