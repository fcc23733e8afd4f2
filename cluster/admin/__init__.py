"""The REST admin API of a node: FastAPI on uvicorn, in the node's own process.

    server = AdminServer(AdminSettings(bind="127.0.0.1", port=8080, token_file="tokens"))
    server.start(node.control())     # its own thread and event loop; `server.url`
    server.stop()

What it holds:

  settings.py   `[admin]` of NODE.toml and `--admin HOST:PORT`; the refusal to bind a
                non-loopback address without tokens
  tokens.py     the token file (hashes only) and bearer-token checks, roles read/admin
  server.py     uvicorn on a thread of its own
  connections.py  each connection's cap and read deadlines, so clients never take the
                flow's descriptors
  admission.py  the Host and Origin rules of browsers (DNS rebinding, cross-site POSTs), pure
  gate.py       the ASGI layers that apply them, and check the token and the body's cap
                before any body is read
  app.py        the FastAPI application: routes under /api/v1, /health, /ready,
                /metrics, the status page at /
  models.py     the pydantic models of every answer, so /openapi.json is exact
                (models_provenance.py: those of provenance)
                (models_queues.py: those of routes_queues.py)
  responses.py  the errors each kind of route declares, and the shape of every error
  routes_*.py   one module per area of the API (routes_queues.py: queues, FlowFiles
                and their content, drop, replay, processor stop and start)
  ranges.py     HTTP Range requests of the content endpoint
  metrics.py    the Prometheus registry of a node, and its gauges of queues and processors
  measures.py   its counters and latency histograms (commits, WAL syncs, swaps, HDFS
                calls, failovers) and its ZooKeeper session state, as families
  page.py       the status page (server-rendered HTML and a small script)

It may import `cluster.node` (it calls `NodeControl`, never a node's internals),
`cluster.zk`, `cluster.core`, `cluster.clients` and `cluster.errors`. The nodes do not
import it: `custody node` and `custody run` start it beside the node.
"""
