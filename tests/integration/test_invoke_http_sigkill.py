"""InvokeHTTP into a Custody ListenHTTP, exactly once through SIGKILLs of the sender.

The sender is `custody run` on examples/flowfile-v3-relay.yaml: GetFile takes files
(each holds its unique id) from an inbox, InvokeHTTP sends each as a FlowFile Stream v3
with an Idempotency-Key from its uuid. The receiver, a node in this process, is
ListenHTTP into PutFile. Between them a loopback proxy counts each key's requests and,
when told, forwards one request, lets the receiver commit and answer 200, and then
holds that answer: the sender is SIGKILLed while it waits for it, which is the crash
idempotency keys exist for (sent, 200 lost, the sender's commit never happened). Other
kills land at random moments. The next run sends those FlowFiles again; ListenHTTP
answers their keys 200 without a second FlowFile. A last run drains the inbox.

Checked: every id delivered once at the receiver (`cluster.drills.checker`: 0 lost,
0 duplicated, 0 unexpected), every held request's key sent again after its kill (the
window was met), and nothing refused by the sender.
"""

from __future__ import annotations

import http.client
import http.server
import os
import random
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import yaml

from cluster.drills.checker import check_delivery, ids_in_directory
from cluster.node.standalone import StandaloneNode
from cluster.services.process import wait_until
from flow.loading import parse_flow

from .custody_run import ROOT, start_custody_run, stop, wait_running

FLOW = ROOT / "examples" / "flowfile-v3-relay.yaml"
COUNT = 300
HELD_KILLS = 3
RANDOM_KILLS = 1


class HoldingProxy:
    """Forwards each POST to `target` and returns its answer; counts the requests of each
    Idempotency-Key. `hold_next()`: the next request is forwarded and answered by the
    target, and its answer is never returned (`held` is set with its key)."""

    def __init__(self, target_port: int):
        self.keys: Counter[str] = Counter()
        self.held = threading.Event()
        self.held_key: str | None = None
        self._hold = False
        self._release = threading.Event()
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                key = self.headers.get("Idempotency-Key", "")
                with proxy._lock:
                    proxy.keys[key] += 1
                connection = http.client.HTTPConnection("127.0.0.1", target_port, timeout=60)
                try:
                    headers = {
                        name: self.headers[name] for name in ("Content-Type", "Idempotency-Key") if name in self.headers
                    }
                    connection.request("POST", self.path, body, headers)
                    answer = connection.getresponse()
                    data = answer.read()
                finally:
                    connection.close()
                with proxy._lock:  # held: the first request the receiver answered 200 once asked to
                    hold = proxy._hold and answer.status == 200
                    proxy._hold = proxy._hold and not hold
                if hold:
                    proxy.held_key = key
                    proxy.held.set()
                    proxy._release.wait(120)  # the sender is killed meanwhile: never answered
                    self.close_connection = True
                    return
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the sender was killed while this was forwarded

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def hold_next(self) -> None:
        with self._lock:
            self.held.clear()
            self._hold = True

    def close(self) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()


def _receiver(out: Path) -> dict:
    return {
        "name": "receiver",
        "processors": [
            {
                "id": "listen",
                "type": "ListenHTTP",
                "properties": {"port": 0, "idempotency_max_keys": 10 * COUNT, "max_batch": 50},
            },
            {
                "id": "put",
                "type": "PutFile",
                "properties": {"directory": str(out), "sync": False},
                "auto_terminate": ["success"],
            },
        ],
        "connections": [
            {"source": "listen", "destination": "put"},
            {"source": "put", "relationships": ["failure"], "destination": "put"},
        ],
    }


def _sender_flow(tmp_path: Path) -> Path:
    """The example, with retries penalized 200 ms instead of 5 s (a kill amid a forward
    can leave a key in flight at the receiver: answered 409, retried)."""
    document = yaml.safe_load(FLOW.read_text())
    for processor in document["processors"]:
        if processor["id"] == "send":
            processor["scheduling"] = {"penalty_duration": "200 ms"}
    path = tmp_path / "relay.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_invoke_http_delivers_each_flowfile_once_into_listen_http_through_sigkills(tmp_path):
    seed = int(os.environ.get("CUSTODY_DRILL_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    inbox, out, log = tmp_path / "inbox", tmp_path / "received", tmp_path / "sender.log"
    inbox.mkdir()
    expected = [f"file-{i}" for i in range(COUNT)]
    for i, identifier in enumerate(expected):
        (inbox / f"{i:05d}").write_text(identifier)
    receiver = StandaloneNode(parse_flow(_receiver(out)), str(tmp_path / "receiver"))
    receiver.start()
    proxy = HoldingProxy(receiver.graph.processors["listen"].port)
    flow = _sender_flow(tmp_path)
    options = ("--param", f"inbox={inbox}", "--param", f"url=http://127.0.0.1:{proxy.port}/contentListener")
    held_keys: list[str] = []
    kinds = ["held"] * HELD_KILLS + ["random"] * RANDOM_KILLS
    rng.shuffle(kinds)
    started = time.monotonic()
    try:
        for attempt, kind in enumerate(kinds):
            sender = start_custody_run(flow, tmp_path / "sender", log, *options)
            try:
                assert wait_running(sender, time.monotonic() + 60), (
                    f"seed {seed}: the sender did not start; {log.read_text()[-3000:]}"
                )
                mark = sum(proxy.keys.values()) + rng.randrange(5, 40)
                wait_until(lambda: sum(proxy.keys.values()) >= mark, 60, f"request {mark} (attempt {attempt})")  # noqa: B023
                if kind == "held":
                    proxy.hold_next()
                    wait_until(proxy.held.is_set, 60, f"a held answer (attempt {attempt})")
                    held_keys.append(proxy.held_key or "")
            finally:
                stop(sender, signal.SIGKILL)
        sender = start_custody_run(flow, tmp_path / "sender", log, *options)
        try:
            assert wait_running(sender, time.monotonic() + 60)
            wait_until(lambda: len(ids_in_directory(str(out))) >= COUNT and not any(inbox.iterdir()), 120, "the drain")
            assert receiver.wait_until(receiver.engine.is_idle, 30)
        finally:
            stop(sender, signal.SIGTERM)
        drill_s = time.monotonic() - started
    finally:
        proxy.close()
        receiver.stop()

    delivery = check_delivery(expected, ids_in_directory(str(out)))
    assert delivery.ok, f"seed {seed}: {delivery.summary()}"
    assert len(held_keys) == HELD_KILLS and all(proxy.keys[key] >= 2 for key in held_keys), (
        f"seed {seed}: a held request was not sent again after its kill: {[(k, proxy.keys[k]) for k in held_keys]}"
    )
    refused = tmp_path / "sender" / "refused"
    assert not refused.exists() or not any(refused.iterdir()), f"seed {seed}: the sender refused some"
    resent = sum(n - 1 for n in proxy.keys.values())
    print(
        f"InvokeHTTP SIGKILL drill: {len(kinds)} kills ({HELD_KILLS} at a held 200), {resent} resends, "
        f"{drill_s:.1f} s; "
        f"{delivery.summary()}"
    )
