"""Exceptions of the cluster core: one root, each carrying the context an operator
needs (which shard, which epoch, which owner) and what to do about it."""

from __future__ import annotations


class ClusterError(Exception):
    """Root of every failure of the cluster layer (`cluster.*` outside `services`)."""


def first_line(error: BaseException, limit: int = 300) -> str:
    """An error as one log line: its first line, at most `limit` characters (its type
    when it has no message)."""
    lines = str(error).splitlines()
    return lines[0][:limit] if lines and lines[0] else type(error).__name__


class FencedError(ClusterError):
    """This process may no longer write `shard`: it was moved to `by_owner` at `epoch`.

    Raised to a node whose incarnation was declared dead ("you are dead", HBase's
    YouAreDeadException). The process must stop working on the shard at once; it
    never writes to it again. A node that wants to work again rejoins as a new
    incarnation with a new shard.
    """

    def __init__(
        self, shard: str, epoch: int, by_owner: str | None, *, incarnation: str | None = None, reason: str = ""
    ):
        self.shard, self.epoch, self.by_owner, self.incarnation, self.reason = (
            shard,
            epoch,
            by_owner,
            incarnation,
            reason,
        )
        who = f"incarnation {incarnation}" if incarnation else "this process"
        owner = f"it belongs to {by_owner} at epoch {epoch}" if by_owner else f"its epoch is {epoch}"
        extra = f" ({reason})" if reason else ""
        super().__init__(
            f"you are dead: {who} may no longer act for {shard}; {owner}{extra}. "
            "Stop processing it; rejoin only as a new incarnation with a new shard."
        )


class OwnershipConflict(ClusterError):
    """A compare-and-set on a shard or plan znode lost a race (its version or epoch
    changed). `znode` names it: "shard n1-3", "plan n1-3".

    Nothing was written. Re-read it and decide again: the plan or the claim that
    expected the old version may already be done, or overtaken."""

    def __init__(self, znode: str, expected: str, found: str):
        self.znode, self.expected, self.found = znode, expected, found
        super().__init__(f"{znode} changed under us: expected {expected}, found {found}; re-read it and decide again")


class ConfigurationRefused(ClusterError):
    """The node's configuration cannot work: retrying will not help, the operator must
    change it. A node stops on it instead of rejoining."""


class ZooKeeperAccessRefused(ConfigurationRefused):
    """The cluster's znodes are protected against this client, or not protected as
    configured (`cluster.zk.acl`); the message names the path and what to do."""


class SessionTimeoutRefused(ConfigurationRefused):
    """ZooKeeper granted a shorter session timeout than the node asked for (the servers'
    maxSessionTimeout). The node would time its own expiry by the longer one, and go on
    working after the ensemble declared it dead: it refuses to start."""

    def __init__(self, hosts: str, requested: float, granted: float):
        self.hosts, self.requested, self.granted = hosts, requested, granted
        super().__init__(
            f"ZooKeeper at {hosts} granted a session timeout of {granted:g}s, less than the {requested:g}s "
            f"asked for (its maxSessionTimeout, by default 20 ticks): set [zookeeper] session_timeout to at "
            f"most {granted:g}, or raise maxSessionTimeout on every server"
        )


class IncarnationEnded(ClusterError):
    """The incarnation was declared dead (its session lost, its expiry timer run out)
    while it was still starting. It goes no further: nothing of it runs or writes, and
    the node starts a new incarnation instead."""

    def __init__(self, incarnation: str, step: str, reason: str):
        self.incarnation, self.step, self.reason = incarnation, step, reason
        super().__init__(
            f"incarnation {incarnation} died while starting ({step}): {reason}; "
            "it stops there, and the node joins again as a new incarnation"
        )


class StorageUnavailable(ClusterError):
    """The cluster's HDFS cannot take a write yet (the NameNode down or in safe mode, no
    DataNode registered). Found before the node takes an incarnation: it waits and
    tries again, and leaves nothing behind in ZooKeeper meanwhile."""

    def __init__(self, where: str, cause: BaseException):
        self.where = where
        if isinstance(cause, PermissionError):  # an operator's to fix: say all of it
            super().__init__(
                f"HDFS refuses this node's writes at {where}: {first_line(cause, 700)}; the node waits and tries again"
            )
            return
        super().__init__(
            f"HDFS cannot take a write at {where} yet: {first_line(cause, 200)}; "
            "the node waits and tries again (check the NameNode and the DataNodes)"
        )


