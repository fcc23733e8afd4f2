# HDFS daemons (NameNode or DataNode). The image holds a JRE, the entrypoint and the
# probe; Apache Hadoop's jars are the ones the test harness fetched, which
# docker-compose.yml mounts read-only at /opt/hadoop/jars from
# $CUSTODY_CACHE/hadoop-jars (by default ~/.cache/custody/hadoop-jars; `custody services
# install` fetches them). So the build runs no Maven and needs no proxy certificate.
# (A named build context would copy them into the image instead, but the Dockerfile
# frontend of Debian 12's Docker Engine, 20.10, does not support one.)
FROM debian:bookworm-slim
# The JRE first, in the same step in every image of docker-compose.yml: a build makes
# that layer once and the other images reuse it.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
# The pom the jars must have been fetched for: the entrypoint compares it with the
# harness's stamp of a complete fetch.
COPY cluster/services/hadoop/pom.xml /opt/hadoop/pom.xml
COPY cluster/docker/probe.sh /usr/local/bin/custody-probe
COPY cluster/docker/hadoop-entrypoint.sh /usr/local/bin/hadoop-entrypoint
# The HDFS settings the test harness runs with too, and the script that writes them.
COPY cluster/services/hadoop/hdfs-site.properties /opt/hadoop/hdfs-site.properties
COPY cluster/docker/hdfs-site.sh /usr/local/bin/custody-hdfs-site
ENTRYPOINT ["sh", "/usr/local/bin/hadoop-entrypoint"]
