"""A record flow fed over HTTP, run as a user runs it (`custody run`), SIGKILLed while
clients post: ListenHTTP (JSON lines, each request with an idempotency key) ->
ValidateRecord -> QueryRecord -> ConvertRecord (Parquet) -> PutFile.

Each request is a batch of records with unique keys; some batches hold records whose
`amount` is text where the schema wants a number (invalid), and some amounts are
negative (QueryRecord sends them apart). A client retries every request that was not
answered 200, with its key, across the node's deaths. The checker counts lost,
duplicated and unexpected keys in each of the three outputs: the valid records kept
(Parquet), the valid negative ones (Parquet), the invalid ones (JSON lines).
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cluster.drills.checker import check_delivery
from cluster.services.process import wait_until

from .custody_run import start_custody_run, stop, wait_running

KILLS = int(os.environ.get("CUSTODY_RECORDS_KILLS", "30" if os.environ.get("CUSTODY_LONG") == "1" else "4"))
# Each life acknowledges at most 6 batches and leaves one in flight: enough batches that
# every life (here, or in the cluster's test with its own kills) has one to leave.
BATCHES, PER_BATCH = max(40, 7 * KILLS + 1), 300
SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "payment",
        "fields": [
            {"name": "key", "type": "string"},
            {"name": "amount", "type": "long"},
            {"name": "city", "type": ["null", "string"]},
        ],
    }
)
FLOW = f"""
name: http-records
services:
  - {{id: json, type: JsonTreeReader}}
  - {{id: json-lines, type: JsonRecordSetWriter, properties: {{output_grouping: one-line-per-object}}}}
  - {{id: parquet, type: ParquetRecordSetWriter}}
processors:
  - id: listen
    type: ListenHTTP
    properties: {{port: 0}}
  - id: validate
    type: ValidateRecord
    properties:
      record_reader: json
      record_writer: json-lines
      schema_access_strategy: schema-text-property
      schema_text: '{SCHEMA}'
  - id: query
    type: QueryRecord
    properties:
      record_reader: json
      record_writer: json-lines
      keep: SELECT * FROM FLOWFILE WHERE amount >= 0
      negative: SELECT key, amount FROM FLOWFILE WHERE amount < 0
    auto_terminate: [original]
  - id: convert-kept
    type: ConvertRecord
    properties: {{record_reader: json, record_writer: parquet}}
  - id: convert-negative
    type: ConvertRecord
    properties: {{record_reader: json, record_writer: parquet}}
  - id: put-kept
    type: PutFile
    properties: {{directory: "#{{data_dir}}/kept", name_suffix: .parquet}}
    auto_terminate: [success]
  - id: put-negative
    type: PutFile
    properties: {{directory: "#{{data_dir}}/negative", name_suffix: .parquet}}
    auto_terminate: [success]
  - id: put-invalid
    type: PutFile
    properties: {{directory: "#{{data_dir}}/invalid"}}
    auto_terminate: [success]
  - id: put-failed
    type: PutFile
    properties: {{directory: "#{{data_dir}}/failed"}}
    auto_terminate: [success]
connections:
  - {{source: listen, destination: validate}}
  - {{source: validate, relationships: [valid], destination: query}}
  - {{source: validate, relationships: [invalid], destination: put-invalid}}
  - {{source: query, relationships: [keep], destination: convert-kept}}
  - {{source: query, relationships: [negative], destination: convert-negative}}
  - {{source: convert-kept, relationships: [success], destination: put-kept}}
  - {{source: convert-negative, relationships: [success], destination: put-negative}}
  - {{source: validate, relationships: [failure], destination: put-failed}}
  - {{source: query, relationships: [failure], destination: put-failed}}
  - {{source: convert-kept, relationships: [failure], destination: put-failed}}
  - {{source: convert-negative, relationships: [failure], destination: put-failed}}
  - {{source: put-kept, relationships: [failure], destination: put-kept}}
  - {{source: put-negative, relationships: [failure], destination: put-negative}}
  - {{source: put-invalid, relationships: [failure], destination: put-invalid}}
  - {{source: put-failed, relationships: [failure], destination: put-failed}}
