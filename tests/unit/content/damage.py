"""Damage done to content files on disk by the tests: a bit flipped in place."""

from __future__ import annotations


def flip_bit(path: str, offset: int, mask: int = 0x01) -> None:
    """Flip the bits of `mask` in the byte at `offset` of the file at `path`."""
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([byte ^ mask]))
