"""The pure decisions of the cluster, and the values they decide on.

Every function here is a function of its arguments: no ZooKeeper, no HDFS, no
threads, no clock (time comes in as an argument), no module of ours that does I/O.
`tests/unit/test_architecture.py` fails if anything here imports kazoo, threading,
time, socket or an I/O module. It may import `cluster.errors` and itself.

  ownership    a shard's owner, epoch and state: the transitions, or a Refusal
  transitions  the table of every allowed ownership transition, and its epoch and owner rules
  validation   the protocol's invariants over one snapshot of the cluster (`validate_cluster`)
  plans        failover plans and their moves (the model and its JSON)
  planner      which survivor takes a dead node's shards (the scoring function)
  reassignment the leader's next instructions, from what it sees
  guard        the session guard's state: when work may go on, when to abort
  collection   which dead incarnations' content and old znodes may be deleted
  decommission a node gone for good, and what is kept for an absent node: what the
               leader hands over and deletes, and when
  heartbeat    the heartbeat payload; incarnation: `<node>-<epoch>`
  layout       where the cluster keeps things, in ZooKeeper and on HDFS
"""
