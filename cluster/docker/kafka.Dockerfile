# The Kafka broker: one KRaft node, broker and controller at once. The image holds a
# JRE, the entrypoint, the probe and the broker settings the test harness runs with
# too; Apache Kafka's jars are the ones the harness fetched, which docker-compose.yml
# mounts read-only at /opt/kafka/jars from $CUSTODY_CACHE/kafka-jars (by default
# ~/.cache/custody/kafka-jars; `custody services install` fetches them), as the HDFS
# images do Hadoop's. So the build runs no Maven.
FROM debian:bookworm-slim
# The JRE first, in the same step in every image of docker-compose.yml: a build makes
# that layer once and the other images reuse it.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
# The pom the jars must have been fetched for: the entrypoint compares it with the
# harness's stamp of a complete fetch.
COPY cluster/services/kafka/pom.xml /opt/kafka/pom.xml
COPY cluster/services/kafka/server-settings.properties /opt/kafka/server-settings.properties
COPY cluster/services/kafka/log4j2.properties /opt/kafka/log4j2.properties
COPY cluster/docker/probe.sh /usr/local/bin/custody-probe
COPY cluster/docker/kafka-entrypoint.sh /usr/local/bin/kafka-entrypoint
ENTRYPOINT ["sh", "/usr/local/bin/kafka-entrypoint"]
