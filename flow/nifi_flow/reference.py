"""The reference page of the NiFi mapping (docs/reference/nifi-import.md), rendered from
the tables themselves, so that the page says what the import does; `cluster.reference`
writes it with the other reference pages (`python -m cluster.reference docs/reference`)."""

from __future__ import annotations

from .importer import PRIORITIZERS
from .mapping_model import ANY_VALUE, ComponentMapping, PropertyMapping
from .processor_tables import PROCESSOR_MAPPINGS
from .service_tables import SERVICE_MAPPINGS

_INTRODUCTION = """\
# NiFi flow definitions: import and export

```sh
custody flow import FLOW.json [-o flow.yaml] [--report]   # NiFi -> Custody
custody flow export FLOW.yaml --nifi [-o flow.json]       # Custody -> NiFi
```

`custody flow import` reads what NiFi's "Download flow definition" (and its registry
clients) write: `flowContents` (the process group, recursively), `parameterContexts`,
`externalControllerServices`. It writes a Custody flow (YAML) that runs as the NiFi
flow does, or, when any part of the document cannot run in Custody, lists every
problem at once on stderr, each with its JSON path in the document
(`flowContents.processGroups[0].processors[2].properties."Keep Source File"`), exits 2
and writes nothing. `--report` prints what each NiFi component and property became.
`custody flow export --nifi` writes the other way, for the processors both have;
importing the export gives back an equal Custody flow.

What becomes what:

- **Processors** by their class (`org.apache.nifi.processors.standard.GetFile` is
  GetFile), with NiFi's property names and values mapped to Custody's as the tables
  below say. A flow definition keys `properties` by the property descriptors' names,
  which NiFi 2 renamed for many properties (its migrateProperties reads the old ones):
  the tables give NiFi 1.x's name, then NiFi 2's where it differs, and the import reads
  either. A property NiFi ignores under its dependsOn (a Message Demarcator with
  another Processing Strategy) is ignored too. A property at NiFi's default is left to
  Custody's default when the two mean the same; a NiFi property Custody has no
  equivalent for, set to another value than those listed, is a problem. Dynamic
  properties are carried as they are.
- **NiFi 2 Python processors**, which a flow definition names by their class alone
  (`TagAndUpper`, bundle `python-extensions`): with `--python-extensions DIR` (the
  directory NiFi loads them from; repeatable, as for `custody run`), the same class,
  its properties by their NiFi names, `Record Reader` and `Record Writer` naming the
  flow's record services. Without it, each is a problem saying so. The export writes
  them back as NiFi names them, their bundle's version their `ProcessorDetails.version`.
- **Controller services**: the record readers and writers Custody has (below). NiFi 2's
  Kafka Connection Service (Kafka3ConnectionService) is no Custody service: its
  settings become the properties of each ConsumeKafka and PublishKafka that names it,
  and a setting Custody lacks is a problem at the service's own property. Any other
  service type, or a service outside the downloaded group, is a problem.
- **Nested process groups** are flattened: a connection into a group's input or output
  port, or into a funnel, continues along every connection that leaves it, until a
  processor. Processors keep their names, prefixed by their groups' (`Group/Put`); the
  queue settings of a flattened connection are those of its last hop (the queue in
  front of the processor that takes the FlowFiles). The downloaded group's own ports
  are the Custody flow's ports (a port with `portFunction: FAILURE` a failure port).
- **Parameter contexts** become the flow's `parameters` (referenced as `#{name}` in
  both). A group sees its context and the ones it inherits, its own first; two
  contexts giving one name two values is a problem. A sensitive parameter (or one
  without a value) is never written: the import lists it, to be given at run time
  with `custody run --param name=value`.
- **Expression Language** is carried as it is: Custody's expression language is NiFi's
  (docs/concepts/expression-language.md lists its functions, dates with NiFi 2's
  DateTimeFormatter patterns and `$1` group references included). Each function an
  expression calls that Custody lacks is a problem. NiFi's expression in a property
  Custody takes as plain text is a problem too.
- **Paths that attributes steer**: Custody refuses a PutFile whose directory is built
  from attributes, or a FetchFile that deletes or moves what attributes name, unless
  it keeps them under an `allowed_root`. The import sets it where the NiFi flow
  implies one: the fixed start of PutFile's directory (`/data/out` for
  `/data/out/${kind}`), or the directory of the ListFile that alone feeds a FetchFile.
  The report says each; where there is none, the processor is a problem.
- **Scheduling**: `schedulingPeriod` of a TIMER_DRIVEN processor is `run_schedule`
  (EVENT_DRIVEN: run when work waits), a CRON_DRIVEN processor's is `cron` (Quartz's
  expression, as NiFi takes it; `W` and `L` in the day of week are problems),
  `concurrentlySchedulableTaskCount` is
  `concurrent_tasks`, `penaltyDuration` and `yieldDuration` are `penalty_duration` and
  `yield_duration`. `runDurationMillis` is dropped (Custody batches by batch sizes).
  Problems: `executionNode: PRIMARY` (Custody has no primary
  node: every node runs each processor for the shards it owns), a DISABLED processor
  (Custody runs every processor of a flow), `retriedRelationships`.
- **Connections**: `selectedRelationships` (NiFi's names; InvokeHTTP's `No Retry` is
  `no_retry`), `backPressureObjectThreshold` and `backPressureDataSizeThreshold`
  (`back_pressure`), `flowFileExpiration` (`expiration`), `prioritizers`;
  `autoTerminatedRelationships` are `auto_terminate`. A `loadBalanceStrategy` other than
  DO_NOT_LOAD_BALANCE is a problem (a Custody cluster spreads work by shards), as is a
  dangling connection, a remote process group, or a funnel or port that leads nowhere.
- **A nested group with `executionEngine: STATELESS`** becomes an ExecuteStateless
  that runs the group's contents as a flow of its own, written beside the imported flow
  (`flow.yaml` and `flow.<Group>.yaml`). What enters the group's input port is the
  ExecuteStateless's input; what leaves its output port goes to `output`, what leaves a
  failure port (`portFunction: FAILURE`) to `failure`; without a failure port, `failure`
  is connected back to the ExecuteStateless (NiFi retries the input of a stateless
  group that fails). A group with more than one input or output port is a problem
  (ExecuteStateless has one of each), as is a sensitive parameter used inside it
  (ExecuteStateless loads its flow without run-time parameters). The downloaded group
  itself may be STATELESS: the import says so in its report.

Differences that remain: Custody's PutFile names each file after its FlowFile's uuid,
not its `filename` (so `Conflict Resolution Strategy` fail and replace mean the same);
Custody's sources take each file exactly once.

The export writes every component in one process group, bundles of group
`org.apache.nifi` and version 1.28.1 (NiFi resolves the version it has on import; NiFi 2
migrates the 1.x property names as it loads them, and NiFi 2's own properties are left
out), and
name-based identifiers (the same flow exports to the same document). What NiFi has no
equivalent for is a problem: a processor only Custody has (the Spark processors), a
property of Custody's set away from its default (GenerateFlowFile's
`sequence_attribute`, PutFile's `sync`), `max_rollbacks`, a connection's swap settings.

Prioritizers: {prioritizers}.

This page is generated from the tables of `flow/nifi_flow`
(`python -m cluster.reference docs/reference`).
"""


