"""The few calls of NiFi's REST API (/nifi-api) the benchmark makes, over urllib.

Every change carries the component's revision, as NiFi's optimistic locking asks;
a refused call raises `NiFiApiError` with NiFi's own message.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any


class NiFiApiError(RuntimeError):
    """NiFi refused a REST call: the method, the path, the status and NiFi's message."""

    def __init__(self, method: str, path: str, status: int, message: str):
        super().__init__(f"NiFi refused {method} {path}: HTTP {status}: {message}")
        self.status = status


class NiFiClient:
    def __init__(self, url: str, timeout: float = 60.0):
        self.url = url.rstrip("/")
        self.timeout = timeout

    def request(self, method: str, path: str, body: dict | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as error:
            raise NiFiApiError(method, path, error.code, error.read().decode(errors="replace")[:2000]) from None
        return json.loads(text) if text.strip() else None

    def root_group_id(self) -> str:
        return self.request("GET", "/flow/process-groups/root")["processGroupFlow"]["id"]

    def create_group(self, parent: str, name: str) -> str:
        body = {"revision": {"version": 0}, "component": {"name": name, "position": {"x": 0, "y": 0}}}
        return self.request("POST", f"/process-groups/{parent}/process-groups", body)["id"]

    def create_processor(self, group: str, component: dict) -> str:
        body = {"revision": {"version": 0}, "component": component}
        return self.request("POST", f"/process-groups/{group}/processors", body)["id"]

    def processor(self, processor: str) -> dict:
        return self.request("GET", f"/processors/{processor}")

    def create_connection(self, group: str, component: dict) -> str:
        body = {"revision": {"version": 0}, "component": component}
        return self.request("POST", f"/process-groups/{group}/connections", body)["id"]

    def schedule_group(self, group: str, state: str) -> None:
        """state RUNNING or STOPPED: every processor of the group."""
        self.request("PUT", f"/flow/process-groups/{group}", {"id": group, "state": state})

    def processor_status(self, processor: str) -> dict:
        """The processor's aggregate snapshot (flowFilesIn, bytesIn, ..., over NiFi's
        five-minute status window)."""
        return self.request("GET", f"/flow/processors/{processor}/status")["processorStatus"]["aggregateSnapshot"]

    def empty_group_queues(self, group: str, timeout: float = 120.0) -> None:
        """Drop every FlowFile queued in the group and wait until NiFi says it is done."""
        request = self.request("POST", f"/process-groups/{group}/empty-all-connections-requests")
        path = request["dropRequest"]["uri"].split("/nifi-api", 1)[1]
        deadline = time.monotonic() + timeout
        try:
            while not self.request("GET", path)["dropRequest"]["finished"]:
                if time.monotonic() > deadline:
                    raise NiFiApiError("GET", path, 0, f"the drop request did not finish within {timeout:.0f} s")
                time.sleep(0.1)
        finally:
            self.request("DELETE", path)

    def delete_group(self, group: str) -> None:
        version = self.request("GET", f"/process-groups/{group}")["revision"]["version"]
        self.request("DELETE", f"/process-groups/{group}?version={version}")

    def active_threads(self, group: str) -> int:
        status = self.request("GET", f"/flow/process-groups/{group}/status")
        return int(status["processGroupStatus"]["aggregateSnapshot"].get("activeThreadCount", 0))
