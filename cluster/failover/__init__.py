"""The failover protocol, carried out: HBase's crashed-RegionServer handling with
Kafka's epochs, on ZooKeeper and HDFS. May import `cluster.core`, `cluster.zk`,
`cluster.errors`, `cluster.clients` and itself.

  member     ClusterMember: one incarnation from join to death (membership, guard,
             home shard, adoption, retirement, leader campaign)
  leader     Leader: the election on `leader/` (`ClusterStore.election`) and the runner
             of `core.reassignment.decide`
  fencing    rename a shard's HDFS directory, then recover every file's lease
  adoption   open a home shard, or fence and open an adopted one (or seed a slice)
  runtime    ShardHandle (a shard as its runtime sees it, with the member's
             ShardCallbacks) and the ShardRuntime contract a flow runtime fulfils
  collector  ContentCollector: deletes what `core.collection` says is garbage
  decommission  a member's side: a decommissioned node does not join, a running one leaves
  kept       KeptDirectories: the leader finishes decommissions and collects what was
             kept for a node away longer than the retention (`core.decommission`)
  kept_states  a kept shard's sources' state: read it, split what a survivor can use
"""
