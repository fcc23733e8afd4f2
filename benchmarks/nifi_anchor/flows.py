"""The three flows of `custody bench flow` as NiFi 2.3.0's REST documents, and the
steady rate read from NiFi's status samples.

engine: GenerateFlowFile -> UpdateAttribute -> RouteOnAttribute -> MergeContent
(1,000 per bundle, max bin age 1 s) -> PutFile; small: the same without MergeContent;
1mb: small with 1 MB content and GenerateFlowFile batches of one (as Custody's flow).
UpdateAttribute sets stage=updated and size.class=small; RouteOnAttribute routes
`${stage:equals('updated')}` to matched ("Route to 'match' if any matches"); both of
its relationships go on, as in Custody's flow. Connections keep NiFi's default back
pressure (nifi.properties: 10,000 FlowFiles, 1 GB); PutFile's failure loops back.

File names: in the engine and small flows every file PutFile writes has a name of its
own, on both sides (NiFi names a new FlowFile after its uuid, MergeContent a bundle
after the clock; Custody's PutFile names a file after its FlowFile's uuid), and what a
turn wrote stays until the run ends: neither side deletes a file while it is measured.
The 1 MB flow would fill the disk that way (several GB a turn), so there
GenerateFlowFile sets `filename` to `${random():mod(1000)}` (a dynamic property: once
per batch in NiFi, which is one FlowFile here) and PutFile replaces an existing file
("Conflict Resolution Strategy" replace), on both sides: the directory never holds
more than 1,000 files. Replacing costs each side's PutFile an unlink per file, and the
file system the freeing of what it held: the name scheme changes both sides' rates
(Custody's small flow with two workers, alternated here: 5,073 and 3,813 FlowFiles/s
replacing among 1,000 names, 12,709 and 6,214 with new names), so both sides use the
same one.

Scheduling: by default UpdateAttribute, RouteOnAttribute and PutFile run for 25 ms
per task (NiFi's "Run Duration", batching their sessions), which favours NiFi;
`default_scheduling` leaves NiFi's out-of-the-box run duration (0 ms). Either way
GenerateFlowFile runs continuously ("0 sec"): its out-of-the-box schedule, one batch
a minute, would measure the timer, not NiFi.

The figure of a flow is what PutFile took in over the window: FlowFiles for small;
for engine, the original FlowFiles its bundles hold (bytes in / 100: Binary
Concatenation adds no header, footer or demarcator); for 1mb, megabytes (2^20 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

STANDARD = "org.apache.nifi.processors.standard"
KINDS = ("engine", "small", "1mb")
SMALL_CONTENT = 100
LARGE_CONTENT = 1 << 20
ATTRIBUTE_RUN_DURATION_MS = 25
FILE_NAMES = 1000  # the names the 1 MB flow's files take in turn (`replaced_names`)


@dataclass(frozen=True)
class FlowShape:
    kind: str
    content_bytes: int
    batch: int
    merge: int


def shape(kind: str) -> FlowShape:
    if kind == "engine":
        return FlowShape(kind, SMALL_CONTENT, 1000, 1000)
    if kind == "small":
        return FlowShape(kind, SMALL_CONTENT, 1000, 0)
    if kind == "1mb":
        return FlowShape(kind, LARGE_CONTENT, 1, 0)
    raise ValueError(f"unknown flow {kind!r}: one of {', '.join(KINDS)}")


def replaced_names(kind: str) -> int:
    """The names `kind`'s PutFile writes over in turn: 0 (a new file for every FlowFile)
    but for the 1 MB flow, whose files would fill the disk."""
    shape(kind)
    return FILE_NAMES if kind == "1mb" else 0


def processor_component(
    name: str, kind: str, properties: dict, auto_terminate=(), run_duration_ms: int = 0, tasks: int = 1
) -> dict:
    """The `component` of NiFi's ProcessorEntity: timer-driven, run as often as it can,
    `tasks` concurrent tasks, `run_duration_ms` of batching."""
    return {
        "name": name,
        "type": kind,
        "config": {
            "properties": properties,
            "autoTerminatedRelationships": list(auto_terminate),
            "schedulingStrategy": "TIMER_DRIVEN",
            "schedulingPeriod": "0 sec",
            "runDurationMillis": run_duration_ms,
            "concurrentlySchedulableTaskCount": tasks,
        },
    }


def processor_documents(kind: str, out: str, default_scheduling: bool = False) -> dict[str, dict]:
    """Key -> the `component` of NiFi's ProcessorEntity for each processor of `kind`."""
    flow = shape(kind)
    tuned = 0 if default_scheduling else ATTRIBUTE_RUN_DURATION_MS
    size = "1 MB" if flow.content_bytes == LARGE_CONTENT else f"{flow.content_bytes} B"
    documents = {
        "generate": processor_component(
            "GenerateFlowFile",
            f"{STANDARD}.GenerateFlowFile",
            {
                "File Size": size,
                "Batch Size": str(flow.batch),
                **({"filename": f"${{random():mod({names})}}"} if (names := replaced_names(kind)) else {}),
            },
        ),
        "update": processor_component(
            "UpdateAttribute",
            "org.apache.nifi.processors.attributes.UpdateAttribute",
            {"stage": "updated", "size.class": "small"},
            run_duration_ms=tuned,
        ),
        "route": processor_component(
            "RouteOnAttribute",
            f"{STANDARD}.RouteOnAttribute",
            {"Routing Strategy": "Route to 'match' if any matches", "ok": "${stage:equals('updated')}"},
            run_duration_ms=tuned,
        ),
        "put": processor_component(
            "PutFile",
            f"{STANDARD}.PutFile",
            {"Directory": out, "Conflict Resolution Strategy": "replace"},
            auto_terminate=("success",),
            run_duration_ms=tuned,
        ),
    }
    if flow.merge:
        documents["merge"] = processor_component(
            "MergeContent",
            f"{STANDARD}.MergeContent",
            {
                "Minimum Number of Entries": str(flow.merge),
                "Maximum Number of Entries": str(flow.merge),
                "Max Bin Age": "1 s",
            },
            auto_terminate=("original", "failure"),
        )
    return documents


