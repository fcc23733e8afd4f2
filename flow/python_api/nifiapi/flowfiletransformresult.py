"""`FlowFileTransformResult` in the module of its own that newer NiFi releases give it
(it is also importable from `nifiapi.flowfiletransform`, as in NiFi 2.0 to 2.6)."""

from __future__ import annotations

from .flowfiletransform import FlowFileTransformResult

__all__ = ["FlowFileTransformResult"]
