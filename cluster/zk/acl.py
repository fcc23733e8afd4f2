"""Who may touch the cluster's znodes: ZooKeeper digest authentication and ACLs.

The credentials are read by `cluster.clients`, which builds every client; this module
turns them into an ACL (`digest_acl`) and keeps what is done with it.

Without credentials every znode is `world:anyone:cdrwa`: anyone who reaches
ZooKeeper can delete a member, rewrite a shard's owner or stop failover. With
`[zookeeper] credentials_file` (a file holding `user:password`), every client the
product makes authenticates with that digest identity, and every znode it creates
carries one ACL entry: that identity, all rights. Nobody else can read, list,
change or delete anything under the cluster's root `/custody/<cluster>`.

The shared parent `/custody` (several clusters may live in one ensemble) is created
readable and creatable by anyone and changeable by nobody but its creator, so that
another cluster can create its own root beside ours and nobody can remove ours (an
emptied cluster root is removed by the identity that created `/custody`).

At start a member checks that the cluster's root carries exactly its identity's ACL.
A root made before credentials were configured (world-open) is refused with what to
run: `custody cluster secure`, which sets the ACL on the root and every znode
under it.

Credentials are required: a NODE.toml without `credentials_file` is refused unless it
says `insecure = true`, and a node running so warns once at start. `custody cluster
credentials FILE` makes a credentials file; `custody cluster status` shows whether the
cluster's root is open (`acl_state`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.security import ACL, Id, Permissions, make_digest_acl

from ..errors import ZooKeeperAccessRefused
from .kazoo_errors import translated

if TYPE_CHECKING:
    from kazoo.client import KazooClient

CREATE_CREDENTIALS = "custody cluster credentials FILE"
OPEN = "open"  # someone without credentials has rights on the cluster's root
SECURED = "secured"  # only identities with credentials have
OPEN_EXPLAINED = (
    "anyone who reaches ZooKeeper can remove a member, rewrite a shard's owner or stop failover "
    f"(no credentials); make credentials with `{CREATE_CREDENTIALS}`, set [zookeeper] "
    "credentials_file = FILE on every node, then run `custody cluster secure` once"
)


def credentials_required() -> str:
    """Why a node without credentials is refused, and what to do, in one line."""
    return (
        "[zookeeper] credentials_file is required: without it every znode of the cluster is world-writable "
        "(anyone who reaches ZooKeeper can remove a member, rewrite a shard's owner or stop failover). Make one "
        f"with `{CREATE_CREDENTIALS}` and give every node of the cluster the same file (a cluster that ran "
        "without: then run `custody cluster secure` once), or set insecure = true to run open"
    )


def open_acl_warning(cluster: str) -> str:
    """The one line a node running without credentials logs at start."""
    return f"ZooKeeper ACLs are open for cluster {cluster} ([zookeeper] insecure = true): {OPEN_EXPLAINED}"


def digest_acl(user: str, password: str) -> list[ACL]:
    """The ACL that gives the digest identity `user:password` every right, and nobody
    else anything."""
    return [make_digest_acl(user, password, all=True)]


def acl_state(acls) -> str:
    """`OPEN` when the ACL gives anyone at all (`world:anyone`) a right, else `SECURED`."""
    return OPEN if any(acl.id.scheme == "world" and acl.perms for acl in acls) else SECURED


def shared_parent_acl(identity: list[ACL]) -> list[ACL]:
    """`/custody`: anyone may read it and create a cluster root in it; only `identity`
    changes or deletes anything in it."""
    return list(identity) + [ACL(Permissions.READ | Permissions.CREATE, Id("world", "anyone"))]


def describe(acls) -> str:
    return ", ".join(f"{acl.id.scheme}:{acl.id.id}:{_letters(acl.perms)}" for acl in acls) or "none"


def _letters(perms: int) -> str:
    return "".join(
        letter
        for letter, bit in (
            ("c", Permissions.CREATE),
            ("d", Permissions.DELETE),
            ("r", Permissions.READ),
            ("w", Permissions.WRITE),
            ("a", Permissions.ADMIN),
        )
        if perms & bit
    )


@translated
def check_root_acl(client: KazooClient, root: str, expected: list[ACL], *, secure_command: str) -> None:
    """Refuse to go on unless `root` carries exactly `expected`."""
    try:
        found, _ = client.get_acls(root)
    except NoAuthError:
        raise ZooKeeperAccessRefused(
            f"ZooKeeper refuses this node's credentials at {root}: the cluster is protected "
            "by another identity; use its credentials_file"
        ) from None
    if sorted(map(_key, found)) != sorted(map(_key, expected)):
        raise ZooKeeperAccessRefused(
            f"the cluster's root {root} has ACL {describe(found)}, not this node's identity alone "
            f"({describe(expected)}): anyone who reaches ZooKeeper could change the cluster. Secure it once with "
            f"`{secure_command}` (it sets the ACL on every znode under the root), then start the node again"
        )


def _key(acl: ACL) -> tuple:
    return acl.perms, acl.id.scheme, acl.id.id


@translated
def secure_tree(client: KazooClient, root: str, acls: list[ACL]) -> int:
    """Set `acls` on `root` and every znode under it; how many. Idempotent: after a
    crash midway, run it again."""
    done, pending = 0, [root]
    while pending:
        path = pending.pop()
        try:
            client.set_acls(path, acls)
            children = client.get_children(path)
        except NoNodeError:
            continue  # an ephemeral member that left meanwhile
        done += 1
        pending.extend(f"{path.rstrip('/')}/{child}" for child in children)
    return done
