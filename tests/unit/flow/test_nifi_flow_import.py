"""NiFi flow definitions (tests/data/nifi_flows, written to NiFi's published format)
imported without I/O: what each processor, property, setting, nested group and
parameter becomes, and every problem of a document Custody cannot run, each with its
JSON path, all in one error."""

from __future__ import annotations

import json

import pytest

from flow.nifi_flow import NiFiFlowError, import_nifi_flow
from flow.nifi_flow.processor_tables import PROCESSOR_MAPPINGS

from .nifi_flows import essence, nifi_document


def _processors(flow: dict) -> dict:
    return {processor["id"]: processor for processor in flow["processors"]}


def test_every_mapped_processor_imports_with_its_settings():
    imported = import_nifi_flow(nifi_document("every_processor.json"))
    processors = _processors(imported.flow)
    assert {p["type"] for p in processors.values()} == {m.custody_type for m in PROCESSOR_MAPPINGS}
    generate = processors["Generate"]
    assert generate["properties"] == {"file_size": "1 KB", "batch_size": 3, "unique_flowfiles": True, "color": "blue"}
    assert generate["scheduling"] == {"run_schedule": "5 sec", "concurrent_tasks": 4}
    assert "auto_terminate" not in generate
    # NiFi's defaults that differ from Custody's are carried (GetFile recurses by default in NiFi)
    assert processors["Get"]["properties"]["recurse"] is True
    # a NiFi default spelt otherwise but meaning Custody's default is left to it
    assert "properties" not in processors["Fetch"]
    assert processors["Route"]["properties"]["routing_strategy"] == "route_to_matched_if_any_matches"
    assert processors["Replace"]["properties"]["evaluation_mode"] == "line_by_line"
    assert processors["Log"]["properties"] == {
        "log_level": "warning",
        "log_payload": True,
        "attributes_to_log": "user\\..*",
    }
    assert processors["Publish"]["properties"]["delivery_guarantee"] == "at_least_once"
    assert processors["Convert"]["properties"]["record_reader"] == "JSON in"
    assert processors["Invoke"]["auto_terminate"] == ["original", "response", "failure"]
    services = {service["id"]: service for service in imported.flow["services"]}
    assert services["JSON out"]["properties"]["output_grouping"] == "one-line-per-object"
    # NiFi's "Skip Header Line" true is Custody's default treat_first_line_as_header
    assert services["CSV in"]["properties"] == {
        "value_separator": ";",
        "quote_character": "'",
        "escape_character": "\\",
        "null_string": "NULL",
    }
    assert services["Avro out"]["properties"] == {"compression_format": "deflate"}
    (first, second) = imported.flow["connections"]
    assert first["back_pressure"] == {"object_count": 0, "data_size": "0 B"}
    assert first["expiration"] == "30 sec" and first["prioritizers"] == ["priority_attribute", "newest_first"]
    assert second["relationships"] == ["no_retry", "retry"]  # InvokeHTTP's "No Retry" and "Retry"


def test_parameters_become_the_flows_and_a_sensitive_one_is_left_unset_and_listed():
    imported = import_nifi_flow(nifi_document("every_processor.json"))
    assert imported.flow["parameters"] == {"region": "eu"}
    assert imported.unset_parameters == {"kafka_password": "sensitive"}
    assert _processors(imported.flow)["Consume"]["properties"]["sasl_password"] == "#{kafka_password}"
    assert any("#{kafka_password}" in line and "--param" in line for line in imported.report)


def test_the_report_says_what_each_component_and_property_became():
    report = import_nifi_flow(nifi_document("every_processor.json")).report
    assert (
        "processor 'Get' <- flowContents.processors[3] (org.apache.nifi.processors.standard.GetFile) as GetFile"
        in report
    )
    assert "    Keep Source File: 'true' -> keep_source_file: True" in report
    assert "    Batch Size: '1' (NiFi's default) -> batch_size: Custody's default" not in report
    assert any(line.startswith("    Polling Interval: '0 sec' -> dropped") for line in report)
    assert any(line.startswith("service 'CSV out' <- flowContents.controllerServices[3]") for line in report)
    assert "    runDurationMillis: 25 -> dropped (Custody batches by batch sizes)" in report


