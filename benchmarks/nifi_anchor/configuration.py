"""NiFi 2.3.0's configuration files for one benchmark run, written into `<run>/conf`.

Every value is NiFi's default (nifi-resources' pom and conf/), except:
* HTTP only, on 127.0.0.1 and a free port; no HTTPS, no authorizer, no login provider;
* the repositories, state, database, work and logs under the run's directory;
* `nifi.sensitive.props.key` set (NiFi refuses to start a flow without one);
* `nifi.content.repository.archive.enabled=false`: the archive keeps a deleted
  claim's content until the disk is 90% full, and the 1 MB flow would fill tens of
  gigabytes of a shared disk; moving a claim to the archive is work NiFi saves
  without it, so this favours NiFi (Custody keeps no archive either);
* `nifi.flowcontroller.autoResumeState=false`: a run starts from an empty flow.
bootstrap.conf's JVM arguments (`-Xms1g -Xmx1g` among them) are NiFi's own and are
what the JVM is started with (`java_arguments`).
"""

from __future__ import annotations

from pathlib import Path

HEAP = "1g"

# bootstrap.conf's java.arg.* of NiFi 2.3.0.
BOOTSTRAP_JAVA_ARGUMENTS = (
    f"-Xms{HEAP}",
    f"-Xmx{HEAP}",
    "-Dsun.net.http.allowRestrictedHeaders=true",
    "-Djava.protocol.handler.pkgs=sun.net.www.protocol",
    "-Djava.awt.headless=true",
    "-Dcurator-log-only-first-connection-issue-as-error-level=true",
    "-Djavax.security.auth.useSubjectCredsOnly=true",
)


