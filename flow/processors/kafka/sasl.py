"""SASL on Kafka's wire, for the requests Custody speaks itself (`wire`): PLAIN and
SCRAM-SHA-256/512, the mechanisms PublishKafka and ConsumeKafka offer.

A connection authenticates before its first request, as Kafka's clients do since
Kafka 1.0 (KIP-152):

    SaslHandshake v1     request: mechanism STRING; answer: error INT16, the
                         broker's mechanisms ARRAY of STRING (headers without
                         tagged fields: the request header v1, the response header v0)
    SaslAuthenticate v2  request: auth bytes COMPACT_BYTES; answer: error INT16,
                         error message COMPACT_NULLABLE_STRING, auth bytes
                         COMPACT_BYTES, session lifetime INT64 (flexible)

PLAIN sends one message, `\\0user\\0password` (RFC 4616). SCRAM (RFC 5802, with
SHA-256 or SHA-512 as RFC 7677 and Kafka's KIP-84 use them) takes two round trips:

    client-first   n,,n=<user>,r=<client nonce>
    server-first   r=<client nonce + server nonce>,s=<salt, base64>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<proof, base64>
    server-final   v=<server signature, base64>, checked before the connection is used

with SaltedPassword = PBKDF2(password, salt, iterations), ClientKey = HMAC(SaltedPassword,
"Client Key"), StoredKey = H(ClientKey), AuthMessage = client-first-bare + "," +
server-first + "," + client-final-without-proof, proof = ClientKey XOR
HMAC(StoredKey, AuthMessage), ServerSignature = HMAC(HMAC(SaltedPassword, "Server
Key"), AuthMessage). A user name's "=" and "," are sent as "=3D" and "=2C".
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import NamedTuple

from . import wire

HANDSHAKE = (17, 1)
AUTHENTICATE = (36, 2)
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = ("PLAIN", *SCRAM_HASHES)


class Credentials(NamedTuple):
    mechanism: str
    username: str
    password: str


class Scram:
    """One SCRAM exchange's client side."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None) -> None:
        self.hash = SCRAM_HASHES[mechanism]
        self.password = password.encode("utf-8")
        name = username.replace("=", "=3D").replace(",", "=2C")
        self.nonce = nonce or secrets.token_urlsafe(24)
        self.first_bare = f"n={name},r={self.nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self.first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode("utf-8", errors="replace")
        fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        nonce, salt, iterations = fields.get("r", ""), fields.get("s"), fields.get("i", "")
        if not nonce.startswith(self.nonce) or salt is None or not iterations.isdigit():
            raise wire.WireError(f"the broker's SCRAM challenge does not fit RFC 5802: {text[:200]!r}")
        salted = hashlib.pbkdf2_hmac(self.hash, self.password, base64.b64decode(salt), int(iterations))
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self.hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        message = f"{self.first_bare},{text},{without_proof}".encode()
        proof = bytes(a ^ b for a, b in zip(client_key, self._hmac(stored_key, message), strict=True))
        self.server_signature = self._hmac(self._hmac(salted, b"Server Key"), message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        text = server_final.decode("utf-8", errors="replace")
        if text.startswith("e="):
            raise wire.WireError(f"SCRAM authentication failed: {text[2:]}")
        if not text.startswith("v=") or not hmac.compare_digest(
            base64.b64decode(text[2:].split(",")[0]), self.server_signature
        ):
            raise wire.WireError("the broker's SCRAM signature is wrong: it does not know the password")

    def _hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.hash).digest()


def authenticate(connection: wire.Connection, credentials: Credentials) -> None:
    """Authenticate `connection` before its first request. Raises `wire.WireError`."""
    mechanism = credentials.mechanism.upper()
    if mechanism not in MECHANISMS:
        raise wire.WireError(
            f"SASL mechanism {credentials.mechanism} is not spoken here (only {', '.join(MECHANISMS)})"
        )
    answer = connection.request(HANDSHAKE, wire.Writer().string(mechanism).done(), flexible=False)
    error = answer.int16()
    offered = [answer.string() or "" for _ in range(answer.int32())]
    if error != wire.NONE:
        raise wire.WireError(f"the broker at {connection.address} takes SASL {', '.join(offered)}, not {mechanism}")
    if mechanism == "PLAIN":
        _exchange(connection, f"\0{credentials.username}\0{credentials.password}".encode())
        return
    scram = Scram(mechanism, credentials.username, credentials.password)
    challenge = _exchange(connection, scram.first())
    scram.verify(_exchange(connection, scram.final(challenge)))


def _exchange(connection: wire.Connection, message: bytes) -> bytes:
    answer = connection.request(AUTHENTICATE, wire.Writer().compact_bytes(message).no_tags().done())
    error, why = answer.int16(), answer.compact_string()
    data = answer.compact_bytes()
    if error != wire.NONE:
        raise wire.WireError(f"SASL authentication at {connection.address} failed: {why or f'error {error}'}")
    return data
