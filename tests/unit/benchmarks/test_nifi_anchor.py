"""The pure parts of `custody bench flow --against-nifi`: the NARs built for NiFi, its
configuration, the flows' REST documents and the steady rate. No test starts NiFi."""

from __future__ import annotations

import zipfile

import pytest

from benchmarks.flow import flow_document as custody_flow_document
from benchmarks.nifi_anchor import assembly, configuration, flows, process, rounds


def parse_manifest(text: str) -> dict[str, str]:
    """A JAR manifest's main attributes, continuation lines joined (as java.util.jar reads it)."""
    lines: list[str] = []
    for line in text.split("\r\n"):
        if line.startswith(" "):
            lines[-1] += line[1:]
        elif line:
            lines.append(line)
    return dict(line.split(": ", 1) for line in lines)


def test_a_built_nar_names_itself_and_its_parent_as_the_nar_plugin_does():
    attributes = parse_manifest(assembly.manifest_text("nifi-standard-nar", "nifi-standard-shared-nar"))
    assert attributes["Nar-Id"] == "nifi-standard-nar"
    assert attributes["Nar-Group"] == "org.apache.nifi"
    assert attributes["Nar-Version"] == "2.3.0"
    assert attributes["Nar-Dependency-Id"] == "nifi-standard-shared-nar"
    assert attributes["Nar-Dependency-Group"] == "org.apache.nifi"
    assert attributes["Nar-Dependency-Version"] == "2.3.0"


def test_a_nar_without_a_parent_has_no_dependency_attributes():
    attributes = parse_manifest(assembly.manifest_text("nifi-jetty-nar", None))
    assert not [name for name in attributes if name.startswith("Nar-Dependency")]


def test_manifest_lines_stay_within_72_bytes_and_a_long_value_survives_the_wrapping():
    long_id = "nifi-" + "x" * 150 + "-nar"
    text = assembly.manifest_text(long_id, None)
    assert all(len(line.encode()) <= 72 for line in text.split("\r\n"))
    assert text.endswith("\r\n\r\n")
    assert parse_manifest(text)["Nar-Id"] == long_id


def test_a_built_nar_holds_its_directories_before_their_files_and_its_jars_bundled(tmp_path):
    jar = tmp_path / "nifi-standard-processors-2.3.0.jar"
    jar.write_bytes(b"PK-not-really")
    nar = tmp_path / "nifi-standard-nar-2.3.0.nar"
    assembly.build_nar(nar, "nifi-standard-nar", "nifi-standard-shared-nar", [jar])
    with zipfile.ZipFile(nar) as archive:
        names = archive.namelist()
        assert archive.read("META-INF/bundled-dependencies/nifi-standard-processors-2.3.0.jar") == b"PK-not-really"
    # NiFi's NarUnpacker makes a directory when it meets its entry, never for a file's parent.
    assert names == [
        "META-INF/",
        "META-INF/MANIFEST.MF",
        "META-INF/bundled-dependencies/",
        "META-INF/bundled-dependencies/nifi-standard-processors-2.3.0.jar",
    ]
    assert not (tmp_path / "nifi-standard-nar-2.3.0.nar.part").exists()


@pytest.mark.parametrize(
    ("jar", "artifact"),
    [
        ("nifi-api-2.0.0.jar", "nifi-api"),
        ("jackson-databind-2.18.3.jar", "jackson-databind"),
        ("kotlin-stdlib-jdk7-1.8.21.jar", "kotlin-stdlib-jdk7"),
        ("listenablefuture-9999.0-empty-to-avoid-conflict-with-guava.jar", "listenablefuture"),
        ("jakarta.validation-api-3.1.0-M2.jar", "jakarta.validation-api"),
    ],
)
def test_the_artifact_of_a_jar_is_its_name_before_the_version(jar, artifact):
    assert assembly.artifact_of(jar) == artifact


def test_a_nar_bundles_what_neither_lib_nor_its_parents_provide_in_any_version():
    candidates = ["nifi-api-2.0.0.jar", "slf4j-api-1.7.36.jar", "guava-33.4.0-jre.jar", "a.pom", "tika-core-3.1.0.jar"]
    provided = {"nifi-api-2.0.0.jar", "slf4j-api-2.0.17.jar", "nifi-standard-shared-nar-2.3.0.nar"}
    assert assembly.bundled_jars(candidates, provided) == ["guava-33.4.0-jre.jar", "tika-core-3.1.0.jar"]