def nifi_properties(run: Path, home: Path, port: int, sensitive_key: str) -> dict[str, str]:
    """nifi.properties for a standalone, unsecured NiFi whose state lives under `run`."""
    return {
        "nifi.flow.configuration.file": str(run / "conf" / "flow.json.gz"),
        "nifi.flow.configuration.archive.enabled": "true",
        "nifi.flow.configuration.archive.dir": str(run / "conf" / "archive"),
        "nifi.flow.configuration.archive.max.time": "30 days",
        "nifi.flow.configuration.archive.max.storage": "500 MB",
        "nifi.flow.configuration.archive.max.count": "",
        "nifi.flowcontroller.autoResumeState": "false",
        "nifi.flowcontroller.graceful.shutdown.period": "10 sec",
        "nifi.flowservice.writedelay.interval": "500 ms",
        "nifi.administrative.yield.duration": "30 sec",
        "nifi.bored.yield.duration": "10 millis",
        "nifi.queue.backpressure.count": "10000",
        "nifi.queue.backpressure.size": "1 GB",
        "nifi.authorizer.configuration.file": str(run / "conf" / "authorizers.xml"),
        "nifi.login.identity.provider.configuration.file": str(run / "conf" / "login-identity-providers.xml"),
        "nifi.ui.banner.text": "",
        "nifi.nar.library.directory": str(home / "lib"),
        "nifi.nar.library.autoload.directory": str(run / "extensions"),
        "nifi.nar.working.directory": str(run / "work" / "nar"),
        "nifi.nar.unpack.uber.jar": "false",
        "nifi.upload.working.directory": str(run / "work" / "uploads"),
        "nifi.python.framework.source.directory": str(run / "python" / "framework"),
        "nifi.python.extensions.source.directory.default": str(run / "python" / "extensions"),
        "nifi.python.working.directory": str(run / "work" / "python"),
        "nifi.python.max.processes": "100",
        "nifi.python.max.processes.per.extension.type": "10",
        "nifi.state.management.configuration.file": str(run / "conf" / "state-management.xml"),
        "nifi.state.management.provider.local": "local-provider",
        "nifi.state.management.provider.cluster": "",
        "nifi.state.management.provider.cluster.previous": "",
        "nifi.state.management.embedded.zookeeper.start": "false",
        "nifi.state.management.embedded.zookeeper.properties": "",
        "nifi.database.directory": str(run / "database_repository"),
        "nifi.flowfile.repository.implementation": "org.apache.nifi.controller.repository.WriteAheadFlowFileRepository",
        "nifi.flowfile.repository.wal.implementation": "org.apache.nifi.wali.SequentialAccessWriteAheadLog",
        "nifi.flowfile.repository.directory": str(run / "flowfile_repository"),
        "nifi.flowfile.repository.checkpoint.interval": "20 secs",
        "nifi.flowfile.repository.always.sync": "false",
        "nifi.flowfile.repository.retain.orphaned.flowfiles": "true",
        "nifi.swap.manager.implementation": "org.apache.nifi.controller.FileSystemSwapManager",
        "nifi.queue.swap.threshold": "20000",
        "nifi.content.repository.implementation": "org.apache.nifi.controller.repository.FileSystemRepository",
        "nifi.content.claim.max.appendable.size": "50 KB",
        "nifi.content.repository.directory.default": str(run / "content_repository"),
        "nifi.content.repository.archive.max.retention.period": "3 hours",
        "nifi.content.repository.archive.max.usage.percentage": "90%",
        "nifi.content.repository.archive.enabled": "false",
        "nifi.content.repository.always.sync": "false",
        "nifi.provenance.repository.implementation": "org.apache.nifi.provenance.WriteAheadProvenanceRepository",
        "nifi.provenance.repository.directory.default": str(run / "provenance_repository"),
        "nifi.provenance.repository.max.storage.time": "30 days",
        "nifi.provenance.repository.max.storage.size": "10 GB",
        "nifi.provenance.repository.rollover.time": "10 mins",
        "nifi.provenance.repository.rollover.size": "100 MB",
        "nifi.provenance.repository.query.threads": "2",
        "nifi.provenance.repository.index.threads": "2",
        "nifi.provenance.repository.compress.on.rollover": "true",
        "nifi.provenance.repository.always.sync": "false",
        "nifi.provenance.repository.indexed.fields": "EventType, FlowFileUUID, Filename, ProcessorID, Relationship",
        "nifi.provenance.repository.indexed.attributes": "",
        "nifi.provenance.repository.index.shard.size": "500 MB",
        "nifi.provenance.repository.max.attribute.length": "65536",
        "nifi.provenance.repository.concurrent.merge.threads": "2",
        "nifi.provenance.repository.buffer.size": "100000",
        "nifi.components.status.repository.implementation": (
            "org.apache.nifi.controller.status.history.VolatileComponentStatusRepository"
        ),
        "nifi.components.status.repository.buffer.size": "1440",
        "nifi.components.status.snapshot.frequency": "1 min",
        "nifi.nar.persistence.provider.implementation": "org.apache.nifi.nar.StandardNarPersistenceProvider",
        "nifi.nar.persistence.provider.properties.directory": str(run / "nar_repository"),
        "nifi.asset.manager.implementation": "org.apache.nifi.asset.StandardAssetManager",
        "nifi.asset.manager.properties.directory": str(run / "assets"),
        "nifi.remote.input.host": "",
        "nifi.remote.input.secure": "false",
        "nifi.remote.input.socket.port": "",
        "nifi.remote.input.http.enabled": "false",
        "nifi.web.http.host": "127.0.0.1",
        "nifi.web.http.port": str(port),
        "nifi.web.http.network.interface.default": "",
        "nifi.web.https.host": "",
        "nifi.web.https.port": "",
        "nifi.web.jetty.working.directory": str(run / "work" / "jetty"),
        "nifi.web.jetty.threads": "200",
        "nifi.web.max.header.size": "16 KB",
        "nifi.web.proxy.context.path": "",
        "nifi.web.proxy.host": "",
        "nifi.web.max.content.size": "",
        "nifi.web.max.requests.per.second": "30000",
        "nifi.web.max.access.token.requests.per.second": "25",
        "nifi.web.request.timeout": "60 secs",
        "nifi.web.request.ip.whitelist": "",
        "nifi.web.should.send.server.version": "true",
        "nifi.sensitive.props.key": sensitive_key,
        "nifi.sensitive.props.algorithm": "NIFI_PBKDF2_AES_GCM_256",
        "nifi.security.autoreload.enabled": "false",
        "nifi.security.user.authorizer": "",
        "nifi.security.allow.anonymous.authentication": "false",
        "nifi.security.user.login.identity.provider": "",
        "nifi.cluster.is.node": "false",
        "nifi.cluster.protocol.is.secure": "false",
        "nifi.zookeeper.connect.string": "",
        "nifi.analytics.predict.enabled": "false",
        "nifi.monitor.long.running.task.schedule": "",
        "nifi.monitor.long.running.task.threshold": "",
        "nifi.diagnostics.on.shutdown.enabled": "false",
        "nifi.performance.tracking.percentage": "0",
    }


