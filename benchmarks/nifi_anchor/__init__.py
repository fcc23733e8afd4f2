"""Real Apache NiFi 2.3.0 as the anchor of `custody bench flow --against-nifi`.

* assembly: NiFi's home (lib/ with its core jars and NARs) put together from Maven
  Central's artifacts; the NARs Maven Central does not serve are built from their jars.
* configuration: nifi.properties, bootstrap.conf, logback.xml, state-management.xml,
  authorizers.xml and login-identity-providers.xml at NiFi's defaults, HTTP on loopback.
* process: the JVM (Java 21+), its REST API waited for with a deadline, always stopped.
* rest: the few REST calls the benchmark makes.
* flows: the benchmark's three flows as NiFi's REST documents, and the steady rate
  read from NiFi's status samples.
* rounds: NiFi and Custody alternating, the medians and ratios.
"""
