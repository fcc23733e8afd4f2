"""docker-compose.yml end to end: on the local engine, `docker compose up -d --build --wait`
builds every image from this tree and brings the whole cluster up healthy; the three
custody nodes form one cluster (read through ZooKeeper on the published port, and
through the admin API with the compose cluster's token), and their FlowFiles reach
the shared output volume; then `custody drill --target compose` kills, pauses and
partitions nodes (a partition in each phase: running, leading, adopting, joining),
and every FlowFile is delivered exactly once; last, `custody flow deploy` rolls the
Spark example flow (`examples/compose-spark.yaml`) onto the nodes, whose
ExecuteSparkSQL runs on the compose cluster's standalone Spark master (with
`CUSTODY_LONG=1`; in CI a node's container runs one Spark job of Python tasks on that
master instead: three Spark sessions starting at once on two cores take four
minutes, and ExecuteSparkSQL on a standalone master is tested beside the harness's
HDFS, in test_spark_standalone_run.py); last, the
project's Kafka broker is started (`--profile kafka`) and `custody drill --target
compose --workload kafka` rolls the Kafka workload's flow onto the nodes, partitions a
node and kills the broker, and a read_committed consumer on the host finds every
record in the output topic once.

The cluster is a dozen JVMs and three Python nodes on 2 cores, so the harness's own
ZooKeeper, HDFS and Spark are stopped first and this test runs after every other one
(`whole_machine`, see tests/conftest.py). It drives the Compose CLI, with the commands
the README gives, rather than testcontainers' `DockerCompose`, which runs the same CLI
and would only stand between the test and the commands' output. The project name,
the image tag and every published port are this run's own, so a compose cluster that
a developer runs (project `custody`, tag `dev`, the default ports) is left alone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from cluster.drills.compose_project import parse_events
from cluster.services.docker_engine import docker
from cluster.services.hdfs import jmx_bean
from cluster.services.install import cache_dir, hadoop_jars
from cluster.services.network import HOST, free_ports
from cluster.services.process import pid_alive, wait_until

ROOT = Path(__file__).resolve().parents[2]
NODES = {"custody1": "n1", "custody2": "n2", "custody3": "n3"}
FLOWFILES_PER_INCARNATION = 600  # custody-node.toml's `count`
PORT_VARIABLES = (
    "CUSTODY_ZK_PORT",
    "CUSTODY_NAMENODE_PORT",
    "CUSTODY_NAMENODE_HTTP_PORT",
    "CUSTODY_SPARK_UI_PORT",
    "CUSTODY_KAFKA_PORT",
    "CUSTODY_ADMIN_PORT_1",
    "CUSTODY_ADMIN_PORT_2",
    "CUSTODY_ADMIN_PORT_3",
)
BUILD_AND_UP_TIMEOUT_S = 1500.0  # a cold build downloads a JRE three times and pyspark once

pytestmark = [
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.whole_machine,
    pytest.mark.timeout(int(BUILD_AND_UP_TIMEOUT_S) + 3600),
]  # + the two drills' 1500 s each, and the Spark step

# Run inside a node: the files in the shared output volume, counted by the node that
# made each FlowFile (its content starts "<uuid> made by <node> as number <n>").
COUNT_OUTPUT_BY_NODE = """
import collections, json, os, re
counts = collections.Counter()
for name in os.listdir("/data/out"):
    if not name.startswith("."):
        with open(os.path.join("/data/out", name), "rb") as file:
            made_by = re.search(rb" made by (\\S+) as number ", file.read(200))
        counts[made_by.group(1).decode() if made_by else "?"] += 1
print(json.dumps(counts))
"""

LONG = os.environ.get("CUSTODY_LONG") == "1"
SPARK_FLOW = ROOT / "examples" / "compose-spark.yaml"
SPARK_RECORDS_PER_INCARNATION = 200  # its `records`
# Run inside a node: the Spark step's output records in the shared volume, by the node
# that made them, with the ids seen more than once and the records Spark got wrong.
COUNT_SPARK_RECORDS = """
import collections, glob, json
rows = [json.loads(line) for path in glob.glob("/data/out/spark/*") for line in open(path)]
ids = collections.Counter(row["id"] for row in rows)
print(json.dumps({"by_node": collections.Counter(row["node"] for row in rows),
                  "duplicated": sum(count - 1 for count in ids.values()),
                  "wrong": sum(1 for row in rows if row["doubled"] != 2 * row["n"])}))
