"""ListenHTTP: receives FlowFiles by HTTP POST, and answers only after the commit.

The client gets 200 when the session that holds its data is durable (`on_success`),
and 503 when the commit failed: an acknowledging source, as NiFi's stateless execution
design calls it (acknowledge only what is durable), so a client that retries on
anything but 200 gets at-least-once delivery. It binds 127.0.0.1 unless told
otherwise.
"""

from __future__ import annotations

import queue
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..processor import ProcessContext, Processor, PropertyDescriptor


class _Pending:
    __slots__ = ("body", "headers", "client", "done", "status")

    def __init__(self, body: bytes, headers: dict, client: str):
        self.body, self.headers, self.client = body, headers, client
        self.done = threading.Event()
        self.status = 503


class ListenHTTP(Processor):
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
    )

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._pending: queue.Queue[_Pending] = queue.Queue()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    def on_scheduled(self, context: ProcessContext) -> None:
        pending = self._pending
        base = "/" + context["base_path"].strip("/")
        limit = context["max_request_size"]
        timeout = context["ack_timeout"]

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
                request = _Pending(body, {k.lower(): v for k, v in self.headers.items()}, self.client_address[0])
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
        try:
            for request in batch:
                attributes = {"http.remote.host": request.client}
                for key, value in request.headers.items():
                    if key.startswith("x-attr-"):
                        attributes[key[len("x-attr-"):]] = value
                    elif key in ("content-type", "filename"):
                        attributes["mime.type" if key == "content-type" else "filename"] = value
                flowfile = session.create(attributes=attributes)
                flowfile = session.write_bytes(flowfile, request.body)
                session.receive(flowfile, f"http://{context['host']}:{self.port}/{context['base_path']}")
                session.transfer(flowfile, "success")
        except BaseException:
            self._answer(batch, 500)
            raise

        session.commit_async(lambda: self._answer(batch, 200), lambda error: self._answer(batch, 503))

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
