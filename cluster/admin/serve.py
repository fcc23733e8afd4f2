"""Start a node's admin API beside it: what `custody node` and `custody run` call.

server = serve(settings, node.control())    # listening; server.url
"""

from __future__ import annotations

from .app import create_app
from .server import AdminServer
from .settings import AdminSettings
from .tokens import Tokens
from .worker_siblings import WorkerSiblings


def serve(settings: AdminSettings, control, *, workers: WorkerSiblings | None = None) -> AdminServer:
    """Check the settings (no non-loopback bind without tokens, host names), load the
    tokens and listen; `workers`: the node's other workers, on a node of worker
    processes (`worker_siblings`). Raises `AdminSettingsRefused`, `TokenFileError` or
    `AdminServerError`."""
    settings.check()
    tokens = Tokens.load(settings.token_file) if settings.token_file else Tokens.disabled()
    app = create_app(control, tokens, member_trust=settings.member_trust(), workers=workers)
    return AdminServer(settings, app).start()