def test_the_copy_pom_lists_artifact_items_and_the_transitive_pom_imports_nifis_versions():
    items = [("org.apache.nifi", "nifi-jetty-nar", "2.3.0", "nar")]
    copy = assembly.pom_text("lib", items, copy_only=True)
    assert "<artifactItem>" in copy and "<type>nar</type>" in copy and "<dependencies>" not in copy
    transitive = assembly.pom_text("std", [("org.apache.nifi", "nifi-standard-processors", "2.3.0", "jar")])
    assert "<scope>import</scope>" in transitive
    assert "<artifactId>nifi</artifactId><version>2.3.0</version>" in transitive


def test_lib_holds_nifi_api_2_0_0_the_release_nifi_2_3_0_is_built_on():
    assert ("org.apache.nifi", "nifi-api", "2.0.0") in assembly.CORE_JARS
    assert not [jar for jar in assembly.CORE_JARS if jar[1] == "nifi-api" and jar[2] != "2.0.0"]


def test_nifi_listens_on_loopback_over_http_only_and_keeps_its_state_under_the_run(tmp_path):
    run, home = tmp_path / "run", tmp_path / "home"
    properties = configuration.nifi_properties(run, home, 18080, "k" * 32)
    assert properties["nifi.web.http.host"] == "127.0.0.1"
    assert properties["nifi.web.http.port"] == "18080"
    assert properties["nifi.web.https.port"] == "" and properties["nifi.web.https.host"] == ""
    assert properties["nifi.sensitive.props.key"] == "k" * 32
    assert properties["nifi.nar.library.directory"] == str(home / "lib")
    for key in (
        "nifi.flowfile.repository.directory",
        "nifi.content.repository.directory.default",
        "nifi.provenance.repository.directory.default",
        "nifi.database.directory",
        "nifi.nar.working.directory",
    ):
        assert properties[key].startswith(str(run)), key
    # NiFi's defaults where the benchmark has no reason to differ.
    assert properties["nifi.queue.backpressure.count"] == "10000"
    assert properties["nifi.queue.swap.threshold"] == "20000"
    assert properties["nifi.flowfile.repository.always.sync"] == "false"
    assert "-Xmx1g" in configuration.BOOTSTRAP_JAVA_ARGUMENTS and "-Xms1g" in configuration.BOOTSTRAP_JAVA_ARGUMENTS


def test_the_properties_file_escapes_backslashes_and_newlines():
    text = configuration.properties_text({"a": "x\\y", "b": "one\ntwo", "c": ""})
    assert text == "a=x\\\\y\nb=one\\ntwo\nc=\n"


def test_the_configuration_files_are_written_under_the_run(tmp_path):
    path = configuration.write_configuration(tmp_path / "run", tmp_path / "home", 18080, "k" * 32)
    conf = tmp_path / "run" / "conf"
    assert path == conf / "nifi.properties"
    assert {p.name for p in conf.iterdir()} == {
        "nifi.properties",
        "state-management.xml",
        "logback.xml",
        "authorizers.xml",
        "login-identity-providers.xml",
        "bootstrap.conf",
    }
    assert str(tmp_path / "run" / "state" / "local") in (conf / "state-management.xml").read_text()
    assert str(tmp_path / "run" / "logs") in (conf / "logback.xml").read_text()


def test_the_engine_flow_merges_a_thousand_per_bundle_within_a_second():
    documents = flows.processor_documents("engine", "/out")
    assert set(documents) == {"generate", "update", "route", "merge", "put"}
    merge = documents["merge"]["config"]
    assert merge["properties"] == {
        "Minimum Number of Entries": "1000",
        "Maximum Number of Entries": "1000",
        "Max Bin Age": "1 s",
    }
    assert sorted(merge["autoTerminatedRelationships"]) == ["failure", "original"]
    assert documents["generate"]["config"]["properties"]["Batch Size"] == "1000"
    assert documents["generate"]["config"]["properties"]["File Size"] == "100 B"
    assert flows.connection_plan("engine") == [
        ("generate", "update", ["success"]),
        ("update", "route", ["success"]),
        ("route", "merge", ["matched", "unmatched"]),
        ("merge", "put", ["merged"]),
        ("put", "put", ["failure"]),
    ]


