"""Everything of the cluster that reads or writes ZooKeeper.

Components take one `store.ClusterStore(client, layout)` rather than a client and a
layout each; watches, session listeners and the election go through it, and kazoo's
exceptions leave as `cluster.errors.ZooKeeperError`s, so kazoo stays here
(`tests/unit/test_architecture.py` fails on a kazoo import elsewhere in the product).
May import `cluster.core`, `cluster.errors` and itself.

  client      the kazoo clients the product makes (for `cluster.clients.ClientFactory`)
  kazoo_errors  kazoo's exceptions translated into `cluster.errors` at this package's edge
  store       ClusterStore: the facade over one client and one cluster's layout
  znodes      pipelined child reads and `VersionedZnodes`, the one compare-and-set
  shards      ShardRegistry: `shards/`, changed only by compare-and-set
  plans       PlanStore: `plans/`, written before any of their moves is made
  operator    OperatorStore: processors' run states and the rolling deploy, as operators set them
  membership  `nodes/<incarnation>` and its heartbeat; the incarnation counter
  decommissions  `decommissioned/<node>`: the nodes that may not join until connected
  kafka_holds  `kafka/<processor>/<topic>:<partition>`: which shard reads each Kafka partition
  session     SessionGuard: runs `core.guard` over the kazoo session
  status      ClusterStatus: the read-only snapshot `custody cluster status` prints
  view        read_cluster_view: the snapshot `core.validation` checks the protocol's invariants on
"""
