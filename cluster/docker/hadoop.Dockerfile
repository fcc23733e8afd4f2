# HDFS daemons (NameNode or DataNode) from Apache Hadoop's jars on Maven Central,
# fetched by the same pom the test harness uses.
FROM debian:bookworm-slim AS jars
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY cluster/services/hadoop/pom.xml /build/pom.xml
# Behind a TLS-intercepting proxy, Maven needs the proxy's CA. docker-compose.yml passes
# the file named by $CUSTODY_CA_BUNDLE (default: none) as the build secret `ca_bundle`;
# its certificates are added to Java's trust store for this build stage only.
RUN --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then \
      cd /tmp && csplit -s -z -f extra-ca- /run/secrets/ca_bundle '/-----BEGIN CERTIFICATE-----/' '{*}' \
      && for cert in extra-ca-*; do \
           keytool -importcert -noprompt -cacerts -storepass changeit -alias "custody-$cert" -file "$cert" >/dev/null; \
         done; \
    fi \
 && mvn -q -B -f /build/pom.xml dependency:copy-dependencies -DoutputDirectory=/opt/hadoop/jars -DincludeScope=runtime

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
COPY --from=jars /opt/hadoop/jars /opt/hadoop/jars
COPY cluster/docker/hadoop-entrypoint.sh /usr/local/bin/hadoop-entrypoint
ENTRYPOINT ["sh", "/usr/local/bin/hadoop-entrypoint"]