@pytest.mark.parametrize(("kind", "size", "batch"), [("small", "100 B", "1000"), ("1mb", "1 MB", "1")])
def test_the_small_and_1mb_flows_go_from_route_straight_to_putfile(kind, size, batch):
    documents = flows.processor_documents(kind, "/out")
    assert "merge" not in documents
    generated = documents["generate"]["config"]["properties"]
    assert (generated["File Size"], generated["Batch Size"]) == (size, batch)
    assert ("route", "put", ["matched", "unmatched"]) in flows.connection_plan(kind)
    assert not [c for c in flows.connection_plan(kind) if "merge" in c[:2]]


def test_the_attribute_processors_are_configured_as_custodys_flow_is():
    documents = flows.processor_documents("small", "/out")
    assert documents["update"]["config"]["properties"] == {"stage": "updated", "size.class": "small"}
    route = documents["route"]["config"]["properties"]
    assert route == {"Routing Strategy": "Route to 'match' if any matches", "ok": "${stage:equals('updated')}"}
    put = documents["put"]["config"]
    assert put["properties"] == {"Directory": "/out", "Conflict Resolution Strategy": "replace"}
    assert put["autoTerminatedRelationships"] == ["success"]
    assert "filename" not in documents["generate"]["config"]["properties"]  # each FlowFile's own name


def test_only_the_1mb_flow_writes_over_a_thousand_names_on_either_side():
    generated = flows.processor_documents("1mb", "/out")["generate"]["config"]["properties"]
    assert generated["filename"] == "${random():mod(1000)}"
    assert [kind for kind in flows.KINDS if flows.replaced_names(kind)] == ["1mb"]
    for kind in flows.KINDS:
        names, shape = flows.replaced_names(kind), flows.shape(kind)
        document = custody_flow_document("/out", 10**12, shape.content_bytes, shape.batch, shape.merge, names=names)
        processors = {p["id"]: p["properties"] for p in document["processors"]}
        assert ("filename" in processors["generate"]) == bool(names), kind
        assert processors["put"].get("file_name") == ("${filename}" if names else None), kind
        assert processors["put"].get("conflict_resolution") == ("replace" if names else None), kind


def test_the_custody_flow_refuses_names_with_merge_content():
    with pytest.raises(ValueError, match="without merge"):
        custody_flow_document("/out", 10, 100, 10, merge=10, names=1000)


@pytest.mark.parametrize(("default_scheduling", "run_duration"), [(False, 25), (True, 0)])
def test_attribute_processors_and_putfile_run_25_ms_unless_nifis_default_scheduling_is_asked(
    default_scheduling, run_duration
):
    documents = flows.processor_documents("engine", "/out", default_scheduling)
    for key in ("update", "route", "put"):
        assert documents[key]["config"]["runDurationMillis"] == run_duration, key
    for key in ("generate", "merge"):
        assert documents[key]["config"]["runDurationMillis"] == 0, key
    assert documents["generate"]["config"]["schedulingPeriod"] == "0 sec"


def test_a_connection_document_leaves_back_pressure_to_nifis_defaults():
    document = flows.connection_document("g", "a", "b", ["matched"])
    assert document["source"] == {"id": "a", "groupId": "g", "type": "PROCESSOR"}
    assert document["destination"] == {"id": "b", "groupId": "g", "type": "PROCESSOR"}
    assert document["selectedRelationships"] == ["matched"]
    assert not [key for key in document if "backPressure" in key]


def test_the_steady_rate_counts_only_the_window_after_the_warm_up():
    samples = [
        flows.StatusSample(5.0, 1_000, 100_000),  # during the warm-up: left out
        flows.StatusSample(10.0, 4_000, 400_000),
        flows.StatusSample(20.0, 9_000, 900_000),
        flows.StatusSample(40.0, 34_000, 3_400_000),
        flows.StatusSample(41.0, 99_000, 9_900_000),  # after the window: left out
    ]
    assert flows.steady_rate("small", samples, 10.0, 40.0) == pytest.approx(1_000.0)
    # engine: the original FlowFiles inside PutFile's bundles, from the bytes (100 each).
    bundles = [flows.StatusSample(10.0, 2, 200_000), flows.StatusSample(30.0, 12, 1_200_000)]
    assert flows.steady_rate("engine", bundles, 10.0, 30.0) == pytest.approx(500.0)
    large = [flows.StatusSample(0.0, 0, 0), flows.StatusSample(10.0, 800, 800 << 20)]
    assert flows.steady_rate("1mb", large, 0.0, 10.0) == pytest.approx(80.0)


