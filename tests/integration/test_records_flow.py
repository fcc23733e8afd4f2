"""Records through a standalone node, run as a user runs it (`custody run`), killed
with SIGKILL at random moments: CSV files become Parquet files, and Avro container
files, through GetFile -> ConvertRecord -> PutFile, and every record comes out exactly
once.

The input: CSV files with a unique key per record (one of them whose last rows widen
a column from integers to decimals, so that its schema is inferred again), and one
malformed file, which must come out of `failure` as it went in. After the kills a
last run drains the flow; the checker counts lost, duplicated and unexpected keys
over every row of every file written, read back with pyarrow or fastavro.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cluster.drills.checker import check_delivery
from cluster.services.process import wait_until

from .custody_run import start_custody_run, stop, wait_running

FILES, ROWS = 40, 2500
KILLS = int(os.environ.get("CUSTODY_RECORDS_KILLS", "40" if os.environ.get("CUSTODY_LONG") == "1" else "5"))
MALFORMED = b"key,amount,city\nk-x-1,1,Oslo\nk-x-2,2\n"

FLOW = """
name: csv-to-records
services:
  - {id: csv, type: CSVReader}
  - {id: out, type: WRITER}
processors:
  - id: get
    type: GetFile
    properties: {input_directory: "#{data_dir}/in", batch_size: 3}
  - id: convert
    type: ConvertRecord
    properties: {record_reader: csv, record_writer: out}
    scheduling: {concurrent_tasks: 2}
  - id: put
    type: PutFile
    properties: {directory: "#{data_dir}/out", name_suffix: SUFFIX}
    auto_terminate: [success]
  - id: put-failed
    type: PutFile
    properties: {directory: "#{data_dir}/failed"}
    auto_terminate: [success]
connections:
  - {source: get, destination: convert}
  - {source: convert, relationships: [success], destination: put}
  - {source: convert, relationships: [failure], destination: put-failed}
  - {source: put, relationships: [failure], destination: put}
  - {source: put-failed, relationships: [failure], destination: put-failed}
"""


def _write_inputs(directory: Path, rng: random.Random) -> list[str]:
    directory.mkdir(parents=True)
    keys = []
    for number in range(FILES):
        lines = ["key,amount,city"]
        for row in range(ROWS):
            key = f"k-{number}-{row}"
            keys.append(key)
            amount = f"{rng.randrange(10_000)}.5" if number == 7 and row > ROWS - 3 else str(rng.randrange(10_000))
            lines.append(f'{key},{amount},"{rng.choice(["Oslo", "Zürich", "São Paulo, SP", "東京"])}"')
        data = ("\n".join(lines) + "\n").encode()
        (directory / f".{number}.csv").write_bytes(data)
        (directory / f".{number}.csv").rename(directory / f"{number:03d}.csv")
    (directory / "bad.csv").write_bytes(MALFORMED)
    return keys


def _parquet_rows(path: Path) -> tuple[list[str], bool]:
    """The keys of a Parquet file, and whether its amounts are decimals."""
    table = pq.read_table(path)
    return table.column("key").to_pylist(), table.schema.field("amount").type == "double"


def _avro_rows(path: Path) -> tuple[list[str], bool]:
    import fastavro

    with open(path, "rb") as handle:
        reader = fastavro.reader(handle)
        amount = next(f for f in reader.writer_schema["fields"] if f["name"] == "amount")
        return [record["key"] for record in reader], "double" in json.dumps(amount["type"])


FORMATS = {"parquet": ("ParquetRecordSetWriter", _parquet_rows), "avro": ("AvroRecordSetWriter", _avro_rows)}


def _written(out: Path, rows) -> list[tuple[list[str], bool]]:
    if not out.is_dir():
        return []
    return [rows(out / name) for name in sorted(os.listdir(out)) if not name.startswith(".")]


def _keys_written(out: Path, rows) -> list[str]:
    return [key for keys, _ in _written(out, rows) for key in keys]


def _waiting(data_dir: Path) -> int:
    return len([name for name in os.listdir(data_dir / "in") if not name.startswith(".")])


@pytest.mark.slow
@pytest.mark.timeout(240 + 20 * KILLS)
@pytest.mark.parametrize("form", sorted(FORMATS))
def test_csv_to_records_survives_sigkill_with_every_record_exactly_once(tmp_path, form):
    writer, rows = FORMATS[form]
    seed = int(os.environ.get("CUSTODY_DRILL_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    data_dir = tmp_path / "node"
    keys = _write_inputs(data_dir / "in", rng)
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW.replace("WRITER", writer).replace("SUFFIX", f".{form}"))
    log = tmp_path / "node.log"
    busy_kills = 0
    for attempt in range(KILLS):
        process = start_custody_run(flow, data_dir, log, "--threads", "2")
        try:
            assert wait_running(process, time.monotonic() + 60), f"seed {seed}: no start; {log.read_text()[-3000:]}"
            # A kill at a random moment, or once this life's share of the files was taken.
            moment = time.monotonic() + rng.uniform(0.0, 1.5)
            share = FILES - FILES * (attempt + 1) // (KILLS + 1)
            while time.monotonic() < moment and _waiting(data_dir) > share:
                time.sleep(0.01)  # the fault's timing: the moment of the kill
            if _waiting(data_dir) or len(_keys_written(data_dir / "out", rows)) < len(keys):
                busy_kills += 1
        finally:
            stop(process, signal.SIGKILL)

    process = start_custody_run(flow, data_dir, log, "--threads", "2")
    try:
        assert wait_running(process, time.monotonic() + 60), f"seed {seed}: no start; {log.read_text()[-3000:]}"

        def drained() -> bool:
            failed = list((data_dir / "failed").glob("[!.]*")) if (data_dir / "failed").is_dir() else []
            return not _waiting(data_dir) and bool(failed) and len(_keys_written(data_dir / "out", rows)) >= len(keys)

        wait_until(drained, 120, f"seed {seed}: every file taken and every record written")
    finally:
        stop(process, signal.SIGTERM)

    delivery = check_delivery(keys, _keys_written(data_dir / "out", rows))
    assert delivery.ok, f"seed {seed}: {delivery.summary()}; log:\n{log.read_text()[-3000:]}"
    failed = [path.read_bytes() for path in (data_dir / "failed").iterdir() if not path.name.startswith(".")]
    assert failed == [MALFORMED], f"seed {seed}: failed holds {failed!r}"
    widened = [keys for keys, decimals in _written(data_dir / "out", rows) if decimals]
    assert len(widened) == 1 and len(widened[0]) == ROWS, f"seed {seed}: {len(widened)} files widened"
    assert busy_kills >= KILLS // 2, f"seed {seed}: only {busy_kills} of {KILLS} kills hit work in flight"
    print(f"records drill: {KILLS} kills ({busy_kills} with work in flight); {delivery.summary()}")
