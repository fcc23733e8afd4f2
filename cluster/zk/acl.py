"""Who may touch the cluster's znodes: ZooKeeper digest authentication and ACLs.

Without credentials every znode is `world:anyone:cdrwa`: anyone who reaches
ZooKeeper can delete a member, rewrite a shard's owner or stop failover. With
`[zookeeper] credentials_file` (a file holding `user:password`), every client the
product makes authenticates with that digest identity, and every znode it creates
carries one ACL entry: that identity, all rights. Nobody else can read, list,
change or delete anything under the cluster's root `/custody/<cluster>`.

The shared parent `/custody` (several clusters may live in one ensemble) is created
readable and creatable by anyone and changeable by nobody but its creator, so that
another cluster can create its own root beside ours and nobody can remove ours.

At start a member checks that the cluster's root carries exactly its identity's ACL.
A root made before credentials were configured (world-open) is refused with what to
run: `custody cluster secure`, which sets the ACL on the root and every znode
under it.
"""

from __future__ import annotations

import os
import stat

from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.security import ACL, Id, Permissions, make_digest_acl

from ..errors import ConfigurationRefused


class ZooKeeperAccessRefused(ConfigurationRefused):
    """The cluster's znodes are protected against this client, or not protected as
    configured; the message names the path and what to do."""


def parse_credentials(text: str, where: str) -> tuple[str, str]:
    """(user, password) from `user:password` (one line; surrounding blanks ignored)."""
    line = text.strip()
    user, colon, password = line.partition(":")
    if not colon or not user or not password or "\n" in line:
        raise ZooKeeperAccessRefused(f"{where} must hold one line `user:password` (both non-empty)")
    return user, password


def read_credentials_file(path: str) -> str:
    """The `user:password` line of `path`; refused when another user may read the file."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError as error:
        raise ZooKeeperAccessRefused(f"cannot read the ZooKeeper credentials file {path}: {error.strerror}") from None
    if mode & 0o077:
        raise ZooKeeperAccessRefused(f"the ZooKeeper credentials file {path} is readable by others (mode {mode:o}); "
                                     f"chmod 600 {path}")
    user, password = parse_credentials(text, f"the ZooKeeper credentials file {path}")
    return f"{user}:{password}"


def identity_acl(credentials: str) -> list[ACL]:
    user, password = parse_credentials(credentials, "ZooKeeper credentials")
    return [make_digest_acl(user, password, all=True)]


def shared_parent_acl(identity: list[ACL]) -> list[ACL]:
    """`/custody`: anyone may read it and create a cluster root in it; only `identity`
    changes or deletes anything in it."""
    return list(identity) + [ACL(Permissions.READ | Permissions.CREATE, Id("world", "anyone"))]


def describe(acls) -> str:
    return ", ".join(f"{acl.id.scheme}:{acl.id.id}:{_letters(acl.perms)}" for acl in acls) or "none"


def _letters(perms: int) -> str:
    return "".join(letter for letter, bit in (("c", Permissions.CREATE), ("d", Permissions.DELETE),
                                              ("r", Permissions.READ), ("w", Permissions.WRITE),
                                              ("a", Permissions.ADMIN)) if perms & bit)


def check_root_acl(client, root: str, expected: list[ACL], *, secure_command: str) -> None:
    """Refuse to go on unless `root` carries exactly `expected`."""
    try:
        found, _ = client.get_acls(root)
    except NoAuthError:
        raise ZooKeeperAccessRefused(f"ZooKeeper refuses this node's credentials at {root}: the cluster is protected "
                                     "by another identity; use its credentials_file") from None
    if sorted(map(_key, found)) != sorted(map(_key, expected)):
        raise ZooKeeperAccessRefused(
            f"the cluster's root {root} has ACL {describe(found)}, not this node's identity alone "
            f"({describe(expected)}): anyone who reaches ZooKeeper could change the cluster. Secure it once with "
            f"`{secure_command}` (it sets the ACL on every znode under the root), then start the node again")


def _key(acl: ACL) -> tuple:
    return acl.perms, acl.id.scheme, acl.id.id


def secure_tree(client, root: str, acls: list[ACL]) -> int:
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