def test_nested_groups_flatten_through_ports_and_funnels_keeping_names():
    flow = import_nifi_flow(nifi_document("files_pipeline.json")).flow
    assert set(_processors(flow)) == {"Intake/Get", "Tag", "Route", "Mark", "Put"}
    connections = {(c["source"], tuple(c["relationships"]), c["destination"]): c for c in flow["connections"]}
    assert set(connections) == {
        ("Intake/Get", ("success",), "Tag"),
        ("Tag", ("success",), "Route"),
        ("Route", ("a_files",), "Mark"),
        ("Mark", ("success",), "Put"),
        ("Route", ("unmatched",), "Put"),
        ("Put", ("failure",), "Put"),
    }
    # the queue settings are those of the last hop, the queue before the processor
    into_tag = connections[("Intake/Get", ("success",), "Tag")]
    assert into_tag["back_pressure"] == {"object_count": 500, "data_size": "10 MB"}
    assert into_tag["prioritizers"] == ["oldest_first"]
    assert "ports" not in flow  # the nested group's port is not the flow's


def test_the_import_of_the_pipeline_is_the_flow_written_by_hand():
    import yaml

    from .nifi_flows import NIFI_FLOWS

    imported = import_nifi_flow(nifi_document("files_pipeline.json")).flow
    by_hand = yaml.safe_load((NIFI_FLOWS / "files_pipeline.yaml").read_text())
    ids = {"Intake/Get": "get", "Tag": "tag", "Route": "route", "Mark": "mark", "Put": "put"}
    renamed = json.loads(json.dumps(imported))
    for processor in renamed["processors"]:
        processor["id"] = ids[processor["id"]]
    for connection in renamed["connections"]:
        connection["source"], connection["destination"] = ids[connection["source"]], ids[connection["destination"]]
    assert essence(renamed) == essence(by_hand)


UNSUPPORTED = {
    "flowContents.processGroups[0].executionEngine",  # a STATELESS group, and no file to write its flow to
    "flowContents.processGroups[0].inputPorts[1]",  # a second input port of a STATELESS group
    "flowContents.controllerServices[0].type",
    "flowContents.processors[0].type",
    'flowContents.processors[1].properties."Path Filter"',
    'flowContents.processors[1].properties."Keep Source File"',
    "flowContents.processors[1].schedulingPeriod",
    "flowContents.processors[2].properties.encoded",
    "flowContents.processors[2].properties.secret",
    "flowContents.processors[2].executionNode",
    "flowContents.processors[2].retriedRelationships",
    "flowContents.processors[2].scheduledState",
    'flowContents.processors[3].properties."Record Writer"',
    'flowContents.processors[4].properties."Maximum File Count"',
    "flowContents.processors[4].properties.Permissions",
    'flowContents.processGroups[0].processors[0].properties."File Size"',
    "flowContents.connections[1].destination.id",
    "flowContents.connections[0].prioritizers[0]",
    "flowContents.connections[0].loadBalanceStrategy",
    "flowContents.processors[2].autoTerminatedRelationships",
}


def test_everything_custody_cannot_run_is_listed_at_once_with_its_path():
    with pytest.raises(NiFiFlowError) as raised:
        import_nifi_flow(nifi_document("unsupported.json"), source="unsupported.json")
    problems = raised.value.problems
    assert {problem.path for problem in problems} == UNSUPPORTED
    assert len(problems) == len(UNSUPPORTED)
    messages = {problem.path: problem.message for problem in problems}
    assert "ExecuteScript" in messages["flowContents.processors[0].type"]
    assert "getStateValue()" in messages["flowContents.processors[2].properties.encoded"]
    assert "primary node" in messages["flowContents.processors[2].executionNode"]
    assert "W and L-n are not supported" in messages["flowContents.processors[1].schedulingPeriod"]
    assert "DBCPConnectionPool" in messages["flowContents.controllerServices[0].type"]
    assert "dangling" in messages["flowContents.connections[1].destination.id"]
    assert str(raised.value).startswith(f"unsupported.json: {len(UNSUPPORTED)} problem(s):")


