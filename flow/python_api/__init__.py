"""NiFi 2's Python processor API, as Custody implements it (`nifiapi`).

A NiFi 2 Python processor imports `nifiapi.flowfiletransform`, `nifiapi.recordtransform`,
`nifiapi.flowfilesource`, `nifiapi.properties`, `nifiapi.relationship`,
`nifiapi.componentstate`, `nifiapi.documentation` and `nifiapi.logging`. This package
holds Custody's own implementation of those modules, in `flow.python_api.nifiapi`;
`install_alias()` makes them importable under the name `nifiapi` as well, the very same
module objects (a processor's `FlowFileTransform` is the class the adapter checks
against), so that a processor written for NiFi runs unmodified. The names and
signatures are NiFi's; what happens behind them is Custody's (no JVM, no Py4J: the
processor runs in the node's process, inside the node's sessions).
"""

from __future__ import annotations

import importlib
import sys

ALIAS = "nifiapi"
MODULES = (
    "properties",
    "relationship",
    "componentstate",
    "documentation",
    "logging",
    "flowfiletransform",
    "recordtransform",
    "flowfilesource",
    "flowfiletransformresult",
    "flowfilesourceresult",
    "flowfiletransformmultipleoutput",
    "multipleflowfilesource",
)


def install_alias() -> None:
    """Make `import nifiapi...` give this package's modules. Idempotent; a `nifiapi`
    already imported from elsewhere (NiFi's own, installed by pip) is replaced, since a
    processor must meet the classes Custody's adapter knows."""
    package = importlib.import_module(f"{__name__}.nifiapi")
    if sys.modules.get(ALIAS) is package:
        return
    sys.modules[ALIAS] = package
    for name in MODULES:
        sys.modules[f"{ALIAS}.{name}"] = importlib.import_module(f"{__name__}.nifiapi.{name}")
