"""Everything of the cluster that reads or writes ZooKeeper.

Components take one `store.ClusterStore(client, layout)` rather than a client and a
layout each; watches and session listeners go through it, so kazoo stays here. May
import `cluster.core`, `cluster.errors` and itself.

  store       ClusterStore: the facade over one client and one cluster's layout
  znodes      pipelined child reads and `VersionedZnodes`, the one compare-and-set
  shards      ShardRegistry: `shards/`, changed only by compare-and-set
  plans       PlanStore: `plans/`, written before any of their moves is made
  operator    OperatorStore: processors' run states and the rolling deploy, as operators set them
  membership  `nodes/<incarnation>` and its heartbeat; the incarnation counter
  decommissions  `decommissioned/<node>`: the nodes that may not join until connected
  session     SessionGuard: runs `core.guard` over the kazoo session
  status      ClusterStatus: the read-only snapshot `custody cluster status` prints
"""
