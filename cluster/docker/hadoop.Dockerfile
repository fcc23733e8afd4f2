# HDFS daemons (NameNode or DataNode) from Apache Hadoop's jars on Maven Central,
# fetched by the same pom the test harness uses.
FROM debian:bookworm-slim AS jars
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# Behind a TLS-intercepting proxy, put its CA bundle in the build context and pass
# --build-arg EXTRA_CA_BUNDLE=path/in/context; it is added to Java's trust store.
ARG EXTRA_CA_BUNDLE=""
COPY cluster/services/hadoop/pom.xml /build/pom.xml
COPY ${EXTRA_CA_BUNDLE:-cluster/services/hadoop/pom.xml} /build/extra-ca
RUN if [ -n "$EXTRA_CA_BUNDLE" ]; then \
      csplit -s -z -f /build/ca- /build/extra-ca '/-----BEGIN CERTIFICATE-----/' '{*}' ; \
      for cert in /build/ca-*; do keytool -importcert -noprompt -cacerts -storepass changeit -alias "$(basename $cert)" -file "$cert" >/dev/null 2>&1 || true; done ; \
    fi \
 && mvn -q -B -f /build/pom.xml dependency:copy-dependencies -DoutputDirectory=/opt/hadoop/jars -DincludeScope=runtime

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
COPY --from=jars /opt/hadoop/jars /opt/hadoop/jars
COPY cluster/docker/hadoop-entrypoint.sh /usr/local/bin/hadoop-entrypoint
ENTRYPOINT ["sh", "/usr/local/bin/hadoop-entrypoint"]
