"""Crash detection without the session timeout: what a member's liveness connection
says about a peer, decided without I/O.

ZooKeeper learns that a process died only when its session times out (4 s by
default): a SIGKILLed process never says goodbye. Its kernel does, at once: every TCP
connection the process held is closed as it dies, and its listening port refuses the
next connection. So each member listens on a port of its own (advertised in its
heartbeat as `liveness`) and every other member keeps a connection open to it. When
that connection ends, the watcher asks the port once more (`ProbeOutcome`), and
`verdict` decides:

| probe after the connection ended               | verdict |
|-------------------------------------------------|---------|
| refused: nothing listens on the port any more  | GONE    |
| another incarnation answers on the port        | GONE    |
| no route or no answer to the connection attempt | GONE    |
| the same incarnation answers                   | ALIVE   |
| a connection, but no greeting in time          | UNKNOWN |

GONE leads the survivors to remove the incarnation's ephemeral znodes (its membership
and its place in the leader election), which is what the session's expiry would do
seconds later: the leader hands its shards over as for any death, fenced in storage
as always (the epoch compare-and-set, the rename, the lease recovery). A verdict that
was wrong would cost availability, never exactly-once: a live incarnation whose znode
is removed is refused at its next heartbeat and stops.

"No route or no answer" counts as GONE only because it follows the end of a connection
the peer's kernel closed: a container that is killed takes its address with it, so
its port can no longer refuse. A partition or a hung (SIGSTOPped) process ends no
connection: those still wait for the session, as they must. Neither does a machine
that loses power; its connections end only when the session does.

The greeting (the listener sends it on every connection it accepts, and nothing
else), ASCII, one line:

    offset  bytes  field
    0       17     b"CUSTODY-LIVENESS " (the magic word and one space)
    17      1      b"1"                 (this format's version)
    18      1      b" "
    19      n      the incarnation id, e.g. b"n1-17" (at most 200 bytes, no space)
    19+n    1      b"\\n"
"""

from __future__ import annotations

from enum import Enum

MAGIC = b"CUSTODY-LIVENESS "
VERSION = b"1"
MAX_GREETING = len(MAGIC) + len(VERSION) + 1 + 200 + 1


class ProbeOutcome(Enum):
    """What asking a peer's liveness port once more found."""

    REFUSED = "refused"  # the peer's kernel answered: nothing listens there
    UNREACHABLE = "unreachable"  # no route to it, or no answer to the attempt in time
    SAME = "same"  # the incarnation watched answered
    OTHER = "other"  # another incarnation (or another program) answered
    SILENT = "silent"  # connected, but no greeting in time (a process stopped, or busy)


class Verdict(Enum):
    GONE = "gone"
    ALIVE = "alive"
    UNKNOWN = "unknown"


_VERDICTS = {
    ProbeOutcome.REFUSED: Verdict.GONE,
    ProbeOutcome.UNREACHABLE: Verdict.GONE,
    ProbeOutcome.OTHER: Verdict.GONE,
    ProbeOutcome.SAME: Verdict.ALIVE,
    ProbeOutcome.SILENT: Verdict.UNKNOWN,
}


def verdict(outcome: ProbeOutcome) -> Verdict:
    """The verdict on a peer whose liveness connection ended, given the probe that
    followed (see the module's table)."""
    return _VERDICTS[outcome]


def greeting(incarnation: str) -> bytes:
    """The line a listener sends on each connection it accepts."""
    encoded = incarnation.encode("ascii")
    if not encoded or b" " in encoded or b"\n" in encoded or len(encoded) > 200:
        raise ValueError(f"an incarnation id for a liveness greeting is 1-200 bytes, no space: {incarnation!r}")
    return MAGIC + VERSION + b" " + encoded + b"\n"


def parse_greeting(line: bytes) -> str | None:
    """The incarnation a greeting names; None if `line` is not a greeting of this
    format (another program on the port, or a newer format: neither is the peer)."""
    if not line.startswith(MAGIC) or not line.endswith(b"\n") or len(line) > MAX_GREETING:
        return None
    version, _, incarnation = line[len(MAGIC) : -1].partition(b" ")
    if version != VERSION or not incarnation or b" " in incarnation:
        return None
    try:
        return incarnation.decode("ascii")
    except UnicodeDecodeError:
        return None


def probe_outcome(expected: str, answered: str | None) -> ProbeOutcome:
    """A probe that connected and read a line: the same incarnation, or another."""
    return ProbeOutcome.SAME if answered == expected else ProbeOutcome.OTHER


def split_address(address: str) -> tuple[str, int]:
    """`host:port` (an IPv6 host in brackets) as the pair `socket.create_connection` takes."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"a liveness address is host:port, not {address!r}")
    return host.strip("[]"), int(port)
