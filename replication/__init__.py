"""What makes a node's stores outlive the node: HDFS storage, replicated content,
the HDFS-backed FlowFile WAL, swap-file replication and lease-recovery fencing."""