"""


# This test's projects: custody-test-<the pytest process's pid>-<random>.
TEST_PROJECT = re.compile(r"custody-test-(\d+)-[0-9a-f]{8}")


def remove_projects_left_behind() -> list[str]:
    """Remove the projects of earlier runs whose test process is gone: killed before its
    teardown (a CI run stopped, a session's end), they keep their containers, which the
    Docker engine starts again when it starts (`restart: unless-stopped`): nodes with no
    ZooKeeper or HDFS left, spinning beside this run on the same cores (seen: five of
    them, through a whole CI run). Returns their names."""
    listed = json.loads(docker("compose", "ls", "-a", "--format", "json", timeout=60).stdout or b"[]")
    removed = []
    for entry in listed:
        match = TEST_PROJECT.fullmatch(entry["Name"])
        if match is None or pid_alive(int(match.group(1))):
            continue
        name = entry["Name"]
        docker("compose", "-p", name, "down", "--volumes", "--timeout", "5", timeout=300, check=False)
        tagged = docker(
            "images", "--filter", f"reference=custody/*:{name}", "--format", "{{.Repository}}:{{.Tag}}", timeout=60
        )
        images = tagged.stdout.decode().split()  # by name: an image tagged for others too only loses this tag
        if images:
            docker("rmi", *images, timeout=300, check=False)
        removed.append(name)
    return removed


class ComposeProject:
    """`docker compose -f docker-compose.yml -p NAME ...` with this run's variables."""

    def __init__(self, name: str, env: dict[str, str]):
        self.name = name
        self.env = env

    def __call__(self, *args: str, timeout: float = 120.0, check: bool = True) -> subprocess.CompletedProcess:
        return docker(
            "compose",
            "-f",
            str(ROOT / "docker-compose.yml"),
            "-p",
            self.name,
            *args,
            timeout=timeout,
            check=check,
            env=self.env,
        )

    def output(self, *args: str, **options) -> str:
        return self(*args, **options).stdout.decode(errors="replace")

    def events(self, service: str) -> list[dict]:
        """The node's `--events` lines from its container log."""
        return parse_events(self.output("logs", "--no-log-prefix", "--no-color", service, check=False))

    def diagnosis(self) -> str:
        """The services' state and last lines, then `summary()`: a CI run's record keeps
        only the end of the output, where a DataNode's flood of warnings had pushed out
        every line that said why a node did not deliver."""
        state = self.output("ps", "-a", check=False)
        logs = self.output("logs", "--no-color", "--tail", "30", check=False)
        return f"docker compose ps -a:\n{state}\nlast log lines of each service:\n{logs}\n{self.summary()}"

    def summary(self) -> str:
        """The host's load, memory and disk; HDFS as its NameNode reports it; and for each
        node how often its log names each known trouble, and its own last lines."""
        lines = ["---- summary ----", f"host: {host_state()}", f"hdfs: {self.namenode_state()}"]
        for service in NODES:
            log = self.output("logs", "--no-log-prefix", "--no-color", service, check=False).splitlines()
            own = [line for line in log if not HDFS_CLIENT_LINE.search(line)]
            counts = {name: sum(pattern in line for line in log) for name, pattern in NODE_TROUBLES.items()}
            lines.append(f"{service}: {counts}; {len(log) - len(own)} lines of the HDFS client's own")
            lines.extend(f"  {line[:300]}" for line in own[-8:])
        return "\n".join(lines)

    def namenode_state(self) -> str:
        """Safe mode, the DataNodes live and dead, and each live one's free space, blocks
        scheduled, blocks, failed volumes and last contact, from the NameNode's JMX."""
        try:
            info = jmx_bean(int(self.env["CUSTODY_NAMENODE_HTTP_PORT"]), "Hadoop:service=NameNode,name=NameNodeInfo")
        except (OSError, ValueError, LookupError) as error:
            return f"the NameNode's JMX did not answer: {error}"
        nodes = {
            name: {
                key: node.get(key) for key in ("remaining", "blockScheduled", "numBlocks", "volfails", "lastContact")
            }
            for name, node in json.loads(info.get("LiveNodes") or "{}").items()
        }
        dead = list(json.loads(info.get("DeadNodes") or "{}"))
        return f"safe mode {info.get('Safemode') or 'off'}; live {nodes}; dead {dead}"


# What `ComposeProject.summary` counts in a node's log: each a trouble that has made
# a node deliver slowly or not at all.
NODE_TROUBLES = {
    "start failed": '"event": "start-failed"',
    "HDFS past its deadline": "did not answer within",
    "first syncs hedged": "answered by its hedge",
    "new files made again": "making it again",
    "no space": "No space left",
    "safe mode": "safe mode",
    "errors": " ERROR ",
}
# A line the HDFS client (hdfs-native, in Rust) logs itself: a dead or slow pipeline
# makes hundreds.
HDFS_CLIENT_LINE = re.compile(r"^\[\S+ +\w+ +hdfs_native")


def host_state() -> str:
    """The load average, available memory and swap, and free disk of the machine."""
    load = Path("/proc/loadavg").read_text().split()[:3]
    memory = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    kept = {key: memory[key].strip() for key in ("MemAvailable", "SwapTotal", "SwapFree") if key in memory}
    disks = {
        path: f"{shutil.disk_usage(path).free >> 20} MiB free"
        for path in ("/", "/var/lib/docker", "/tmp")
        if Path(path).exists()
    }
    return f"load {' '.join(load)}; {kept}; {disks}"


# A line of compose's progress ("Container x-zk1-1  Healthy"): left out of a failure's
# message, where hundreds of them pushed out the one line that said what failed.
PROGRESS_LINE = re.compile(r"\s*(Container|Network|Volume|Image|Service)\s+\S+\s+[A-Z][a-z]+(\s+[0-9.]+s)?\s*")


def compose_failure(result: subprocess.CompletedProcess) -> str:
    """What a failed compose command said, without its progress lines."""
    said = [
        line
        for stream in (result.stderr, result.stdout)
        for line in (stream or b"").decode(errors="replace").splitlines()
        if line.strip() and not PROGRESS_LINE.fullmatch(line)
    ]
    return "\n".join(said)[-3000:] or "(nothing but progress lines)"


def node_tails(logs: str, lines: int = 150) -> str:
    """The last `lines` lines of each node's log in `docker compose logs` output (each
    line is prefixed with its container, e.g. `custody1-1  | ...`)."""
    tails = []
    for service in NODES:
        own = [line for line in logs.splitlines() if line.startswith(f"{service}-")]
        tails.append(
            f"---- {service}: last {min(lines, len(own))} of {len(own)} lines ----\n" + "\n".join(own[-lines:])
        )
    return "\n".join(tails)


@pytest.fixture
def compose_project(request, docker_engine, harness_services_stopped, tmp_path):
    hadoop_jars()  # the HDFS services mount them from the cache; fetched here if a fresh machine lacks them
    left_behind = remove_projects_left_behind()
    if left_behind:
        print(f"removed compose projects left behind by earlier runs: {', '.join(left_behind)}")
    name = f"custody-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    assert TEST_PROJECT.fullmatch(name)
    env = {
        "CUSTODY_CACHE": str(cache_dir()),
        "CUSTODY_IMAGE_TAG": name,
        **{
            variable: str(port) for variable, port in zip(PORT_VARIABLES, free_ports(len(PORT_VARIABLES)), strict=False)
        },
    }
    project = ComposeProject(name, env)
    yield project
    if getattr(request.node, "rep_call", None) is None or request.node.rep_call.failed:
        # The post-mortem, before `down` removes the containers and their logs: every
        # service's whole log in a file, the nodes' last lines in the test's output.
        logs = project.output("logs", "--no-color", "--timestamps", check=False)
        (tmp_path / "compose.log").write_text(logs)
        print(f"every service's log: {tmp_path / 'compose.log'}\n{node_tails(logs)}")
    # With the profile, so that the broker's image goes with the others.
    result = project(
        "--profile", "kafka", "down", "--volumes", "--rmi", "all", "--timeout", "30", timeout=300, check=False
    )
    assert result.returncode == 0, f"docker compose down failed: {result.stderr.decode(errors='replace')[-800:]}"


def test_compose_cluster_builds_comes_up_healthy_moves_flowfiles_and_survives_a_drill(compose_project, tmp_path):
    project = compose_project
    began = time.monotonic()
    up = project(
        "up", "--detach", "--build", "--wait", "--wait-timeout", "600", timeout=BUILD_AND_UP_TIMEOUT_S, check=False
    )
    up_s = time.monotonic() - began
    assert up.returncode == 0, (
        f"docker compose up failed after {up_s:.0f}s: {compose_failure(up)}\n{project.diagnosis()}"
    )

    token = project.output("run", "--rm", "--no-deps", "-T", "admin-token").strip().splitlines()[-1]
    assert token.startswith("cst_"), f"admin-token printed no token: {token!r}"

    def output_counts() -> dict[str, int]:
        return json.loads(project.output("exec", "-T", "custody1", "python3", "-c", COUNT_OUTPUT_BY_NODE))

    try:
        wait_until(
            lambda: all(output_counts().get(node, 0) >= FLOWFILES_PER_INCARNATION for node in NODES.values()),
            180,
            "every node's FlowFiles in the shared output volume",
            interval=1.0,
        )
    except Exception as error:  # noqa: BLE001 - the counts and the cluster's state say why
        pytest.fail(f"{error}; counts {output_counts()}\n{project.diagnosis()}", pytrace=False)
    flowing_s = time.monotonic() - began - up_s
    assert output_counts() == {node: FLOWFILES_PER_INCARNATION for node in NODES.values()}

    # The cluster's znodes are its identity's alone: without the credentials, status is refused.
    refused = cluster_status(project.env["CUSTODY_ZK_PORT"], None)
    assert refused.returncode != 0 and "credentials" in refused.stderr, refused.stderr
    credentials = tmp_path / "zookeeper-credentials"
    credentials.write_text(project.output("exec", "-T", "custody1", "cat", "/etc/custody/zookeeper/credentials"))
    credentials.chmod(0o600)

    def read_status() -> dict:
        return json.loads(cluster_status(project.env["CUSTODY_ZK_PORT"], str(credentials)).stdout)

    # One incarnation per node, owning its home shard. A start that failed after its
    # shard was created (HDFS too slow for its first checkpoint on a loaded machine)
    # leaves that shard to the survivors, who drain and retire it; its znode then stays,
    # RETIRED, for the collector's retention. No other shard may be left.
    def settled() -> dict | None:
        now = read_status()
        others = [shard for name, shard in now["shards"].items() if name not in now["members"]]
        return now if all(shard["state"] == "retired" for shard in others) else None

    try:
        status = wait_until(settled, 120, "every shard but the members' own retired", interval=1.0)
    except Exception as error:  # noqa: BLE001 - the shards say which is left
        pytest.fail(f"{error}: {read_status()['shards']}", pytrace=False)
    members = status["members"]
    assert sorted(member["node"] for member in members.values()) == sorted(NODES.values()), members
    assert {member["admin"] for member in members.values()} == {f"http://{service}:8080" for service in NODES}
    assert status["leader"] in members
    assert all(status["shards"][name]["owner"] == name for name in members), status["shards"]
    left = set(status["shards"]) - set(members)
    failed_starts = sum(event["event"] == "start-failed" for service in NODES for event in project.events(service))
    assert len(left) <= failed_starts, (left, failed_starts)

    admin = f"http://{HOST}:{project.env['CUSTODY_ADMIN_PORT_1']}"
    assert http_status(f"{admin}/api/v1/cluster") == 401
    view = http_json(f"{admin}/api/v1/cluster", token)
    assert sorted(member["incarnation"] for member in view["members"]) == sorted(members)

    events = {service: project.events(service) for service in NODES}
    summary = {
        service: [event["event"] for event in lines if event["event"] in ("start-failed", "joined", "dead")]
        for service, lines in events.items()
    }
    print(
        f"\ncompose cluster: up --build --wait {up_s:.0f}s, every FlowFile out {flowing_s:.0f}s later; "
        f"join events {summary}"
    )
    # A start that failed (a loaded machine's HDFS too slow for its forced WAL
    # checkpoint) is tried again: each node joined in the end, and none died.
    assert all(steps[-1:] == ["joined"] and "dead" not in steps for steps in summary.values()), summary

    drill_failovers(project, tmp_path)
    every_node_a_member(project, token)
    if LONG:
        spark_step(project, token)
    else:
        spark_job(project)
    kafka_drill(project, tmp_path)


# A partition round cuts its node off while it runs, leads, adopts and joins, in turn:
# four partitions see each phase once, beside one kill and one stop.
DRILL = ["--faults", "partition,kill,partition,stop,partition,partition", "--rounds", "6"]


def run_drill(project, tmp_path: Path, name: str, arguments: list[str]) -> dict:
    """`custody drill --target compose` on the project, as a user runs it; its report,
    once it said every FlowFile (or record) came out once."""
    report, plot = tmp_path / f"{name}.json", tmp_path / f"{name}.png"
    began = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cluster.cli",
            "drill",
            "--target",
            "compose",
            "--project",
            project.name,
            *arguments,
            "--report",
            str(report),
            "--plot",
            str(plot),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    print(
        f"custody drill --target compose {' '.join(arguments)} ({time.monotonic() - began:.0f}s):\n"
        f"{done.stdout[-6000:]}\n{done.stderr[-2000:]}"
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-2000:], project.diagnosis())
    found = json.loads(report.read_text())
    assert found["ok"] and found["error"] is None, found["error"]
    check = found["check"]
    assert (check["lost"], check["duplicated"], check["unexpected"]) == (0, 0, 0), check
    assert found["created"] > 0 and check["delivered"] == found["created"]
    with open(plot, "rb") as image:
        assert image.read(8) == b"\x89PNG\r\n\x1a\n"
    return found


