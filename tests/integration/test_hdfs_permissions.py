"""HDFS with permissions on (the harness runs it so): a node whose NODE.toml says
`[hdfs] user = "custody"` owns everything it writes under the cluster's root,
directories 0700 and files 0600, and another HDFS user can neither list nor read
any of it; a node configured as a user who does not own the root is refused with
the user, the inode and what to run. The test process itself is the NameNode's
superuser (it started it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cluster.services.process import wait_until

pytestmark = [pytest.mark.hdfs, pytest.mark.zookeeper]

INTRUDER = """
import json, sys
import hdfs_native
client = hdfs_native.Client(sys.argv[1], json.loads(sys.argv[2]))
refused = []
for what, attempt in [("list", lambda: list(client.list_status(sys.argv[3]))),
                      ("read", lambda: client.read(sys.argv[4]).read()),
                      ("delete", lambda: client.delete(sys.argv[4])),
                      ("create", lambda: client.create(sys.argv[3] + "/planted").close())]:
    try:
        attempt()
    except Exception as error:
        if "ermission denied" in str(error):
            refused.append(what)
        else:
            print(f"{what}: {type(error).__name__}: {error}", file=sys.stderr)
print(json.dumps(refused))
"""


def test_a_node_with_an_hdfs_user_owns_its_data_and_nobody_else_reads_it(flow_cluster, hdfs_cluster):
    import hdfs_native

    superuser = hdfs_native.Client(hdfs_cluster.url, dict(hdfs_cluster.client_config))
    root = flow_cluster.hdfs_root
    # What an operator does once, as the HDFS superuser: the cluster's root, the node's user's
    # (and its parent, the tests' own directory, made 0700 by the superuser, traversable).
    superuser.set_permission(os.path.dirname(root), 0o711)
    superuser.set_owner(root, "custody", "custody")
    superuser.set_permission(root, 0o700)

    # A node configured as another HDFS user is refused, and says by whom and how to fix it.
    stranger = flow_cluster.start("n0", sections={"hdfs": {"user": "stranger"}})
    refused = stranger.wait("start-failed", timeout=90)["error"]
    assert "HDFS refuses this node's writes" in refused and "user=stranger" in refused, refused
    assert "hdfs dfs -chown" in refused, refused
    flow_cluster.nodes.pop("n0").close()

    node = flow_cluster.start("n1", sections={"hdfs": {"user": "custody"}})
    node.wait("joined", timeout=90)
    wait_until(lambda: flow_cluster.delivered() >= 20, 120, "n1 to deliver 20 FlowFiles (WAL, content, swap on HDFS)")
    flow_cluster.stop_all()

    entries = list(superuser.list_status(root, recursive=True))
    files = [entry for entry in entries if not entry.isdir]
    assert len(files) >= 3, [entry.path for entry in entries]
    wrong = [
        (entry.path, entry.owner, oct(entry.permission))
        for entry in entries
        if entry.owner != "custody" or entry.permission != (0o700 if entry.isdir else 0o600)
    ]
    assert wrong == [], wrong

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            INTRUDER,
            hdfs_cluster.url,
            json.dumps(dict(hdfs_cluster.client_config)),
            root,
            files[0].path,
        ],
        env={**os.environ, "HADOOP_USER_NAME": "mallory"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["list", "read", "delete", "create"], done.stderr
    assert superuser.get_file_info(files[0].path).length == files[0].length