class UnreadableZnode(ClusterError):
    """A znode of ours holds bytes that do not parse (written by a newer release, or
    damaged). Decisions that may skip it do, with one log line; a decision that must
    see every child (deleting what nothing references) decides nothing this round."""

    def __init__(self, kind: str, names: dict[str, str]):
        self.kind, self.names = kind, dict(names)
        listed = "; ".join(f"{name}: {reason}" for name, reason in sorted(self.names.items()))
        super().__init__(
            f"unreadable {kind} znode(s): {listed}. Inspect them with zkCli (get), and delete or "
            f"rewrite a damaged one by hand once its {kind} is known to be finished"
        )


class TransitionRefused(ClusterError):
    """The ownership state machine refused a transition (see `cluster.core.ownership.Refusal`)."""

    def __init__(self, refusal):
        self.refusal = refusal
        super().__init__(str(refusal))


class SessionExpiredError(ClusterError):
    """This node's ZooKeeper session is gone, or may be: by ZooKeeper's word (LOST) or
    by the node's own expiry timer. Everything it held is being aborted; it may only
    rejoin as a new incarnation."""

    def __init__(self, incarnation: str | None, reason: str):
        self.incarnation, self.reason = incarnation, reason
        super().__init__(
            f"ZooKeeper session of incarnation {incarnation} is over ({reason}); "
            "work aborted, rejoin as a new incarnation"
        )


class WorkGateClosed(ClusterError):
    """Work was refused because the ZooKeeper session is not confirmed alive right now
    (SUSPENDED, unconfirmed for too long, or expired). Retry once it is CONNECTED again."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"work refused: {reason}; the node resumes once its ZooKeeper session is confirmed again")


class FenceTimeout(ClusterError):
    """`recover_lease` did not close a file of a fenced shard within the deadline."""

    def __init__(self, shard: str, path: str, waited: float):
        self.shard, self.path, self.waited = shard, path, waited
        super().__init__(
            f"fencing shard {shard}: the lease on {path} was not recovered after {waited:.1f}s; "
            "the NameNode may be in safe mode or a DataNode of the last block is down. The "
            "shard stays 'adopting'; adoption retries it (fencing is idempotent)."
        )


class ZooKeeperError(ClusterError):
    """A ZooKeeper call failed. `cluster.zk` raises this (or the subclass that says what
    it means to the caller) for whatever kazoo raised, with kazoo's exception as its
    cause, so that nothing outside `cluster.zk` needs to know kazoo. `path` is the
    znode the call was about, when one was."""

    def __init__(self, doing: str, cause: BaseException | None = None, path: str | None = None):
        self.doing, self.path = doing, path
        self.cause = type(cause).__name__ if cause is not None else None
        where = f" ({path})" if path else ""
        said = first_line(cause, 200) if cause is not None else ""
        detail = f": {self.cause}" if said == self.cause else f": {self.cause}: {said}" if cause is not None else ""
        super().__init__(f"ZooKeeper {doing}{where} failed{detail}")


class ZooKeeperUnavailable(ZooKeeperError):
    """No answer: the connection was lost or the client closed, or the call timed out.
    Whether a write took effect is unknown: read again once connected."""


class ZooKeeperSessionExpired(ZooKeeperError):
    """The client's session is over (ZooKeeper expired it): nothing it held lives on, and
    only a new session (a new incarnation, for a member) can act again."""


class ZnodeMissing(ZooKeeperError):
    """The znode does not exist (it was never made, or was deleted meanwhile)."""


class ZnodeExists(ZooKeeperError):
    """The znode to create exists already."""


class ZnodeVersionChanged(ZooKeeperError):
    """A write conditional on the znode's version lost: the znode changed since it was
    read. Nothing was written; re-read it and decide again."""


class ZnodeNotEmpty(ZooKeeperError):
    """The znode to delete has children."""


class ZnodeAccessDenied(ZooKeeperError):
    """ZooKeeper refused this client the znode: its ACL names another identity (or the
    client's credentials were refused)."""
