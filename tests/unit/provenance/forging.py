"""Forged provenance files: a journal frame's or an event-file block's payload changed,
and its checksums (and a TOC's offsets and lengths) written again, as only a forger or
a checksum collision could. What the decoders behind the checksums must withstand."""

from __future__ import annotations

import zstandard

from repositories.provenance import event_file_format as eff
from repositories.provenance import journal_format as jf


def forged_journal(data: bytes, frame: int, payload_damage) -> bytes:
    """The journal with frame `frame`'s payload changed and its checksums written again."""
    offset = jf.HEADER.size
    for _ in range(frame):
        offset += jf.FRAME.size + jf.unpack_frame_header(data, offset)[2]
    first, count, length, _ = jf.unpack_frame_header(data, offset)
    start = offset + jf.FRAME.size
    payload = payload_damage(data[start : start + length])
    return data[:offset] + jf.pack_frame_header(first, count, payload) + payload + data[start + length :]


def forged_event_file(data: bytes, toc: bytes, block: int, layer: str, payload_damage) -> tuple[bytes, bytes]:
    """The event file and its TOC with block `block`'s payload changed (its Arrow bytes,
    compressed again; or its zstd bytes) and its checksums, offsets and lengths written
    again."""
    first_id, _, blocks = eff.unpack_toc(toc)
    out, infos = [data[: eff.FILE_HEADER.size]], []
    for index, info in enumerate(blocks):
        header = eff.unpack_block_header(data, info.offset)
        payload = data[info.offset + eff.BLOCK_HEADER.size : info.end]
        plain_length = header.uncompressed_length
        if index == block and layer == "arrow":
            plain = payload_damage(zstandard.ZstdDecompressor().decompress(payload))
            payload, plain_length = zstandard.ZstdCompressor().compress(plain), len(plain)
        elif index == block:
            payload = payload_damage(payload)
        offset = sum(map(len, out))
        out += [
            eff.pack_block_header(
                index,
                info.first_id,
                info.count,
                plain_length,
                payload,
                info.min_time_ms,
                info.max_time_ms,
                info.skipped_ids,
            ),
            payload,
        ]
        infos.append(
            eff.BlockInfo(
                offset, info.first_id, info.count, len(payload), info.min_time_ms, info.max_time_ms, info.skipped_ids
            )
        )
    forged = b"".join(out)
    return forged, eff.pack_toc(first_id, len(forged), infos)
