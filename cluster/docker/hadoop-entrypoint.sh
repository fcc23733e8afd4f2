#!/bin/sh
# Runs one HDFS daemon: "namenode" (formats its directory on first start) or "datanode".
# NAMENODE_HOST names the NameNode's service; REPLICATION sets dfs.replication.
set -eu
role="${1:?namenode or datanode}"
conf=/opt/hadoop/conf
mkdir -p "$conf/webapps/hdfs" "$conf/webapps/datanode" "$conf/webapps/static" /data
property() { echo "  <property><name>$1</name><value>$2</value></property>"; }
{
  echo "<configuration>"; property fs.defaultFS "hdfs://${NAMENODE_HOST:-namenode}:8020"; echo "</configuration>"
} > "$conf/core-site.xml"
{
  echo "<configuration>"
  property dfs.replication "${REPLICATION:-2}"
  property dfs.permissions.enabled false
  property dfs.namenode.name.dir /data/name
  property dfs.datanode.data.dir /data/blocks
  property dfs.namenode.rpc-bind-host 0.0.0.0
  property dfs.namenode.http-bind-host 0.0.0.0
  property dfs.namenode.safemode.threshold-pct 0
  property dfs.heartbeat.interval 1
  property dfs.namenode.heartbeat.recheck-interval 3000
  # A DataNode silent for 3 s gets no new blocks: with one DataNode more than the
  # replication, writes go on around a dead one instead of failing until it is
  # declared dead.
  property dfs.namenode.stale.datanode.interval 3000
  property dfs.namenode.avoid.write.stale.datanode true
  property dfs.namenode.avoid.read.stale.datanode true
  property dfs.client.block.write.replace-datanode-on-failure.enable false
  echo "</configuration>"
} > "$conf/hdfs-site.xml"
classpath="$conf:/opt/hadoop/jars/*"
case "$role" in
  namenode)
    if [ ! -f /data/name/current/VERSION ]; then
      java -Xmx256m -cp "$classpath" org.apache.hadoop.hdfs.server.namenode.NameNode -format -force -nonInteractive
    fi
    exec java -Xmx256m -XX:+UseSerialGC -cp "$classpath" org.apache.hadoop.hdfs.server.namenode.NameNode ;;
  datanode)
    exec java -Xmx256m -XX:+UseSerialGC -cp "$classpath" org.apache.hadoop.hdfs.server.datanode.DataNode ;;
  *) echo "unknown role $role: use namenode or datanode" >&2; exit 2 ;;
esac