def drill_failovers(project, tmp_path: Path) -> None:
    """Every round fails a node over (a partition in each phase), and the check finds
    every FlowFile delivered once."""
    plot = tmp_path / "drill.png"
    found = run_drill(project, tmp_path, "drill", DRILL)
    assert found["faults"] == {"kill": 1, "partition": 4, "stop": 1}
    # HDFS's unfinished blocks read through the port the namenode service publishes.
    assert found["hdfs_blocks_scheduled"] is not None, [entry.get("blocks_scheduled") for entry in found["rounds"]]
    partitions = [entry for entry in found["rounds"] if entry["fault"] == "partition"]
    assert [entry["phase"] for entry in partitions] == ["running", "leader", "adopting", "joining"]
    # Cut off, each node stopped itself (its session guard) or was told it is dead once
    # healed; cut off while joining, it gave up or its new incarnation died.
    assert all(entry["deposed"] for entry in partitions), partitions
    # A node cut off stopped itself while cut off (its death is over within 2 s of its
    # guard's decision, whatever HDFS does): reported by the heal, or within 5 s of it.
    assert all(entry["death_after_heal"] <= 5.0 for entry in partitions if "death_after_heal" in entry), partitions
    from PIL import Image

    with Image.open(plot) as image:
        image.load()
        assert image.width > 600 and image.height > 200