def properties_text(properties: dict[str, str]) -> str:
    """A Java properties file; backslashes and the characters a key may not hold escaped."""
    return "".join(f"{key}={_escape(value)}\n" for key, value in properties.items())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


STATE_MANAGEMENT = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<stateManagement>
    <local-provider>
        <id>local-provider</id>
        <class>org.apache.nifi.controller.state.providers.local.WriteAheadLocalStateProvider</class>
        <property name="Directory">{directory}</property>
        <property name="Always Sync">false</property>
        <property name="Partitions">16</property>
        <property name="Checkpoint Interval">2 mins</property>
    </local-provider>
</stateManagement>
"""

# NiFi's levels for its own loggers; one file, nifi-app.log, under the run's logs/.
LOGBACK = """<?xml version="1.0" encoding="UTF-8"?>
<configuration scan="false">
    <contextListener class="ch.qos.logback.classic.jul.LevelChangePropagator">
        <resetJUL>true</resetJUL>
    </contextListener>
    <appender name="APP_FILE" class="ch.qos.logback.core.FileAppender">
        <file>{logs}/nifi-app.log</file>
        <encoder><pattern>%date %level [%thread] %logger{{40}} %msg%n</pattern></encoder>
    </appender>
    <logger name="org.apache.nifi" level="INFO"/>
    <logger name="org.apache.nifi.processors" level="WARN"/>
    <logger name="org.apache.nifi.controller.repository.StandardProcessSession" level="WARN"/>
    <logger name="org.apache.nifi.web.server.RequestLog" level="WARN"/>
    <logger name="org.eclipse.jetty" level="INFO"/>
    <logger name="org.springframework" level="ERROR"/>
    <logger name="org.glassfish.jersey.internal.Errors" level="ERROR"/>
    <root level="INFO"><appender-ref ref="APP_FILE"/></root>
</configuration>
"""

AUTHORIZERS = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<authorizers>\n</authorizers>\n'
LOGIN_IDENTITY_PROVIDERS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<loginIdentityProviders>\n</loginIdentityProviders>\n'
)


def write_configuration(run: Path, home: Path, port: int, sensitive_key: str) -> Path:
    """Write `<run>/conf`'s files; the path of nifi.properties."""
    conf = run / "conf"
    logs = run / "logs"
    conf.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    properties = conf / "nifi.properties"
    properties.write_text(properties_text(nifi_properties(run, home, port, sensitive_key)))
    (conf / "state-management.xml").write_text(STATE_MANAGEMENT.format(directory=run / "state" / "local"))
    (conf / "logback.xml").write_text(LOGBACK.format(logs=logs))
    (conf / "authorizers.xml").write_text(AUTHORIZERS)
    (conf / "login-identity-providers.xml").write_text(LOGIN_IDENTITY_PROVIDERS)
    (conf / "bootstrap.conf").write_text(
        "".join(f"java.arg.{index}={argument}\n" for index, argument in enumerate(BOOTSTRAP_JAVA_ARGUMENTS, 1))
    )
    return properties
