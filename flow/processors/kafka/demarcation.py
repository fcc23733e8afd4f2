"""Many Kafka records in one FlowFile: ConsumeKafka joins the records of a partition with
a demarcator (`message_demarcator`), PublishKafka splits a FlowFile's content on one, as
NiFi's processors of the same names do. A flow that moves small records this way makes
one FlowFile (one WAL record, one provenance event) per batch instead of per record."""

from __future__ import annotations

import codecs


def decode_demarcator(text: str) -> bytes:
    """The demarcator as bytes, with the escapes a flow file can write (`\\n`, `\\t`)."""
    return codecs.decode(text, "unicode_escape").encode("utf-8")


def split_records(content: bytes, demarcator: bytes) -> list[bytes]:
    """The records of `content`, the pieces between demarcators; a demarcator at the very
    end ends the last record rather than starting an empty one (JSON lines end so)."""
    if not content:
        return []
    pieces = content.split(demarcator)
    if pieces[-1] == b"":
        pieces.pop()
    return pieces