def _value(value: str | None) -> str:
    if value is None:
        return "(unset)"
    if value == "":
        return '`""`'
    return "`" + value.replace("|", "\\|").replace("`", "'") + "`"


def _becomes(mapping: PropertyMapping) -> str:
    if mapping.kind == "connection":
        text = "the settings of the service it names, as " + ", ".join(
            f"{service.nifi_types[0].rpartition('.')[2]} below" for service in mapping.services
        )
    elif mapping.custody is None:
        accepted = [value for value in (mapping.nifi_default, *mapping.accepted) if value is not None]
        if ANY_VALUE in accepted:
            text = "none: any value (it changes nothing Custody does)"
        elif accepted:
            text = "none: only " + ", ".join(_value(value) for value in accepted if value != ANY_VALUE)
        else:
            text = "none: only unset"
    elif mapping.kind == "choice":
        text = f"`{mapping.custody}`: " + ", ".join(
            f"{_value(nifi)} is `{custody}`" for nifi, custody in mapping.choices.items()
        )
    elif mapping.kind == "service":
        text = f"`{mapping.custody}` (the service)"
    else:
        text = f"`{mapping.custody}` ({mapping.kind})"
    if mapping.depends_on is not None:
        name, values = mapping.depends_on
        text += f"; read only with `{name}` " + (" or ".join(_value(v) for v in values) if values else "set")
    if mapping.nifi2_only:
        text += "; NiFi 2's"
    if mapping.note:
        text += f"; {mapping.note}"
    return text.replace("|", "\\|")


def _component(mapping: ComponentMapping, heading: str) -> list[str]:
    title = mapping.custody_type
    if len(mapping.nifi_types) == 1 and mapping.nifi_types[0].rpartition(".")[2] != mapping.custody_type:
        title += f" (from NiFi's {mapping.nifi_types[0].rpartition('.')[2]})"
    elif sum(other.custody_type == mapping.custody_type for other in PROCESSOR_MAPPINGS) > 1:
        title += f" (from `{mapping.artifact}`)"
    lines = [f"{heading} {title}", ""]
    lines.append("NiFi: " + ", ".join(f"`{name}`" for name in mapping.nifi_types) + f" (`{mapping.artifact}`).")
    if mapping.note:
        lines.append(mapping.note[0].upper() + mapping.note[1:] + ".")
    if mapping.relationships:
        lines.append(
            "Relationships: "
            + ", ".join(f"`{nifi}` is `{custody}`" for nifi, custody in mapping.relationships.items())
            + "."
        )
    if mapping.unused_relationships:
        lines.append(
            "Relationships Custody's never routes to (auto-terminated: dropped): "
            + ", ".join(f"`{name}`" for name in mapping.unused_relationships)
            + "."
        )
    lines += ["", "| NiFi property (NiFi 2's name) | NiFi default | Custody |", "| --- | --- | --- |"]
    for property_mapping in mapping.properties:
        nifi, default = _value(property_mapping.nifi), _value(property_mapping.nifi_default)
        if property_mapping.nifi2 is not None and property_mapping.nifi2 != property_mapping.nifi:
            nifi += f" ({_value(property_mapping.nifi2)})"
        lines.append(f"| {nifi} | {default} | {_becomes(property_mapping)} |")
    lines.append("")
    for property_mapping in mapping.properties:
        for service in property_mapping.services:
            lines += _component(service, "####")
    return lines


def render() -> str:
    prioritizers = ", ".join(f"`{name.rpartition('.')[2]}` is `{short}`" for name, short in PRIORITIZERS.items())
    lines = [_INTRODUCTION.replace("{prioritizers}", prioritizers), "## Processors", ""]
    for mapping in sorted(PROCESSOR_MAPPINGS, key=lambda m: m.custody_type):
        lines += _component(mapping, "###")
    lines += ["## Controller services", ""]
    for mapping in sorted(SERVICE_MAPPINGS, key=lambda m: m.custody_type):
        lines += _component(mapping, "###")
    return "\n".join(lines).rstrip("\n") + "\n"