def every_node_a_member(project, token: str) -> None:
    """As an operator would before the next step: the drill's last round may have left a
    node rejoining as a new incarnation (its container restarting), and a rolling
    deploy wants the whole cluster."""
    admin = f"http://{HOST}:{project.env['CUSTODY_ADMIN_PORT_1']}"

    def members() -> set[str]:  # raises while custody1's node restarts: "not yet" to wait_until
        view = http_json(f"{admin}/api/v1/cluster", token)
        return {member["incarnation"].rsplit("-", 1)[0] for member in view["members"]}

    wait_until(lambda: members() == set(NODES.values()), 300, "every node a member again after the drill", interval=1.0)


# Run inside a node: one job on the master its node.toml names, with the Spark conf it
# gives, whose tasks run Python on the worker's executor.
SPARK_JOB = """
from cluster.node.config import load_node_config
from flow.spark.session import build_spark_session
config = load_node_config("/etc/custody/node.toml")
session = build_spark_session(config.spark_master, config.spark_conf, app_name="compose-check")
print(session.sparkContext.parallelize(range(1000), 4).map(lambda n: n * 2).sum())
session.stop()
"""


def spark_job(project) -> None:
    """A node's container runs a job on the standalone master; its executor runs the
    Python tasks and the sum comes back to the node."""
    began = time.monotonic()
    done = project("exec", "-T", "custody1", "python3", "-c", SPARK_JOB, timeout=300, check=False)
    output = done.stdout.decode(errors="replace")
    assert done.returncode == 0, (output[-2000:], done.stderr.decode(errors="replace")[-3000:], project.diagnosis())
    print(f"Spark job from custody1 on the standalone master: {time.monotonic() - began:.0f}s")
    assert output.split()[-1] == str(2 * sum(range(1000))), output[-2000:]