"""
LISTENING = re.compile(r"listen listening on http://127\.0\.0\.1:(\d+)/contentListener")


def _batches(rng: random.Random) -> tuple[list[bytes], dict[str, set[str]]]:
    bodies, expected = [], {"kept": set(), "negative": set(), "invalid": set()}
    for number in range(BATCHES):
        rows = []
        for index in range(PER_BATCH):
            key = f"b{number}-{index}"
            amount: object = rng.randrange(-1000, 10_000)
            if number % 9 == 4 and index % 100 == 7:
                amount, where = "lots", "invalid"
            else:
                where = "kept" if amount >= 0 else "negative"  # type: ignore[operator]
            expected[where].add(key)
            rows.append(json.dumps({"key": key, "amount": amount, "city": rng.choice(["Oslo", "Zürich", None])}))
        bodies.append(("\n".join(rows) + "\n").encode())
    return bodies, expected


def _start(flow: Path, data_dir: Path, log: Path) -> tuple[subprocess.Popen, int]:
    """The node running, and the port its ListenHTTP took."""
    offset = log.stat().st_size if log.exists() else 0
    process = start_custody_run(flow, data_dir, log, "--threads", "2")
    assert wait_running(process, time.monotonic() + 60), f"the node did not start:\n{log.read_text()[-3000:]}"
    found = LISTENING.findall(log.read_bytes()[offset:].decode(errors="replace"))
    assert found, f"no port in the log:\n{log.read_text()[-3000:]}"
    return process, int(found[-1])


def _post(port: int, body: bytes, key: str) -> bool:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/contentListener", data=body, method="POST", headers={"Idempotency-Key": key}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def _send_unanswered(port: int, body: bytes, key: str, whole: bool) -> None:
    """Send a request (all of its body, or half) and leave without reading an answer."""
    head = (
        f"POST /contentListener HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: {key}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(head + (body if whole else body[: len(body) // 2]))


def _keys(directory: Path) -> list[str]:
    keys: list[str] = []
    if directory.is_dir():
        for path in sorted(directory.iterdir()):
            if path.name.startswith("."):
                continue
            if path.suffix == ".parquet":
                keys += pq.read_table(path, columns=["key"]).column("key").to_pylist()
            else:
                keys += [json.loads(line)["key"] for line in path.read_bytes().splitlines() if line.strip()]
    return keys


@pytest.mark.slow
@pytest.mark.timeout(300 + 30 * KILLS)
def test_records_over_http_survive_sigkill_with_every_record_exactly_once(tmp_path):
    seed = int(os.environ.get("CUSTODY_DRILL_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    bodies, expected = _batches(rng)
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW)
    data_dir, log = tmp_path / "node", tmp_path / "node.log"
    acknowledged: set[int] = set()
    for life in range(KILLS):
        process, port = _start(flow, data_dir, log)
        try:
            waiting = [number for number in range(BATCHES) if number not in acknowledged]
            for number in waiting[: rng.randint(2, 6)]:
                if _post(port, bodies[number], f"batch-{number}"):
                    acknowledged.add(number)
            # Then a request in flight when the node dies: half its body sent, or all of
            # it with no answer read (its commit may or may not be durable: the retry's
            # idempotency key tells).
            number = next(number for number in range(BATCHES) if number not in acknowledged)
            _send_unanswered(port, bodies[number], f"batch-{number}", whole=life % 2 == 1)
        finally:
            stop(process, signal.SIGKILL)
    process, port = _start(flow, data_dir, log)
    try:
        for number, body in enumerate(bodies):
            if number not in acknowledged:
                assert _post(port, body, f"batch-{number}"), f"seed {seed}: batch {number} refused after the kills"
        wanted = sum(len(keys) for keys in expected.values())
        wait_until(
            lambda: sum(len(_keys(data_dir / where)) for where in expected) >= wanted,
            120,
            f"seed {seed}: every record in one of the outputs",
        )
    finally:
        stop(process, signal.SIGTERM)
    for where, keys in expected.items():
        delivery = check_delivery(keys, _keys(data_dir / where))
        assert delivery.ok, f"seed {seed}, {where}: {delivery.summary()}; log:\n{log.read_text()[-3000:]}"
    failures = [line for line in log.read_text().splitlines() if "goes to failure" in line]
    assert not _keys(data_dir / "failed") and not failures, f"seed {seed}: records went to failure: {failures}"
    print(
        f"records over HTTP: {KILLS} kills, each with a request in flight; "
        + ", ".join(f"{where} {len(keys)}" for where, keys in expected.items())
    )
