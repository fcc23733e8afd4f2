# A clustered custody node: `custody node --config /etc/custody/node.toml` (the
# template cluster/docker/custody-node.toml; docker-compose.yml adds `--name`).
# The package and its dependencies live in a venv at /opt/custody, the example flows
# in /usr/share/custody/examples; the node's data directory is /var/lib/custody and
# the flow's output (the `out` parameter) /data/out, both volumes in docker-compose.yml.
# The admin API's token file is /etc/custody/admin/tokens (the volume admin-tokens,
# written by `custody-admin-token`, cluster/docker/admin-token.sh); the directories that
# volumes are mounted on belong to the user custody, so new volumes do too.
# A JRE is installed for Spark: a node's Spark processors start their driver JVM from
# pyspark, and the same image runs the compose file's Spark master and worker
# (SPARK_HOME is pyspark's own directory, which carries Spark's scripts and jars).
FROM debian:bookworm-slim
# The JRE first, in the same step in every image of docker-compose.yml: a build makes
# that layer once and the other images reuse it.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
      procps \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/custody \
 && useradd --system --home-dir /var/lib/custody --shell /usr/sbin/nologin custody \
 && mkdir -p /var/lib/custody /data/out /etc/custody/admin /etc/custody/zookeeper /var/lib/custody-admin \
 && chown custody:custody /var/lib/custody /data/out /etc/custody/admin /etc/custody/zookeeper /var/lib/custody-admin \
 && chmod 700 /etc/custody/zookeeper
ENV PATH=/opt/custody/bin:$PATH \
    SPARK_HOME=/opt/custody/lib/python3.11/site-packages/pyspark \
    PYSPARK_PYTHON=/opt/custody/bin/python \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /build
# Behind a TLS-intercepting proxy, pip needs the proxy's CA. docker-compose.yml passes
# the file named by $CUSTODY_CA_BUNDLE (default: none) as the build secret `ca_bundle`;
# when it is not empty, pip trusts Debian's CAs plus those, for that RUN step only.
# The dependencies first, from pyproject.toml alone, so a change to the code reuses them.
COPY pyproject.toml constraints.txt ./
# The nodes' HDFS client as `custody services install` built it and put it here:
# hdfs-native's release with the fix its pipeline recovery needs
# (cluster/services/hdfs_client.py). Missing, this COPY fails: run that command.
COPY cluster/docker/hdfs-client/hdfs_native-*.whl ./wheels/
RUN --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then \
      cat /etc/ssl/certs/ca-certificates.crt /run/secrets/ca_bundle > /tmp/ca-bundle.pem \
      && export PIP_CERT=/tmp/ca-bundle.pem REQUESTS_CA_BUNDLE=/tmp/ca-bundle.pem SSL_CERT_FILE=/tmp/ca-bundle.pem; \
    fi \
 && python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
      > requirements.txt \
 && pip install -c constraints.txt ./wheels/hdfs_native-*.whl -r requirements.txt \
 && rm -f /tmp/ca-bundle.pem
COPY README.md ./
COPY repositories repositories
COPY replication replication
COPY flow flow
COPY cluster cluster
# The package includes benchmarks/: `custody`'s command line imports it (custody bench).
COPY benchmarks benchmarks
RUN --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then \
      cat /etc/ssl/certs/ca-certificates.crt /run/secrets/ca_bundle > /tmp/ca-bundle.pem \
      && export PIP_CERT=/tmp/ca-bundle.pem REQUESTS_CA_BUNDLE=/tmp/ca-bundle.pem SSL_CERT_FILE=/tmp/ca-bundle.pem; \
    fi \
 && pip install -c constraints.txt . \
 && rm -f /tmp/ca-bundle.pem \
 && cd / && rm -rf /build
COPY examples /usr/share/custody/examples
COPY cluster/docker/custody-node.toml /etc/custody/node.toml
COPY cluster/docker/probe.sh /usr/local/bin/custody-probe
COPY cluster/docker/admin-token.sh /usr/local/bin/custody-admin-token
USER custody
WORKDIR /var/lib/custody
ENTRYPOINT ["custody", "node", "--config", "/etc/custody/node.toml"]
