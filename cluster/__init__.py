"""The cluster layer: what makes single flow nodes one highly available cluster, and
what wires a process together. It may import every other custody package; nothing
imports it. Its subpackages, in the order they may import each other (a subpackage
imports only those above it, `cluster.errors`, `cluster.clients` and
`cluster.hdfs_identity`):

  core/      the pure decisions and the values they decide on: shard ownership (a
             state machine), failover plans, the survivor-scoring planner, the
             leader's next step, the session guard's state, what garbage to
             collect, heartbeats, incarnations, the ZooKeeper and HDFS layout.
             No I/O, no threads, no clock: time is an argument.
  zk/        everything that reads or writes ZooKeeper, behind one facade,
             `zk.store.ClusterStore(client, layout)`: membership, the shard
             registry and plan store (compare-and-set only), the session guard's
             runner, the read-only status. The only users of kazoo in the product:
             its exceptions leave as `errors.ZooKeeperError`s.
  failover/  the protocol carried out: the leader, fencing, adoption, the content
             collector, and `ClusterMember`, one incarnation from join to death.
  node/      processes: the clustered node (`custody node`), the standalone node
             (`custody run`), NODE.toml, the node's content, the flow runtime of a
             shard, the incarnation loop, and `NodeControl`, the narrow facade the
             CLI (and the admin API) call.
  admin/     the REST admin API (FastAPI on uvicorn, in the node's process): the
             cluster from ZooKeeper, the node through `NodeControl`, metrics,
             the status page, offload. `custody node` and `custody run` start it.
  drills/    proof that nothing is lost or duplicated: the exactly-once checkers,
             the ledger workload, real-process cluster harnesses, fault injectors.

Beside them: `errors` (the exception root, `ClusterError`), `clients` (the one
factory of every ZooKeeper and HDFS client), `hdfs_identity` (who those HDFS clients
are: a user, or a Kerberos login), `cli` and `commands/` (the `custody`
command, one module per subcommand), `process_tuning` (the garbage collector and
allocator settings every `custody` process applies before its command),
`services/` (the harness that installs and runs real ZooKeeper, HDFS, Spark and
Docker for tests and `custody services`; it imports nothing of ours) and `docker/`
(the images of the compose cluster).
"""
