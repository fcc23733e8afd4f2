"""NiFi Python processors: a NiFi-style FlowFileTransform run by Custody against the same work as a native processor.

The work is trivial on purpose, so that what is measured is what the NiFi API costs
around it: add an attribute and upper-case the content (64 bytes) of each FlowFile.
`TagUpper` is a NiFi 2 FlowFileTransform, written as NiFi's Python Developer's Guide
shows and loaded by `flow.python_extensions` from a directory the benchmark writes;
`NativeTagUpper` is a Custody `Processor` doing the same with the session. Each runs
alone in a stateless flow (input port -> processor -> output port, `original`
auto-terminated), in-memory content, the same batch of `--flowfiles` FlowFiles a
round (5,000; 2,000 with `--quick`), the two alternating for `--rounds` rounds (15;
5 quick) after a warm-up of each. Each round is timed by the process's CPU time
(`flowfiles_per_cpu_sec_*`, the medians of the rounds) and by the wall clock
(`flowfiles_per_sec_*`); `ratio_nifi_api_vs_native` is the NiFi API's CPU figure
over the native one (CPU time, because a machine shared with other work disturbs it
least; `ratio_nifi_api_vs_native_wall` is the same by the wall clock). NiFi's own
Python processors run in a separate Python process behind a Py4J socket; these run
in the node's own process.

`--profile` adds the top functions of a profiled NiFi-API round.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

NIFI_PROCESSOR = """
from nifiapi.flowfiletransform import FlowFileTransform, FlowFileTransformResult


class TagUpper(FlowFileTransform):
    class Java:
        implements = ["org.apache.nifi.python.processor.FlowFileTransform"]

    class ProcessorDetails:
        version = "1.0"
        description = "Adds an attribute and upper-cases the content."

    def __init__(self, **kwargs):
        pass

    def transform(self, context, flowfile):
        return FlowFileTransformResult(
            relationship="success", attributes={"tagged": "yes"}, contents=flowfile.getContentsAsBytes().upper()
        )
"""


def add_arguments(parser) -> None:
    parser.add_argument("--flowfiles", type=int, help="FlowFiles a round (5,000; 2,000 with --quick)")
    parser.add_argument("--rounds", type=int, help="measured rounds of each (15; 5 with --quick)")
    parser.add_argument("--profile", action="store_true", help="add the top functions of a profiled NiFi-API round")


def _native_class():
    from flow.processor import Processor

    class NativeTagUpper(Processor):
        type_name = "NativeTagUpper"
        description = "Adds an attribute and upper-cases the content (the benchmark's native twin of TagUpper)."
        relationships = ("success", "failure", "original")

        def on_trigger(self, context, session) -> None:
            for flowfile in session.get_batch(100):
                contents = session.read_bytes(flowfile).upper()
                flowfile = session.put_all_attributes(flowfile, {"tagged": "yes"})
                session.transfer(session.write_bytes(flowfile, contents), "success")

    return NativeTagUpper


def _flow(registry, processor_type: str):
    from flow.loading import parse_flow
    from flow.stateless import StatelessFlow

    definition = {
        "processors": [{"id": "p", "type": processor_type, "auto_terminate": ["original", "failure"]}],
        "ports": [{"id": "in", "type": "input"}, {"id": "out", "type": "output"}],
        "connections": [
            {"source": "in", "destination": "p", "back_pressure": {"object_count": 1_000_000}},
            {
                "source": "p",
                "relationships": ["success"],
                "destination": "out",
                "back_pressure": {"object_count": 1_000_000},
            },
        ],
    }
    return StatelessFlow(parse_flow(definition, registry=registry))


def _round(flow, inputs) -> tuple[float, float]:
    """FlowFiles per second through `flow` for `inputs`, checked: by the wall clock, and
    by the CPU time the process used (the figure a machine shared with other work
    disturbs least)."""
    started, cpu = time.perf_counter(), time.process_time()
    result = flow.trigger(inputs)
    elapsed, cpu_used = time.perf_counter() - started, time.process_time() - cpu
    if not result.success or len(result.outputs) != len(inputs):
        raise RuntimeError(f"a round lost FlowFiles: {result.failure or len(result.outputs)}")
    _, attributes, data = result.outputs[0]
    if attributes.get("tagged") != "yes" or data != data.upper():
        raise RuntimeError("the processor did not do its work")
    result.acknowledge()
    return len(inputs) / elapsed, len(inputs) / max(cpu_used, 1e-9)


def _profile(flow, inputs, top: int = 12) -> list[dict]:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    _round(flow, inputs)
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:top]  # type: ignore[attr-defined]
    return [
        {
            "function": f"{os.path.basename(key[0])}:{key[1]}:{key[2]}",
            "own_s": round(value[2], 4),
            "us_per_flowfile": round(value[2] / len(inputs) * 1e6, 2),
        }
        for key, value in rows
    ]


def run(args) -> dict:
    from flow.python_extensions import PythonExtensions, extension_registry

    count = args.flowfiles or (2_000 if args.quick else 5_000)
    rounds = args.rounds or (5 if args.quick else 15)
    with tempfile.TemporaryDirectory(prefix="custody-bench-python-") as root:
        extensions = os.path.join(root, "extensions")
        os.makedirs(extensions)
        with open(os.path.join(extensions, "tag_upper.py"), "w") as handle:
            handle.write(NIFI_PROCESSOR)
        registry = extension_registry(PythonExtensions((extensions,), cache_directory=root))
        registry.register(_native_class())
        flows = {"nifi_api": _flow(registry, "TagUpper"), "native": _flow(registry, "NativeTagUpper")}
        inputs = [
            ({"filename": f"f{i}"}, b"%06d some small content of sixty-four bytes, lower case......" % i)
            for i in range(count)
        ]
        try:
            for flow in flows.values():
                _round(flow, inputs[: max(1, count // 5)])  # warm-up
            wall: dict[str, list[float]] = {name: [] for name in flows}
            cpu: dict[str, list[float]] = {name: [] for name in flows}
            for _ in range(rounds):
                for name, flow in flows.items():
                    by_wall, by_cpu = _round(flow, inputs)
                    wall[name].append(by_wall)
                    cpu[name].append(by_cpu)
            profile = _profile(flows["nifi_api"], inputs) if args.profile else None
        finally:
            for flow in flows.values():
                flow.close()
    nifi, native = statistics.median(cpu["nifi_api"]), statistics.median(cpu["native"])
    nifi_wall, native_wall = statistics.median(wall["nifi_api"]), statistics.median(wall["native"])
    result: dict = {
        "flowfiles_per_round": count,
        "rounds": rounds,
        "content_bytes": len(inputs[0][1]),
        "flowfiles_per_cpu_sec_nifi_api": round(nifi, 1),
        "flowfiles_per_cpu_sec_native": round(native, 1),
        "ratio_nifi_api_vs_native": round(nifi / native, 3),
        "flowfiles_per_sec_nifi_api": round(nifi_wall, 1),
        "flowfiles_per_sec_native": round(native_wall, 1),
        "ratio_nifi_api_vs_native_wall": round(nifi_wall / native_wall, 3),
        "rounds_flowfiles_per_cpu_sec_nifi_api": [round(x, 1) for x in cpu["nifi_api"]],
        "rounds_flowfiles_per_cpu_sec_native": [round(x, 1) for x in cpu["native"]],
    }
    if profile is not None:
        result["profile_nifi_api"] = profile
    return result
