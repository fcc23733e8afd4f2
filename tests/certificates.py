"""A test certificate: made by the openssl command, for 127.0.0.1, valid for a day."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import IN_CI


def self_signed(directory) -> tuple[str, str]:
    """(certificate, key) files in `directory`: a certificate for 127.0.0.1 signed by
    its own key, so that it is its own authority (what a client trusts to reach it)."""
    if shutil.which("openssl") is None:
        message = "the openssl command is needed to make a test certificate"
        pytest.fail(message) if IN_CI else pytest.skip(message)
    cert, key = str(directory / "cert.pem"), str(directory / "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1"]
        + ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key
