#!/bin/sh
# Runs the compose cluster's Kafka broker: one KRaft node, broker and controller at
# once, which formats its log directory (/data/logs) on first start. Its settings are
# the harness's (cluster/services/kafka/server-settings.properties), then its own:
# clients in the compose network reach it as KAFKA_HOST:9092; clients on the host reach
# it as 127.0.0.1:HOST_PORT, the port docker-compose.yml publishes for the container's
# 9094; the controller listens on the container's loopback alone.
# Kafka's jars are mounted at /opt/kafka/jars (see kafka.Dockerfile).
set -eu
# The harness stamps a complete fetch with the pom it fetched for (`.complete`).
if ! cmp -s /opt/kafka/pom.xml /opt/kafka/jars/.complete; then
  echo "Kafka's jars at /opt/kafka/jars (mounted from \${CUSTODY_CACHE:-~/.cache/custody}/kafka-jars) are" \
       "missing, incomplete, or were fetched for another cluster/services/kafka/pom.xml;" \
       "fetch them on the host with: custody services install" >&2
  exit 1
fi
conf=/tmp/server.properties
{
  cat /opt/kafka/server-settings.properties
  echo
  echo "# This broker's own."
  echo "listeners=PLAINTEXT://0.0.0.0:9092,HOST://0.0.0.0:9094,CONTROLLER://127.0.0.1:9093"
  echo "advertised.listeners=PLAINTEXT://${KAFKA_HOST:-kafka}:9092,HOST://127.0.0.1:${HOST_PORT:-9092}"
  echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,HOST:PLAINTEXT,CONTROLLER:PLAINTEXT"
  echo "controller.quorum.bootstrap.servers=127.0.0.1:9093"
  echo "log.dirs=/data/logs"
} > "$conf"
# As the harness runs it (cluster/services/kafka.py, java_command): the JIT's C1 alone,
# as the cluster's containers share the machine's cores.
jvm="-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties"
classpath="/opt/kafka/jars/*"
if [ ! -f /data/logs/meta.properties ]; then
  cluster_id=$(java $jvm -cp "$classpath" kafka.tools.StorageTool random-uuid)
  java $jvm -cp "$classpath" kafka.tools.StorageTool format --standalone --cluster-id "$cluster_id" --config "$conf"
fi
exec java $jvm -cp "$classpath" kafka.Kafka "$conf"
