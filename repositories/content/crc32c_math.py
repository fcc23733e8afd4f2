"""CRC-32C (Castagnoli) of a whole stream from the CRCs of its pieces.

A checksum file of format 2 holds the CRC-32C of every block of a resource. HDFS
checksums what it stores with CRC-32C too, and can give a file's CRC-32C whole,
composed from its blocks' metadata without reading the file (`getFileChecksum` with
`dfs.checksum.combine.mode=COMPOSITE_CRC`). `compose` gives the same figure from a
checksum file's records, so the two can be compared without reading a byte.

The arithmetic is that of zlib's crc32_combine, for the Castagnoli polynomial: for
pieces A then B, crc(AB) = crc(A) * x^(8 * len(B)) mod P, xor crc(B), with
polynomials over GF(2) in the reflected bit order CRCs use. Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable

from crc32c import crc32c

POLYNOMIAL = 0x82F63B78  # Castagnoli, reflected
_ONE = 1 << 31  # the polynomial 1 (x^0), reflected


def _multiply(a: int, b: int) -> int:
    """a(x) * b(x) modulo P (both reflected)."""
    product = 0
    bit = _ONE
    while a:
        if a & bit:
            product ^= b
            a ^= bit
        bit >>= 1
        b = (b >> 1) ^ POLYNOMIAL if b & 1 else b >> 1
    return product


def _powers_of_x() -> list[int]:
    """x^(2^k) mod P for k = 0 .. 63."""
    powers, power = [], _ONE >> 1  # x^1
    for _ in range(64):
        powers.append(power)
        power = _multiply(power, power)
    return powers


_X_TO_2_TO_THE = _powers_of_x()


def shift_operator(length: int) -> int:
    """x^(8 * length) mod P: what a CRC is multiplied by when `length` bytes follow it."""
    result, k, n = _ONE, 3, length  # 2^3 bits in a byte
    while n:
        if n & 1:
            result = _multiply(_X_TO_2_TO_THE[k % 64], result)
        n >>= 1
        k += 1
    return result


def combine(first: int, second: int, second_length: int) -> int:
    """The CRC-32C of A then B, from crc(A) = `first`, crc(B) = `second` and len(B)."""
    return _multiply(shift_operator(second_length), first) ^ second


def compose(pieces: Iterable[tuple[int, int]]) -> int:
    """The CRC-32C of the pieces (crc, length) one after another. Blocks of one length
    (most of a checksum file's) share one shift operator."""
    total, operators = 0, {}
    for crc, length in pieces:
        operator = operators.get(length)
        if operator is None:
            operator = operators[length] = shift_operator(length)
        total = _multiply(operator, total) ^ crc
    return total


__all__ = ["combine", "compose", "crc32c", "shift_operator"]