def connection_plan(kind: str) -> list[tuple[str, str, list[str]]]:
    """(source key, destination key, relationships) of each connection of `kind`."""
    plan = [("generate", "update", ["success"]), ("update", "route", ["success"])]
    if shape(kind).merge:
        plan += [("route", "merge", ["matched", "unmatched"]), ("merge", "put", ["merged"])]
    else:
        plan += [("route", "put", ["matched", "unmatched"])]
    return plan + [("put", "put", ["failure"])]


def connection_document(group: str, source: str, destination: str, relationships: list[str]) -> dict:
    """The `component` of NiFi's ConnectionEntity between two processors of `group`;
    back pressure is left out, so NiFi applies its defaults."""
    return {
        "source": {"id": source, "groupId": group, "type": "PROCESSOR"},
        "destination": {"id": destination, "groupId": group, "type": "PROCESSOR"},
        "selectedRelationships": relationships,
    }


@dataclass(frozen=True)
class StatusSample:
    """PutFile's counters at `seconds` (a monotonic clock): NiFi's flowFilesIn and bytesIn."""

    seconds: float
    flowfiles_in: int
    bytes_in: int


def measured_units(kind: str, sample: StatusSample) -> float:
    """What a flow's figure counts, from PutFile's counters: FlowFiles (small), the
    original FlowFiles in bundles (engine), megabytes (1mb)."""
    if kind == "small":
        return float(sample.flowfiles_in)
    if kind == "engine":
        return sample.bytes_in / SMALL_CONTENT
    if kind == "1mb":
        return sample.bytes_in / LARGE_CONTENT
    raise ValueError(f"unknown flow {kind!r}")


def steady_rate(kind: str, samples: list[StatusSample], start: float, end: float) -> float:
    """Units per second between the first sample at or after `start` (the warm-up's
    end) and the last at or before `end`: FlowFiles/s, or MB/s for 1mb. NiFi's
    counters cover its last five minutes, so warm-up and window must fit in them."""
    inside = [sample for sample in samples if start <= sample.seconds <= end]
    if len(inside) < 2:
        raise ValueError(f"need two status samples between {start:.1f} s and {end:.1f} s, got {len(inside)}")
    first, last = inside[0], inside[-1]
    if last.seconds - first.seconds <= 0:
        raise ValueError("the status samples span no time")
    return (measured_units(kind, last) - measured_units(kind, first)) / (last.seconds - first.seconds)
