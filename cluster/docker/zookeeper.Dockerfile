# One ZooKeeper member. ZOO_MY_ID and ZOO_SERVERS (space-separated "id=host") come
# from docker-compose.yml; the entrypoint writes myid and zoo.cfg from them.
FROM debian:bookworm-slim
# The JRE first, in the same step in every image of docker-compose.yml: a build makes
# that layer once and the other images reuse it.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends zookeeper \
 && rm -rf /var/lib/apt/lists/*
COPY cluster/docker/probe.sh /usr/local/bin/custody-probe
COPY cluster/docker/zookeeper-entrypoint.sh /usr/local/bin/zookeeper-entrypoint
ENTRYPOINT ["sh", "/usr/local/bin/zookeeper-entrypoint"]