def test_a_malformed_document_is_refused_with_each_wrong_field():
    with pytest.raises(NiFiFlowError) as raised:
        import_nifi_flow(nifi_document("malformed.json"))
    paths = {problem.path for problem in raised.value.problems}
    assert {
        "flowContents.processors[2]",
        "flowContents.processors[0].properties",
        "flowContents.processors[0].concurrentlySchedulableTaskCount",
        "flowContents.processors[1].type",
        "flowContents.processors[1].properties.Batch",
        "flowContents.funnels",
        "flowContents.connections[0].destination",
        "flowContents.connections[0].selectedRelationships",
        "parameterContexts.ctx.parameters[0].sensitive",
        "parameterContexts.ctx.parameters[0].value",
        "parameterContexts.ctx.parameters[0].name",
    } <= paths


@pytest.mark.parametrize(
    "content, says",
    [
        (b'{"flowContents": {"identifier": "x", "processors": [', "not JSON"),
        (b"[1, 2]", "expected a JSON object with flowContents, got a list"),
        (b'{"flowContents": "x"}', "expected an object, got text"),
        (b"{}", "missing"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_what_is_not_a_flow_definition_is_one_problem(content, says):
    with pytest.raises(NiFiFlowError) as raised:
        import_nifi_flow(content)
    (problem,) = raised.value.problems
    assert says in problem.message


def _group(name, context, processors, groups=(), connections=()):
    return {
        "identifier": f"g-{name}",
        "name": name,
        "parameterContextName": context,
        "processors": list(processors),
        "processGroups": list(groups),
        "connections": list(connections),
    }


def _update(identifier, name, value):
    return {
        "identifier": identifier,
        "name": name,
        "type": "org.apache.nifi.processors.attributes.UpdateAttribute",
        "properties": {"value": value},
        "autoTerminatedRelationships": ["success"],
    }


def _contexts(*contexts):
    return {
        name: {
            "name": name,
            "parameters": [{"name": n, "value": v, "sensitive": False} for n, v in params],
            "inheritedParameterContexts": list(inherited),
        }
        for name, params, inherited in contexts
    }


def test_inherited_parameter_contexts_are_merged_own_parameters_first():
    document = {
        "flowContents": _group("top", "child", [_update("u1", "U", "#{a}-#{b}")]),
        "parameterContexts": _contexts(("child", [("a", "own")], ["base"]), ("base", [("a", "base"), ("b", "2")], [])),
    }
    flow = import_nifi_flow(json.dumps(document)).flow
    assert flow["parameters"] == {"a": "own", "b": "2"}


def test_two_contexts_giving_one_name_two_values_is_a_problem():
    document = {
        "flowContents": _group(
            "top", "one", [_update("u1", "U", "#{x}")], groups=[_group("inner", "two", [_update("u2", "V", "#{x}")])]
        ),
        "parameterContexts": _contexts(("one", [("x", "1")], []), ("two", [("x", "2")], [])),
    }
    with pytest.raises(NiFiFlowError) as raised:
        import_nifi_flow(json.dumps(document))
    (problem,) = raised.value.problems
    assert problem.path == "parameterContexts.two.parameters[0]" and "one set of parameters" in problem.message


def test_a_name_taken_twice_in_a_group_is_numbered():
    document = {"flowContents": _group("top", None, [_update("u1", "Same", "1"), _update("u2", "Same", "2")])}
    flow = import_nifi_flow(json.dumps(document)).flow
    assert [p["id"] for p in flow["processors"]] == ["Same", "Same 2"]


def _end(identifier, kind, group):
    return {"id": identifier, "type": kind, "groupId": group}


def _connection(identifier, source, destination, relationships=()):
    return {
        "identifier": identifier,
        "source": source,
        "destination": destination,
        "selectedRelationships": list(relationships),
    }


def test_a_connection_into_a_nested_groups_input_port_reaches_the_processors_inside():
    inner = _group("Inner", None, [_update("u2", "Set", "2")])
    inner["inputPorts"] = [{"identifier": "in", "name": "in"}]
    inner["funnels"] = [{"identifier": "loop-a"}, {"identifier": "loop-b"}]
    inner["outputPorts"] = [{"identifier": "dead", "name": "nowhere"}]
    inner["connections"] = [
        _connection("c2", _end("in", "INPUT_PORT", "g-Inner"), _end("u2", "PROCESSOR", "g-Inner")),
        _connection("c3", _end("in", "INPUT_PORT", "g-Inner"), _end("loop-a", "FUNNEL", "g-Inner")),
        _connection("c4", _end("loop-a", "FUNNEL", "g-Inner"), _end("loop-b", "FUNNEL", "g-Inner")),
        _connection("c5", _end("loop-b", "FUNNEL", "g-Inner"), _end("loop-a", "FUNNEL", "g-Inner")),
    ]
    first = _update("u1", "Start", "1")
    first["autoTerminatedRelationships"] = []
    top = _group(
        "top",
        None,
        [first],
        groups=[inner],
        connections=[
            _connection("c1", _end("u1", "PROCESSOR", "g-top"), _end("in", "INPUT_PORT", "g-Inner"), ["success"])
        ],
    )
    flow = import_nifi_flow(json.dumps({"flowContents": top})).flow
    assert [(c["source"], c["relationships"], c["destination"]) for c in flow["connections"]] == [
        ("Start", ["success"], "Inner/Set")
    ]
    # a port that leads nowhere is a problem once something flows into it
    top["connections"].append(
        _connection("c6", _end("u1", "PROCESSOR", "g-top"), _end("dead", "OUTPUT_PORT", "g-Inner"), ["success"])
    )
    with pytest.raises(NiFiFlowError) as raised:
        import_nifi_flow(json.dumps({"flowContents": top}))
    (problem,) = raised.value.problems
    assert problem.path == "flowContents.processGroups[0].outputPorts[0]" and "connected to nothing" in problem.message


def test_what_custody_refuses_at_load_is_a_problem_at_the_nifi_processor():
    document = json.loads(nifi_document("every_processor.json"))
    put = next(p for p in document["flowContents"]["processors"] if p["name"] == "Put")
    put["properties"]["Directory"] = "${region}/out"  # a path an attribute chooses: Custody wants allowed_root
    with pytest.raises(NiFiFlowError) as raised:
        import_nifi_flow(json.dumps(document))
    (problem,) = raised.value.problems
    assert problem.path == "flowContents.processors[22]"
    assert "processor 'Put': property 'allowed_root'" in problem.message


@pytest.mark.parametrize(
    ("directory", "root"),
    [
        ("/data/${region}", "/data"),
        ("/data/out/${now():format('yyyy/MM')}/x", "/data/out"),
        ("/data/day-${day}", "/data"),
    ],
)
def test_a_put_file_directory_with_a_fixed_start_is_kept_under_it(directory, root):
    document = json.loads(nifi_document("every_processor.json"))
    put = next(p for p in document["flowContents"]["processors"] if p["name"] == "Put")
    put["properties"]["Directory"] = directory
    imported = import_nifi_flow(json.dumps(document))
    (flow_put,) = [p for p in imported.flow["processors"] if p["id"] == "Put"]
    assert flow_put["properties"]["allowed_root"] == root
    assert any(line.startswith(f"processor 'Put': allowed_root {root!r}") for line in imported.report)


@pytest.mark.parametrize("directory", ["${dir}", "/${dir}/out", "/data/out"])
def test_no_root_is_set_where_the_directory_has_no_fixed_start_or_no_expression(directory):
    from flow.nifi_flow.confinement import fixed_directory

    assert fixed_directory(directory) is None
