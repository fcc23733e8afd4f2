"""NiFi's flow definitions (the JSON of "Download flow definition" and of NiFi's
registry clients) to Custody flows and back.

    from flow.nifi_flow import import_nifi_flow, export_nifi_flow, NiFiFlowError
    imported = import_nifi_flow(open("flow.json", "rb").read())   # .flow, .report, .unset_parameters
    document = export_nifi_flow(imported.flow)                      # NiFi's JSON, as data

Both raise `NiFiFlowError` listing every problem at once. The modules: `document` (the
NiFi document read, each field checked), `values` and `conversions` (NiFi's notation),
`mapping_model`, `processor_tables` and `service_tables` (what maps to what),
`parameters`, `flattening` (nested groups), `component_properties`, `importer`,
`exporter`.
"""

from __future__ import annotations

from .exporter import export_nifi_flow
from .importer import ImportedFlow, import_nifi_flow
from .problems import NiFiFlowError, Problem

__all__ = ["ImportedFlow", "NiFiFlowError", "Problem", "export_nifi_flow", "import_nifi_flow"]
