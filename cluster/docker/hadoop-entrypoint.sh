#!/bin/sh
# Runs one HDFS daemon: "namenode" (formats its directory on first start) or "datanode";
# or "init", once the NameNode is up: the cluster's root /custody, owned by the HDFS
# user custody, mode 0700 (run as root, the NameNode's superuser).
# NAMENODE_HOST names the NameNode's service; REPLICATION sets dfs.replication.
# Hadoop's jars are mounted at /opt/hadoop/jars (see hadoop.Dockerfile).
set -eu
role="${1:?namenode or datanode}"
# The harness stamps a complete fetch with the pom it fetched for (`.complete`).
if ! cmp -s /opt/hadoop/pom.xml /opt/hadoop/jars/.complete; then
  echo "Hadoop's jars at /opt/hadoop/jars (mounted from \${CUSTODY_CACHE:-~/.cache/custody}/hadoop-jars) are" \
       "missing, incomplete, or were fetched for another cluster/services/hadoop/pom.xml;" \
       "fetch them on the host with: custody services install" >&2
  exit 1
fi
# The NameNode's block placement policy, built beside them by the same command.
if [ "$role" = namenode ] && ! ls /opt/hadoop/jars/custody-placement-*.jar > /dev/null 2>&1; then
  echo "The NameNode's block placement policy (custody-placement-*.jar) is missing from /opt/hadoop/jars" \
       "(mounted from \${CUSTODY_CACHE:-~/.cache/custody}/hadoop-jars); build it on the host with:" \
       "custody services install" >&2
  exit 1
fi
conf=/opt/hadoop/conf
# WebHDFS's JSON (Jersey 1 through JAXB) defines classes by reflection, which Java 17
# refuses unless java.lang is opened (every WebHDFS call answered 500 without it).
java_lang_open=--add-opens=java.base/java.lang=ALL-UNNAMED
mkdir -p "$conf/webapps/hdfs" "$conf/webapps/datanode" "$conf/webapps/static" /data
property() { echo "  <property><name>$1</name><value>$2</value></property>"; }
# Hadoop's jars carry no log4j configuration: without one the daemon logs nothing and
# `docker logs` is empty.
{
  echo "log4j.rootLogger=INFO,console"
  echo "log4j.appender.console=org.apache.log4j.ConsoleAppender"
  echo "log4j.appender.console.target=System.err"
  echo "log4j.appender.console.layout=org.apache.log4j.PatternLayout"
  echo "log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n"
  echo "log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR"
} > "$conf/log4j.properties"
{
  echo "<configuration>"; property fs.defaultFS "hdfs://${NAMENODE_HOST:-namenode}:8020"; echo "</configuration>"
} > "$conf/core-site.xml"
# hdfs-site.xml: the project's HDFS settings, shared with the test harness
# (cluster/services/hadoop/hdfs-site.properties: heartbeats, a dead DataNode stale after
# 1 s and avoided, ...), then this cluster's own. Safe mode ends at once: the DataNodes
# start only once the NameNode is healthy, out of safe mode, so it cannot wait for them.
case "$role" in namenode|datanode) daemon="$role" ;; *) daemon=client ;; esac
sh /usr/local/bin/custody-hdfs-site "$daemon" /opt/hadoop/hdfs-site.properties \
  dfs.replication="${REPLICATION:-2}" \
  dfs.namenode.safemode.threshold-pct=0 \
  dfs.namenode.name.dir=/data/name \
  dfs.datanode.data.dir=/data/blocks \
  dfs.namenode.rpc-bind-host=0.0.0.0 \
  dfs.namenode.http-bind-host=0.0.0.0 > "$conf/hdfs-site.xml"
classpath="$conf:/opt/hadoop/jars/*"
# The daemons run as the harness runs them (cluster/services/jit.py): the JIT's C1
# alone, as the cluster's containers share the machine's cores.
case "$role" in
  namenode)
    if [ ! -f /data/name/current/VERSION ]; then
      java -Xmx256m -cp "$classpath" org.apache.hadoop.hdfs.server.namenode.NameNode -format -force -nonInteractive
    fi
    exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "$java_lang_open" -cp "$classpath" org.apache.hadoop.hdfs.server.namenode.NameNode ;;
  datanode)
    exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "$java_lang_open" -cp "$classpath" org.apache.hadoop.hdfs.server.datanode.DataNode ;;
  init)
    shell() { java -Xmx128m -XX:+UseSerialGC -cp "$classpath" org.apache.hadoop.fs.FsShell "$@"; }
    shell -mkdir -p /custody && shell -chown custody:custody /custody && shell -chmod 700 /custody ;;
  *) echo "unknown role $role: use namenode, datanode or init" >&2; exit 2 ;;
esac
