"""`FlowFileSourceResult` in the module of its own that newer NiFi releases give it (it
is also importable from `nifiapi.flowfilesource`)."""

from __future__ import annotations

from .flowfilesource import FlowFileSourceResult

__all__ = ["FlowFileSourceResult"]