def test_the_steady_rate_refuses_fewer_than_two_samples_in_the_window():
    with pytest.raises(ValueError, match="two status samples"):
        flows.steady_rate("small", [flows.StatusSample(12.0, 1, 1)], 10.0, 40.0)


def test_an_unknown_flow_is_refused():
    with pytest.raises(ValueError, match="unknown flow"):
        flows.processor_documents("huge", "/out")


def _round(nifi: float, custody: float, nifi_cpu: float, custody_cpu: float, steady: float) -> dict:
    def measured(rate, cpu):
        return {"rate": rate, "cpu_us_per_unit": cpu}

    return {
        kind: {
            "nifi": measured(nifi, nifi_cpu),
            "custody": measured(custody, custody_cpu),
            "custody_steady": measured(steady, None),
        }
        for kind in flows.KINDS
    }


def test_the_summary_takes_each_sides_median_of_the_rounds_and_their_ratio():
    summary = rounds.summarize(
        [
            _round(1_000, 3_000, 400, 100, 2_000),
            _round(2_000, 1_000, 500, 200, 4_000),
            _round(9_000, 2_000, 300, 300, 6_000),
        ]
    )
    assert summary["nifi_engine_flowfiles_per_sec"] == 2_000
    assert summary["custody_engine_flowfiles_per_sec"] == 2_000
    assert summary["ratio_engine_vs_nifi"] == 1.0
    assert summary["ratio_small_steady_vs_nifi"] == 2.0
    assert summary["nifi_1mb_mb_per_sec"] == 2_000
    assert summary["ratio_1mb_vs_nifi"] == 1.0
    assert summary["nifi_small_cpu_us_per_flowfile"] == 400
    assert summary["custody_1mb_cpu_us_per_mb"] == 200
    assert summary["cpu_ratio_engine_nifi_to_custody"] == 2.0


def test_cpu_per_unit_is_none_without_a_cpu_reading_or_without_units():
    assert rounds.cpu_us_per_unit(None, 100.0, 10.0) is None
    assert rounds.cpu_us_per_unit(1.0, 0.0, 10.0) is None
    assert rounds.cpu_us_per_unit(2.0, 100.0, 10.0) == 2_000.0


@pytest.mark.parametrize(
    ("release", "major"),
    [('JAVA_VERSION="25.0.3"\n', 25), ('IMPLEMENTOR="x"\nJAVA_VERSION="21"\n', 21), ('JAVA_VERSION="1.8.0_402"', 8)],
)
def test_the_java_version_is_read_from_a_jdks_release_file(release, major):
    assert process.java_major(release) == major


def _jdk(root, name, version):
    home = root / name
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("")
    (home / "release").write_text(f'JAVA_VERSION="{version}"\n')
    return home


def test_the_newest_jdk_of_at_least_21_is_chosen(tmp_path):
    _jdk(tmp_path, "java-17-openjdk-amd64", "17.0.12")
    _jdk(tmp_path, "temurin-21", "21.0.5")
    newest = _jdk(tmp_path, "temurin-25-jdk-amd64", "25.0.3")
    assert process.find_java(tmp_path) == (newest / "bin" / "java", 25)


def test_without_a_jdk_of_21_the_error_says_what_to_install(tmp_path):
    _jdk(tmp_path, "java-17-openjdk-amd64", "17.0.12")
    with pytest.raises(process.NiFiStartError, match="Java 21 or newer"):
        process.find_java(tmp_path)


def test_each_turn_starts_once_the_kernel_has_written_back_the_turn_before():
    """A turn is measured only after sync(2) returned, and says how long it took."""
    calls = []

    def sync():
        calls.append("sync")

    def measure():
        calls.append("measure")
        return {"rate": 1.0}

    result = rounds.settled(measure, sync=sync)
    assert calls == ["sync", "measure"]
    assert result["rate"] == 1.0 and 0 <= result["settle_s"] < 5
