"""Claims whose bytes HDFS vouches for, so that Spark reads them in place unread before.

An input claim that fills its resource file whole is read by Spark where it lies. Its
bytes must be the ones the node checksummed: a file rewritten through the HDFS API
keeps HDFS's own CRCs consistent with the new bytes, so Spark's reads alone would not
notice. The executors used to read every such claim once more to check it against
its checksum file. This module checks it without reading the file:

    HDFS composes the file's CRC-32C from its blocks' metadata (`getFileChecksum` with
    `dfs.checksum.combine.mode=COMPOSITE_CRC`: the DataNodes read their checksum files,
    about 1/128 of the data, not the data);
    the node composes the same CRC from the claim's checksum records (format 2 holds
    a CRC-32C per block: `repositories.content.crc32c_math`).

Where the two agree, HDFS's CRCs describe the very bytes the node wrote, and Spark's
reads check every byte it reads against them (HDFS clients verify what they read).
Anything else (a checksum file of format 1, a file longer or shorter than the claim,
a checksum HDFS gives in another form, an error on the way) leaves the claim to the
executors' check by reading, as before; nothing is trusted on a maybe.

The node reads only metadata here: each claim's checksum file (20 bytes per 64 KB of
content) and HDFS's answer. The calls run on a few threads; py4j gives each its own
connection to Spark's JVM.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from repositories.content.checksum_format import CRC32C_VERSION, ChecksumFormatError
from repositories.content.checksums import ChecksumRecords
from repositories.content.crc32c_math import compose

if TYPE_CHECKING:
    from repositories.storage import Storage

log = logging.getLogger(__name__)

ALGORITHM = "COMPOSITE-CRC32C"  # what HDFS names a whole-file CRC-32C
THREADS = 8


def crc_of_records(checksum_file: bytes, length: int) -> int | None:
    """The CRC-32C of resource bytes [0, `length`) composed from a checksum file's
    records; None when the file is not of format 2 or its records do not cover exactly
    those bytes, one after another."""
    try:
        records = ChecksumRecords(io.BytesIO(checksum_file), len(checksum_file))
        if records.version != CRC32C_VERSION:
            return None
        blocks = list(records.covering(0, length)) if length else []
    except ChecksumFormatError:
        return None
    if (blocks[-1].end if blocks else 0) != length:
        return None
    return compose((block.crc, block.length) for block in blocks)


class HdfsFileChecksums:
    """Whole-file CRC-32Cs from HDFS, through the Hadoop client of Spark's JVM. Its own
    FileSystem instance (Hadoop's cache would hand back one configured without the
    combine mode); `close` it."""

    def __init__(self, spark, uri: str):
        jvm = spark._jvm
        conf = jvm.org.apache.hadoop.conf.Configuration(spark._jsc.hadoopConfiguration())
        conf.set("dfs.checksum.combine.mode", "COMPOSITE_CRC")
        self._jvm = jvm
        self._fs = jvm.org.apache.hadoop.fs.FileSystem.newInstance(jvm.java.net.URI(uri), conf)

    def crc32c(self, uri: str) -> int | None:
        checksum = self._fs.getFileChecksum(self._jvm.org.apache.hadoop.fs.Path(uri))
        if checksum is None or checksum.getAlgorithmName() != ALGORITHM:
            return None
        return int.from_bytes(bytes(checksum.getBytes()), "big")

    def close(self) -> None:
        self._fs.close()


def vouched_by_hdfs(spark, storage: Storage, uri, candidates: Sequence[tuple[int, str, str, int]]) -> dict[int, str]:
    """Of `candidates` (index, resource path, checksum path, claim length: claims that
    fill their resource files whole), those HDFS vouches for: index -> resource path.
    `uri(path)` is what Spark's Hadoop client calls a path of `storage`."""
    if not candidates:
        return {}
    try:
        checksums = HdfsFileChecksums(spark, uri("/"))
    except Exception as error:  # noqa: BLE001 - any failure here only means "check by reading"
        log.warning(
            "HDFS file checksums are not available (%s: %s); the executors check the inputs by reading them",
            type(error).__name__,
            error,
        )
        return {}

    def vouch(candidate):
        index, path, checksum_path, length = candidate
        try:
            if storage.status(path).length != length:
                return None
            expected = crc_of_records(storage.read(checksum_path), length)
            if expected is None or checksums.crc32c(uri(path)) != expected:
                return None
        except Exception as error:  # noqa: BLE001 - as above: the executors read it
            log.debug("claim %d at %s is checked by reading: %s: %s", index, path, type(error).__name__, error)
            return None
        return index, path

    try:
        with ThreadPoolExecutor(min(THREADS, len(candidates)), thread_name_prefix="hdfs-checksum") as pool:
            return dict(found for found in pool.map(vouch, candidates) if found is not None)
    finally:
        checksums.close()
