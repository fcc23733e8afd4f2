"""ListenHTTP: receives FlowFiles by HTTP POST, and answers only after the commit.

The client gets 200 when the session that holds its data is durable (`on_success`),
and 503 when the commit failed or the flow that took it failed (`on_failure`): an
acknowledging source, as NiFi's stateless execution design calls it (acknowledge only
what is durable). It binds 127.0.0.1 unless told otherwise.

A client that retries on anything but 200 gets its data delivered at least once; with
an idempotency key, exactly once. A request may carry a key in the header
`idempotency_key_header` (`Idempotency-Key`): the keys of the requests whose FlowFiles
were committed are kept in the processor state, in the same WAL transaction as those
FlowFiles (`flow.processors.intake.format`), and a retried POST with a key already
committed is answered 200 with no second FlowFile, also after a crash that lost the
first 200. A retry while the first is still being committed waits for that commit, and
is then answered 200 without a FlowFile (or taken, if that commit failed). Keys are
kept for `idempotency_key_age`, and at most `idempotency_max_keys` of them (the oldest
go first; the whole list is written with every commit that changes it): a retry later
than that is taken again. Only the first request's body is kept for a key. Without a
key a retry after a lost 200 is a new request, and its data is delivered twice:
nothing tells it apart from new data.
"""

from __future__ import annotations

import queue
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..processor import ProcessContext, Processor, PropertyDescriptor
from .intake import HandsOverIntake, format as intake_format
from .intake.ledger import recent_keys, remember_keys


class _Pending:
    __slots__ = ("body", "headers", "client", "key", "done", "status")

    def __init__(self, body: bytes, headers: dict, client: str, key: str | None = None):
        self.body, self.headers, self.client, self.key = body, headers, client, key
        self.done = threading.Event()
        self.status = 503


class ListenHTTP(HandsOverIntake, Processor):
    """See the module docstring. Lock plan: `_lock` is held from reading the committed
    keys until the commit that writes the next ones has returned, so a retry waits for
    the first request's commit and then finds its key (or, the commit failed, does not).
    The stateless engine is not triggered again before its result is settled."""

    type_name = "ListenHTTP"
    description = "An HTTP endpoint: each POST body becomes a FlowFile; 200 once it is durable."
    is_source = True
    properties = (
        PropertyDescriptor("port", "integer", required=True),
        PropertyDescriptor("host", "string", default="127.0.0.1"),
        PropertyDescriptor("base_path", "string", default="contentListener"),
        PropertyDescriptor("max_batch", "integer", default=100),
        PropertyDescriptor("max_request_size", "size", default="100 MB"),
        PropertyDescriptor("ack_timeout", "duration", default="30 sec"),
        PropertyDescriptor("idempotency_key_header", "string", default="Idempotency-Key",
                           description="request header whose key makes a retry answered, not taken again "
                                       "(empty: none)"),
        PropertyDescriptor("idempotency_max_keys", "integer", default=1000,
                           description="committed keys kept in state, the newest"),
        PropertyDescriptor("idempotency_key_age", "duration", default="10 min",
                           description="how long a committed key is kept"),
    )

    @classmethod
    def validate(cls, properties, dynamic):
        if properties["idempotency_max_keys"] < 1:
            return [("idempotency_max_keys", "must be at least 1")]
        return []

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._pending: queue.Queue[_Pending] = queue.Queue()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.port: int | None = None

    def on_scheduled(self, context: ProcessContext) -> None:
        pending = self._pending
        base = "/" + context["base_path"].strip("/")
        limit = context["max_request_size"]
        timeout = context["ack_timeout"]
        key_header = context["idempotency_key_header"].strip().lower()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet: the node logs what matters
                pass

            def do_POST(self):
                if self.path.split("?")[0].rstrip("/") != base:
                    self.send_error(404, f"POST to {base}")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                if length > limit:
                    self.send_error(413, f"body over {limit} bytes")
                    return
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                key = headers.get(key_header, "").strip() if key_header else ""
                if key and not intake_format.valid_key(key):
                    self.send_error(400, f"{key_header}: 1 to {intake_format.MAX_KEY_LENGTH} printable ASCII "
                                         "characters")
                    return
                request = _Pending(body, headers, self.client_address[0], key or None)
                pending.put(request)
                if not request.done.wait(timeout):
                    request.status = 503
                self.send_response(request.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self):
                self.send_response(405 if self.path.rstrip("/") == base else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer((context["host"], context["port"]), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"ListenHTTP {self.id}", daemon=True)
        self._thread.start()
        context.logger.info("%s listening on http://%s:%d%s", self.id, context["host"], self.port, base)

    def on_trigger(self, context: ProcessContext, session) -> None:
        batch: list[_Pending] = []
        try:
            while len(batch) < context["max_batch"]:
                batch.append(self._pending.get_nowait())
        except queue.Empty:
            pass
        if not batch:
            return
        now_ms = context.clock_ms() if context.clock_ms is not None else int(time.time() * 1000)
        max_age_ms = int(context["idempotency_key_age"] * 1000)
        with self._lock:
            state = intake_format.unpack(session.get_state(), self.id)
            committed = recent_keys(state.keys, now_ms, max_age_ms)
            groups: list[list[_Pending]] = []  # one FlowFile each, its requests answered alike
            keyed: dict[str, list[_Pending]] = {}
            replayed = []
            for request in batch:
                if request.key is None:
                    groups.append([request])
                elif request.key in committed:
                    replayed.append(request)
                elif request.key in keyed:  # a retry in the same batch
                    keyed[request.key].append(request)
                else:
                    keyed[request.key] = [request]
                    groups.append(keyed[request.key])
            self._answer(replayed, 200)
            requests = [request for group in groups for request in group]
            try:
                for group in groups:
                    self._receive(context, session, group[0])
                keys = remember_keys(state.keys, keyed, now_ms, max_count=context["idempotency_max_keys"],
                                     max_age_ms=max_age_ms)
                if keys != dict(state.keys):
                    session.set_state(intake_format.pack(state.replace(keys=keys)))
            except BaseException:
                self._answer(requests, 500)
                raise
            if not session.touched:
                session.rollback()
                return
            failures: list[BaseException] = []

            def failed(error: BaseException) -> None:
                self._answer(requests, 503)
                failures.append(error)

            session.commit_async(lambda: self._answer(requests, 200), failed)
            if failures:
                raise failures[0]

    def _receive(self, context: ProcessContext, session, request: _Pending) -> None:
        attributes = {"http.remote.host": request.client}
        for key, value in request.headers.items():
            if key.startswith("x-attr-"):
                attributes[key[len("x-attr-"):]] = value
            elif key in ("content-type", "filename"):
                attributes["mime.type" if key == "content-type" else "filename"] = value
        if request.key is not None:
            attributes["http.idempotency.key"] = request.key
        flowfile = session.create(attributes=attributes)
        flowfile = session.write_bytes(flowfile, request.body)
        session.receive(flowfile, f"http://{context['host']}:{self.port}/{context['base_path']}")
        session.transfer(flowfile, "success")

    @staticmethod
    def _answer(batch, status: int) -> None:
        for request in batch:
            request.status = status
            request.done.set()

    def on_stopped(self, context: ProcessContext) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        while True:
            try:
                self._pending.get_nowait().done.set()
            except queue.Empty:
                break
