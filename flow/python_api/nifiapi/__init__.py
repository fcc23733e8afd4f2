"""Custody's `nifiapi`: NiFi 2's Python processor API, run in the node's own process.

See `flow.python_api` for how it is made importable as `nifiapi`, and
docs/develop/python-processors.md for what of NiFi's API is there."""
