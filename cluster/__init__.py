"""The cluster layer: ZooKeeper membership, leadership, failover and fencing, the node
process, the admin API, the CLI and the service harness. It may import every other
custody package; nothing imports it."""
