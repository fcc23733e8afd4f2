"""The record-flow tutorial (docs/records-tutorial.md), done as a reader does it: its
flow run with `custody run`, its CSV dropped in, and the records read back from the
Parquet files equal to what the page shows; the file that cannot be read comes out of
`failed` as it went in, and the log line the page quotes is there."""

from __future__ import annotations

import ast
import re
import signal
import time

import pyarrow.parquet as pq

from cluster.services.process import wait_until

from .custody_run import ROOT, start_custody_run, stop, wait_running

PAGE = ROOT / "docs" / "records-tutorial.md"
FLOW = ROOT / "examples" / "records-tutorial.yaml"


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def _rows(directory) -> list[dict]:
    return [row for path in sorted(directory.glob("*.parquet")) for row in pq.read_table(path).to_pylist()]


def _order(row: dict) -> int:
    return row["order_id"]  # the query gives no order: compare by id


def test_the_tutorial_gives_what_its_page_shows(tmp_path):
    page = PAGE.read_text(encoding="utf-8")
    orders = re.search(r"<<'CSV'\n(.*?)CSV\n", page, re.S).group(1)
    bad = re.search(r"printf '(.*?)' >", page).group(1).encode().decode("unicode_escape").encode()
    shown = _blocks(page, "text")[0]
    data_dir, log = tmp_path / "tutorial", tmp_path / "node.log"
    process = start_custody_run(FLOW, data_dir, log)
    try:
        assert wait_running(process, time.monotonic() + 60), log.read_text()[-3000:]
        inbox = data_dir / "in"
        inbox.mkdir(parents=True)
        (inbox / ".orders.csv").write_text(orders, encoding="utf-8")
        (inbox / ".orders.csv").rename(inbox / "orders.csv")
        wait_until(lambda: len(_rows(data_dir / "large")) + len(_rows(data_dir / "small")) == 4, 60, "the orders")
        (inbox / ".bad.csv").write_bytes(bad)
        (inbox / ".bad.csv").rename(inbox / "bad.csv")
        wait_until(lambda: any((data_dir / "failed").glob("*")), 60, "the unreadable file in failed")
    finally:
        stop(process, signal.SIGTERM)
    for part in ("large", "small"):
        line = next(line for line in shown.splitlines() if line.startswith(part + " "))
        shown_rows = ast.literal_eval(line[len(part) + 1 :])
        assert sorted(_rows(data_dir / part), key=_order) == sorted(shown_rows, key=_order), part
    assert [path.read_bytes() for path in (data_dir / "failed").iterdir()] == [bad]
    assert "goes to failure: record 1, line 3: CSV parse error: Expected 4 columns, got 3: 6,Bad,se" in log.read_text()
