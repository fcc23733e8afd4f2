"""A clustered node taking files from its inbox, SIGKILLed again and again while it
does: what the cluster's file drills share (`test_cluster_files_drill`,
`test_cluster_records_drill`, `test_cluster_python_drill`)."""

from __future__ import annotations

import os
import random
import signal

from cluster.services.process import wait_until


def drill_inboxes(tmp_path) -> tuple[int, random.Random, object, object]:
    """(seed, its random generator, n1's inbox, n2's inbox): the seed from
    CUSTODY_DRILL_SEED to replay a run, else a new one; both inboxes made, empty."""
    seed = int(os.environ.get("CUSTODY_DRILL_SEED") or random.randrange(1 << 30))
    inbox, other = tmp_path / "inbox1", tmp_path / "inbox2"
    inbox.mkdir()
    other.mkdir()
    return seed, random.Random(seed), inbox, other


def waiting(inbox) -> int:
    """Files left in `inbox` (a name starting with '.' is one being written)."""
    return sum(1 for name in os.listdir(inbox) if not name.startswith("."))


def kill_while_taking(cluster, flow: str, inbox, other, kills: int, most: int, rng: random.Random, seed: int, **config):
    """n2 on `other` (an empty inbox), then n1 on `inbox`, SIGKILLed `kills` times, each
    once it took 1 to `most` files since its incarnation began, and started again as a
    new incarnation. Returns n1's last incarnation, joined, once `inbox` is empty.
    `config`: more of each node's NODE.toml (`FlowCluster.write_config`)."""
    cluster.start("n2", flow=flow, parameters={"inbox": str(other)}, **config).wait("joined", timeout=90)
    node = cluster.start("n1", flow=flow, parameters={"inbox": str(inbox)}, **config)
    for kill in range(kills):
        node.wait("joined", timeout=90)
        left = waiting(inbox)
        wait_until(
            lambda: waiting(inbox) <= left - rng.randint(1, most) or waiting(inbox) == 0,  # noqa: B023
            120,
            f"n1 to take files (kill {kill + 1}, seed {seed})",
            interval=0.01,
        )
        node.signal(signal.SIGKILL)
        cluster.nodes["n1"].close()
        node = cluster.start("n1")
    node.wait("joined", timeout=90)
    wait_until(lambda: waiting(inbox) == 0, 300, f"every file to be taken (seed {seed})")
    return node