def spark_step(project, token: str) -> None:
    """`custody flow deploy` of the Spark example as a user runs it: each node's new
    incarnation makes its FlowFiles of records, and ExecuteSparkSQL runs them on the
    standalone master; every record comes out once, computed right."""
    admin = f"http://{HOST}:{project.env['CUSTODY_ADMIN_PORT_1']}"
    began = time.monotonic()
    deploy = subprocess.run(
        [sys.executable, "-m", "cluster.cli", "flow", "deploy", str(SPARK_FLOW), "--url", admin, "--timeout", "600"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=700,
        env={**os.environ, "CUSTODY_ADMIN_TOKEN": token},
    )
    assert deploy.returncode == 0, (deploy.stdout[-2000:], deploy.stderr[-2000:], project.diagnosis())
    deployed_s = time.monotonic() - began

    def records() -> dict:
        return json.loads(project.output("exec", "-T", "custody1", "python3", "-c", COUNT_SPARK_RECORDS))

    try:
        wait_until(
            lambda: all(records()["by_node"].get(node, 0) >= SPARK_RECORDS_PER_INCARNATION for node in NODES.values()),
            600,
            "every node's records through Spark",
            interval=2.0,
        )
    except Exception as error:  # noqa: BLE001 - the counts and the cluster's state say why
        pytest.fail(f"{error}; records {records()}\n{project.diagnosis()}", pytrace=False)
    print(
        f"Spark flow: deployed in {deployed_s:.0f}s, every record out of Spark "
        f"{time.monotonic() - began - deployed_s:.0f}s later"
    )
    assert records() == {
        "by_node": {node: SPARK_RECORDS_PER_INCARNATION for node in NODES.values()},
        "duplicated": 0,
        "wrong": 0,
    }


# The Kafka workload on the compose cluster: a partition cuts a node off the broker as
# well as ZooKeeper and HDFS; the broker's death stops every node's consuming and
# publishing at once. Two rounds of each.
KAFKA_FAULTS = ("partition", "broker")
KAFKA_PER_FAULT = 2
KAFKA_DRILL = [
    "--workload",
    "kafka",
    "--faults",
    ",".join(KAFKA_FAULTS),
    "--rounds",
    str(KAFKA_PER_FAULT * len(KAFKA_FAULTS)),
]


def kafka_drill(project, tmp_path: Path) -> None:
    """The project's Kafka broker started as the compose file says, then `custody drill
    --workload kafka`: its flow rolled onto the nodes, a node partitioned and the broker
    killed, twice each, and every record sent to the input topic read once from the output topic,
    read_committed, on the host."""
    # Before the broker runs, the drill refuses at once and says how to start it.
    refused = subprocess.run(
        [sys.executable, "-m", "cluster.cli", "drill", "--target", "compose", "--project", project.name, *KAFKA_DRILL],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2 and "--profile kafka up -d --wait kafka" in refused.stderr, refused.stderr
    began = time.monotonic()
    up = project("--profile", "kafka", "up", "--detach", "--build", "--wait", "kafka", timeout=900, check=False)
    assert up.returncode == 0, f"the Kafka broker did not come up: {compose_failure(up)}"
    print(f"Kafka broker: up --build --wait {time.monotonic() - began:.0f}s")
    found = run_drill(project, tmp_path, "kafka-drill", KAFKA_DRILL)
    assert found["workload"] == "kafka" and found["faults"] == dict.fromkeys(KAFKA_FAULTS, KAFKA_PER_FAULT)
    for entry in found["rounds"]:
        if entry["fault"] == "broker":  # the broker came back and delivery went on, without a node lost
            assert entry["twenty_delivered_after"] < 90 and not entry.get("sessions_lost"), entry
        else:
            assert entry["deposed"], entry


def cluster_status(zk_port: str, credentials_file: str | None) -> subprocess.CompletedProcess:
    """`custody cluster status --json` from the host, through the published ZooKeeper."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "cluster.cli",
            "cluster",
            "status",
            "--zk",
            f"{HOST}:{zk_port}",
            "--cluster",
            "main",
            "--json",
            *(["--credentials-file", credentials_file] if credentials_file else []),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=credentials_file is not None,
    )


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def http_json(url: str, token: str) -> dict:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)
