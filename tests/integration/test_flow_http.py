"""ListenHTTP: answers 200 only once the data is durable in the node, binds 127.0.0.1,
takes a request with an idempotency key once (also after a restart, also for the keys
the previous release committed) and refuses the key reused with another payload,
answers 503 when its flow failed, reads a chunked body whole and refuses a POST without
its bearer token; and what an idempotency key costs the WAL."""

from __future__ import annotations

import shutil
import textwrap
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from cluster.drills.checker import ids_in_directory
from cluster.node.standalone import NodeSettings, StandaloneNode
from flow.loading import parse_flow
from flow.stateless import StatelessFlow


def test_posted_data_is_durable_before_the_200_and_reaches_the_sink(tmp_path):
    out = tmp_path / "out"
    definition = parse_flow(
        {
            "processors": [
                # `filename` is reserved: this flow lets clients set it, explicitly.
                {
                    "id": "listen",
                    "type": "ListenHTTP",
                    "properties": {
                        "port": 0,
                        "base_path": "ingest",
                        "header_attributes": "X-Attr-.+|filename",
                        "reserved_header_attributes": "filename",
                    },
                },
                {
                    "id": "put",
                    "type": "PutFile",
                    "properties": {"directory": str(out)},
                    "auto_terminate": ["success", "failure"],
                },
            ],
            "connections": [{"id": "received", "source": "listen", "destination": "put"}],
        }
    )
    node = StandaloneNode(definition, str(tmp_path / "node"))
    node.start()
    try:
        listener = node.graph.processors["listen"]
        assert listener._server.server_address[0] == "127.0.0.1"
        url = f"http://127.0.0.1:{listener.port}/ingest"
        for index in range(5):
            request = urllib.request.Request(
                url,
                data=f"record {index}".encode(),
                method="POST",
                headers={"X-Attr-source": "test", "filename": f"r{index}"},
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                assert response.status == 200
            # The 200 came after the commit: the FlowFile is in the WAL now (or already delivered).
            in_wal = any(r.attributes.get("filename") == f"r{index}" for r in list(node.shard.wal.records.values()))
            delivered = f"record {index}" in {p.read_text() for p in out.glob("[!.]*")}
            assert in_wal or delivered
        try:
            urllib.request.urlopen(urllib.request.Request(url + "/other", data=b"x", method="POST"), timeout=10)
            raise AssertionError("a wrong path was accepted")
        except urllib.error.HTTPError as error:
            assert error.code == 404
        assert node.wait_until(lambda: len(ids_in_directory(str(out))) == 5, 30)
    finally:
        node.stop()
    assert sorted(p.read_text() for p in out.glob("*")) == [f"record {i}" for i in range(5)]


def post(url, body, key=None, timeout=30, headers=None):
    headers = {**(headers or {}), **({"Idempotency-Key": key} if key else {})}
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_retry_with_a_committed_idempotency_key_is_answered_without_a_second_flowfile_also_after_a_restart(tmp_path):
    out = tmp_path / "out"
    definition = parse_flow(
        yaml.safe_load(
            textwrap.dedent(f"""
        processors:
          - {{id: listen, type: ListenHTTP, properties: {{port: 0, base_path: ingest}}}}
          - {{id: put, type: PutFile, properties: {{directory: "{out}"}}, auto_terminate: [success, failure]}}
        connections:
          - {{source: listen, destination: put}}
    """)
        )
    )
    for run in range(2):
        node = StandaloneNode(definition, str(tmp_path / "node"))
        node.start()
        try:
            url = f"http://127.0.0.1:{node.graph.processors['listen'].port}/ingest"
            if run == 0:
                assert post(url, b"order-1 first", key="order-1") == 200
            # A retry after a lost 200 (the first run: a timeout; the second: the node died).
            assert post(url, b"order-1 first", key="order-1") == 200
            # The key reused for other data: refused, before and after the restart.
            assert post(url, b"order-1 other", key="order-1") == 422
            assert post(url, f"no key {run}".encode()) == 200
            assert node.wait_until(lambda: len(ids_in_directory(str(out))) == 2 + run and node.engine.is_idle(), 30)  # noqa: B023
            assert post(url, b"x", key="k" * 201) == 400
        finally:
            node.stop()
    assert sorted(p.read_text() for p in out.glob("*")) == ["no key 0", "no key 1", "order-1 first"]


def test_a_client_whose_request_failed_in_a_stateless_flow_gets_503_and_its_retry_is_taken():
    # The first attempt carries an attribute the flow routes to its failure port.
    stateless = StatelessFlow(
        parse_flow(
            {
                "processors": [
                    {"id": "listen", "type": "ListenHTTP", "properties": {"port": 0, "ack_timeout": "120 sec"}},
                    {"id": "check", "type": "RouteOnAttribute", "properties": {"poisoned": "${poison:equals('yes')}"}},
                ],
                "ports": [{"id": "out", "type": "output"}, {"id": "failed", "type": "failure"}],
                "connections": [
                    {"source": "listen", "destination": "check"},
                    {"source": "check", "relationships": ["unmatched"], "destination": "out"},
                    {"source": "check", "relationships": ["poisoned"], "destination": "failed"},
                ],
            }
        )
    )

    def trigger_until(reached):
        """Trigger until a result is `reached` (the request got in) or 20 s passed."""
        deadline = time.monotonic() + 20
        while True:
            result = stateless.trigger()
            if reached(result) or time.monotonic() > deadline:
                return result
            result.acknowledge()
            time.sleep(0.01)

    try:
        first = stateless.trigger()  # schedules ListenHTTP: it listens from now on
        first.acknowledge()
        url = f"http://127.0.0.1:{stateless.graph.processors['listen'].port}/contentListener"
        for attempt, expected in enumerate((503, 200)):
            answers = []
            headers = {"X-Attr-poison": "yes"} if attempt == 0 else {}
            client = threading.Thread(
                target=lambda: answers.append(post(url, b"data", key="k-1", timeout=20, headers=headers))  # noqa: B023
            )
            client.start()
            result = trigger_until(lambda result: not result.success or result.outputs)
            assert result.success == (attempt == 1), result.failure
            result.acknowledge()
            client.join(30)
            assert answers == [expected], f"attempt {attempt}: answered {answers} (the ack timeout is 120 s)"
        assert [d for _, _, d in result.outputs] == [b"data"]
    finally:
        stateless.close()


def test_a_chunked_post_with_the_bearer_token_reaches_the_sink_whole_and_one_without_never_does(tmp_path):
    out = tmp_path / "out"
    definition = parse_flow(
        {
            "processors": [
                {
                    "id": "listen",
                    "type": "ListenHTTP",
                    "properties": {"port": 0, "base_path": "ingest", "auth_token": "n0de-token"},
                },
                {
                    "id": "put",
                    "type": "PutFile",
                    "properties": {"directory": str(out)},
                    "auto_terminate": ["success", "failure"],
                },
            ],
            "connections": [{"source": "listen", "destination": "put"}],
        }
    )
    node = StandaloneNode(definition, str(tmp_path / "node"))
    node.start()
    try:
        url = f"http://127.0.0.1:{node.graph.processors['listen'].port}/ingest"
        pieces = [b"first piece, ", b"second piece, ", b"last piece"]
        # An iterable body without a Content-Length: urllib sends it chunked.
        assert (
            post(url, iter(pieces), headers={"Authorization": "Bearer n0de-token", "Transfer-Encoding": "chunked"})
            == 200
        )
        assert post(url, b"no token") == 401
        assert post(url, b"wrong token", headers={"Authorization": "Bearer other"}) == 401
        assert node.wait_until(lambda: len(ids_in_directory(str(out))) == 1 and node.engine.is_idle(), 30)
    finally:
        node.stop()
    assert [p.read_bytes() for p in out.glob("*")] == [b"".join(pieces)]


SAMPLE = Path(__file__).resolve().parents[1] / "data" / "listen-keys-v1"


def test_the_previous_releases_idempotency_keys_are_still_honoured(tmp_path):
    # tests/data/listen-keys-v1: three requests with keys, committed by the release
    # before payload fingerprints (intake layout version 1; its README says how).
    shutil.copytree(SAMPLE, tmp_path / "sample")
    data, out = tmp_path / "sample" / "data", tmp_path / "out"
    definition = parse_flow(
        {
            "processors": [
                {
                    "id": "listen",
                    "type": "ListenHTTP",
                    "properties": {"port": 0, "base_path": "ingest", "idempotency_key_age": "36500 days"},
                },
                {
                    "id": "put",
                    "type": "PutFile",
                    "properties": {"directory": str(out)},
                    "auto_terminate": ["success", "failure"],
                },
            ],
            "connections": [{"source": "listen", "destination": "put"}],
        }
    )
    for _run in range(2):
        node = StandaloneNode(definition, str(data))
        node.start()
        try:
            url = f"http://127.0.0.1:{node.graph.processors['listen'].port}/ingest"
            # No fingerprint was kept for them: a retry is answered as that release answered it.
            for n in (1, 2, 3):
                assert post(url, f"sample body {n}\n".encode(), key=f"sample-key-{n}") == 200
            assert post(url, b"not the sample's body", key="sample-key-1") == 200
            assert post(url, b"new data", key="new-key") == 200
            assert post(url, b"other data", key="new-key") == 422
            assert node.wait_until(lambda: len(ids_in_directory(str(out))) == 1 and node.engine.is_idle(), 30)  # noqa: B023
            state = node.shard.get_state("listen")
            assert state["intake.layout"] == "2" and state["key:new-key"].count(":") == 1
            assert {key: value for key, value in state.items() if key.startswith("key:sample-key-")} == {
                "key:sample-key-1": "1795834226477",
                "key:sample-key-2": "1795834226494",
                "key:sample-key-3": "1795834226508",
            }, "the release before's keys, kept as they were"
        finally:
            node.stop()
    assert [p.read_bytes() for p in out.glob("*")] == [b"new data"]


def wal_bytes(data_dir) -> int:
    return sum(path.stat().st_size for path in (Path(data_dir) / "shards" / "local" / "wal").glob("journal-*"))


def test_an_idempotency_key_costs_the_wal_one_entry_not_the_whole_ledger(tmp_path):
    # The ledger holds 400 keys; then a request with a new key must cost the WAL about
    # what one without a key does, plus its own entry (and the delete of the oldest).
    definition = parse_flow(
        {
            "processors": [
                {"id": "listen", "type": "ListenHTTP", "properties": {"port": 0, "idempotency_max_keys": 400}},
                {
                    "id": "held",
                    "type": "UpdateAttribute",
                    "properties": {},
                    "auto_terminate": ["success"],
                    "scheduling": {"run_schedule": "1 hour"},
                },
            ],
            "connections": [{"source": "listen", "destination": "held"}],
        }
    )
    node = StandaloneNode(definition, str(tmp_path / "node"), NodeSettings(checkpoint_interval_s=3600))
    node.start()
    try:
        url = f"http://127.0.0.1:{node.graph.processors['listen'].port}/contentListener"
        with ThreadPoolExecutor(16) as clients:
            statuses = list(clients.map(lambda n: post(url, b"x" * 100, key=f"filling-{n:05d}"), range(400)))
        assert statuses == [200] * 400
        costs = {}
        for keyed in (False, True):
            before = wal_bytes(node.data_dir)
            for n in range(10):
                assert post(url, b"x" * 100, key=f"measured-{n:05d}" if keyed else None) == 200
            costs[keyed] = (wal_bytes(node.data_dir) - before) / 10
        print(
            f"WAL bytes a request, the ledger holding 400 keys: {costs[False]:.0f} without a key, "
            f"{costs[True]:.0f} with one"
        )
        assert costs[True] - costs[False] < 1024, costs
    finally:
        node.stop()
