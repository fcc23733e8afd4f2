"""CompressContent: every format round trips on empty, small and multi-chunk contents;
content made by other implementations decodes (samples checked in, and the command
line tools run here when present, both ways); `use-mime-type-attribute` and
`update_filename` behave as NiFi's; damaged streams of every kind go to `failure`
unchanged, penalized, with `compress.error`; decoding is bounded in memory."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import random
import shutil
import struct
import subprocess
import threading
from pathlib import Path

import pytest

from flow.commit import HeldCommitter
from flow.errors import FlowDefinitionError
from flow.loading import parse_flow
from flow.memory_content import InMemoryContentRepository
from flow.processors.compress import FORMATS, FORMATS_BY_MIME_TYPE, SNAPPY_STREAM_IDENTIFIER, snappy_masked_crc
from tests.conftest import service_unavailable
from tests.unit.flow.test_processors import run
from tests.unit.flow.test_unreadable_content import CORRUPTED, NOW, PENALTY_MS, Bench

SAMPLES = Path(__file__).parent / "samples"
SAMPLE_TEXT = (SAMPLES / "sample.txt").read_bytes()
EXTENSIONS = {
    "gzip": ".gz",
    "zstd": ".zst",
    "lz4-framed": ".lz4",
    "snappy-framed": ".sz",
    "bzip2": ".bz2",
    "xz-lzma2": ".xz",
}
MIME_TYPES = {
    "gzip": "application/gzip",
    "zstd": "application/zstd",
    "lz4-framed": "application/x-lz4-framed",
    "snappy-framed": "application/x-snappy-framed",
    "bzip2": "application/x-bzip2",
    "xz-lzma2": "application/x-xz",
}
TOOLS = {"gzip": ["gzip"], "zstd": ["zstd", "-q"], "xz-lzma2": ["xz"], "bzip2": ["bzip2"], "lz4-framed": ["lz4", "-q"]}


def content_of(size: int, seed: int = 7) -> bytes:
    """`size` bytes, half random and half text, so that every codec has work to do."""
    chooser = random.Random(seed)
    pieces, total = [], 0
    while total < size:
        piece = chooser.randbytes(4096) if chooser.random() < 0.5 else SAMPLE_TEXT
        pieces.append(piece)
        total += len(piece)
    return b"".join(pieces)[:size]


def compress(fmt: str, data: bytes, attributes=None, **properties) -> tuple[dict, bytes]:
    out = run(
        "CompressContent",
        {"mode": "compress", "compression_format": fmt, **properties},
        [(attributes or {}, data)],
    )
    assert "failure" not in out, out["failure"][0][0]
    ((attributes, compressed),) = out["success"]
    return attributes, compressed


def decompress(fmt: str, data: bytes, attributes=None, **properties) -> dict:
    return run(
        "CompressContent", {"mode": "decompress", "compression_format": fmt, **properties}, [(attributes or {}, data)]
    )


def decompressed(fmt: str, data: bytes, attributes=None, **properties) -> tuple[dict, bytes]:
    out = decompress(fmt, data, attributes, **properties)
    assert "failure" not in out, out["failure"][0][0]
    ((attributes, plain),) = out["success"]
    return attributes, plain


def failure_of(fmt: str, data: bytes, attributes=None) -> str:
    """The `compress.error` of `data` sent to failure, checked to leave it unchanged."""
    out = decompress(fmt, data, attributes)
    assert "success" not in out, f"{fmt} decoded damaged content"
    ((attributes, kept),) = out["failure"]
    assert kept == data
    return attributes["compress.error"]


# -- round trips ----------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 1000, 3 * (1 << 20) + 17], ids=["empty", "one byte", "small", "3 MB"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_format_round_trips(fmt, size):
    data = content_of(size)
    attributes, compressed = compress(fmt, data, {"mime.type": "text/plain"})
    assert attributes["mime.type"] == MIME_TYPES[fmt]
    if size > 1000:
        assert len(compressed) < len(data)
    attributes, plain = decompressed(fmt, compressed, attributes)
    assert plain == data
    assert "mime.type" not in attributes  # no longer known, as NiFi's


@pytest.mark.parametrize("fmt", [name for name, f in FORMATS.items() if f.levels is not None])
def test_each_level_a_format_takes_round_trips(fmt):
    data = content_of(20_000)
    levels = FORMATS[fmt].levels
    assert levels is not None
    sizes = {}
    for level in (levels.start, levels.stop - 1):
        _, compressed = compress(fmt, data, compression_level=level)
        assert decompressed(fmt, compressed)[1] == data
        sizes[level] = len(compressed)
    assert sizes[levels.stop - 1] <= sizes[levels.start]


def test_formats_and_mime_types_are_nifis():
    assert {name: f.mime_type for name, f in FORMATS.items()} == MIME_TYPES
    assert {name: f.extension for name, f in FORMATS.items()} == EXTENSIONS
    for mime_type, fmt in FORMATS_BY_MIME_TYPE.items():
        assert mime_type == fmt.mime_type or mime_type in ("application/x-gzip", "application/bzip2")


# -- content made elsewhere -------------------------------------------------------------


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_samples_made_by_other_implementations_decode(fmt):
    sample = (SAMPLES / f"sample.txt{EXTENSIONS[fmt]}").read_bytes()
    assert decompressed(fmt, sample)[1] == SAMPLE_TEXT


@pytest.mark.parametrize("fmt", list(TOOLS))
def test_the_command_line_tools_read_ours_and_we_read_theirs(fmt):
    tool = TOOLS[fmt]
    if shutil.which(tool[0]) is None:  # a skip only outside CI: with CI=true, a failure
        service_unavailable(tool[0], FileNotFoundError("not installed; `custody services install` installs it"))
    data = content_of(3 * (1 << 20) + 5, seed=11)
    theirs = subprocess.run([*tool, "-c"], input=data, capture_output=True, check=True).stdout
    assert decompressed(fmt, theirs)[1] == data
    _, ours = compress(fmt, data, compression_level=FORMATS[fmt].levels.start if FORMATS[fmt].levels else 1)
    assert subprocess.run([*tool, "-d", "-c"], input=ours, capture_output=True, check=True).stdout == data


def test_concatenated_streams_decode_as_one_content():
    first, second = content_of(70_000, seed=1), content_of(5_000, seed=2)
    both = first + second
    assert decompressed("gzip", gzip.compress(first) + gzip.compress(second))[1] == both
    assert decompressed("bzip2", bz2.compress(first) + bz2.compress(second))[1] == both
    xz = lzma.compress(first) + bytes(8) + lzma.compress(second) + bytes(4)  # stream padding
    assert decompressed("xz-lzma2", xz)[1] == both
    for fmt in ("zstd", "lz4-framed", "snappy-framed"):
        parts = [compress(fmt, part)[1] for part in (first, second)]
        assert decompressed(fmt, b"".join(parts))[1] == both


def test_skippable_frames_and_chunks_are_skipped():
    _, zstd_frame = compress("zstd", b"payload")
    skippable = struct.pack("<II", 0x184D2A53, 3) + b"abc"
    assert decompressed("zstd", skippable + zstd_frame + skippable)[1] == b"payload"
    data = b"x" * 100
    crc = struct.pack("<I", snappy_masked_crc(data))
    framed = (
        SNAPPY_STREAM_IDENTIFIER
        + struct.pack("<I", 0xFE | 3 << 8)  # padding
        + b"\0\0\0"
        + struct.pack("<I", 0x80 | 2 << 8)  # reserved, skippable
        + b"??"
        + struct.pack("<I", 0x01 | (4 + len(data)) << 8)  # uncompressed data
        + crc
        + data
    )
    assert decompressed("snappy-framed", framed)[1] == data


# -- use-mime-type-attribute and update_filename -------------------------------------


@pytest.mark.parametrize("mime_type", sorted(FORMATS_BY_MIME_TYPE))
def test_use_mime_type_attribute_picks_the_format(mime_type):
    fmt = FORMATS_BY_MIME_TYPE[mime_type].name
    _, compressed = compress(fmt, SAMPLE_TEXT)
    attributes, plain = decompressed("use-mime-type-attribute", compressed, {"mime.type": mime_type})
    assert plain == SAMPLE_TEXT and "mime.type" not in attributes


def test_use_mime_type_attribute_without_a_compression_type():
    out = decompress("use-mime-type-attribute", b"plain text", {"mime.type": "text/plain"})
    ((attributes, data),) = out["success"]  # passed on untouched, as NiFi's
    assert data == b"plain text" and attributes["mime.type"] == "text/plain"
    out = decompress("use-mime-type-attribute", b"plain text", {})
    ((attributes, data),) = out["failure"]
    assert data == b"plain text" and "mime.type" in attributes["compress.error"]


def test_use_mime_type_attribute_is_for_decompression_only():
    with pytest.raises(FlowDefinitionError, match="use-mime-type-attribute"):
        run("CompressContent", {"mode": "compress"}, [({}, b"x")])


@pytest.mark.parametrize(
    "fmt, level, refused",
    [
        ("gzip", 10, True),
        ("gzip", 0, False),
        ("bzip2", 0, True),
        ("xz-lzma2", 9, False),
        ("zstd", 22, False),
        ("zstd", 0, True),
        ("lz4-framed", 22, False),  # takes no level: any is ignored, as NiFi's
        ("snappy-framed", 0, False),
    ],
)
def test_a_level_outside_the_formats_range_is_refused_at_load(fmt, level, refused):
    definition = {
        "processors": [
            {
                "id": "c",
                "type": "CompressContent",
                "properties": {"mode": "compress", "compression_format": fmt, "compression_level": level},
                "auto_terminate": ["success", "failure"],
            }
        ]
    }
    if refused:
        with pytest.raises(FlowDefinitionError, match="compression_level"):
            parse_flow(definition)
    else:
        parse_flow(definition)
    definition["processors"][0]["properties"]["mode"] = "decompress"
    parse_flow(definition)  # decompression takes no level


def test_update_filename_adds_and_removes_the_extension():
    attributes, compressed = compress("zstd", b"abc", {"filename": "data.json"}, update_filename=True)
    assert attributes["filename"] == "data.json.zst"
    attributes, _ = decompressed("zstd", compressed, {"filename": "DATA.JSON.ZST"}, update_filename=True)
    assert attributes["filename"] == "DATA.JSON"  # the extension is matched in any case, as NiFi's
    attributes, _ = decompressed("zstd", compressed, {"filename": "data.json.gz"}, update_filename=True)
    assert attributes["filename"] == "data.json.gz"  # not this format's extension: left alone
    attributes, _ = decompressed("zstd", compressed, {"filename": "data.json.zst"})
    assert attributes["filename"] == "data.json.zst"
    attributes, _ = compress("gzip", b"abc", {"filename": "a"})
    assert attributes["filename"] == "a"
    attributes, _ = decompressed(
        "use-mime-type-attribute",
        compressed,
        {"mime.type": "application/zstd", "filename": "x.zst"},
        update_filename=True,
    )
    assert attributes["filename"] == "x"


# -- damaged streams --------------------------------------------------------------------


def _flipped(data: bytes, index: int) -> bytes:
    damaged = bytearray(data)
    damaged[index] ^= 0x55
    return bytes(damaged)


# Where each sample keeps a checksum of the data: the gzip member's CRC-32, zstd's and
# LZ4's content checksum (last bytes), the xz stream footer's CRC-32, the bzip2
# stream's combined CRC (bit-aligned, within the last five bytes), and the masked
# CRC-32C of the first data chunk of the snappy stream (after its 10-byte identifier
# and the 4-byte header of a padding chunk of 6 bytes, then the data chunk's header).
CHECKSUM_AT = {"gzip": -8, "zstd": -1, "lz4-framed": -1, "xz-lzma2": -12, "bzip2": -2, "snappy-framed": 10 + 4 + 6 + 4}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_damaged_streams_go_to_failure_unchanged(fmt):
    sample = (SAMPLES / f"sample.txt{EXTENSIONS[fmt]}").read_bytes()
    assert "not " in failure_of(fmt, b"Z" + sample[1:])  # a wrong magic number
    assert "not " in failure_of(fmt, SAMPLE_TEXT)  # not compressed at all
    assert "truncated" in failure_of(fmt, sample[: len(sample) // 2])
    assert "truncated" in failure_of(fmt, sample[:-1]) or fmt == "bzip2"
    failure_of(fmt, sample[:-1])  # bzip2 may say its data is invalid instead: still refused
    failure_of(fmt, _flipped(sample, CHECKSUM_AT[fmt]))  # a checksum that does not match
    failure_of(fmt, _flipped(sample, len(sample) // 2))  # a corrupt block
    failure_of(fmt, sample + b"garbage!")  # trailing data
    if fmt != "snappy-framed":
        assert "empty" in failure_of(fmt, b"")


def test_the_reasons_say_what_is_wrong():
    gz = (SAMPLES / "sample.txt.gz").read_bytes()
    assert failure_of("gzip", _flipped(gz, -8)).startswith("cannot decompress gzip: corrupt gzip data: ")
    assert "trailing data after gzip stream 1" in failure_of("gzip", gz + b"garbage!")
    zst = (SAMPLES / "sample.txt.zst").read_bytes()
    assert "checksum" in failure_of("zstd", _flipped(zst, -1))
    sz = (SAMPLES / "sample.txt.sz").read_bytes()
    assert "CRC mismatch" in failure_of("snappy-framed", _flipped(sz, CHECKSUM_AT["snappy-framed"]))
    reserved = SNAPPY_STREAM_IDENTIFIER + struct.pack("<I", 0x02 | 1 << 8) + b"x"
    assert "reserved unskippable" in failure_of("snappy-framed", reserved)
    too_long = SNAPPY_STREAM_IDENTIFIER + struct.pack("<I", 0x01 | (4 + 65537) << 8) + bytes(4 + 65537)
    assert "65541 bytes long" in failure_of("snappy-framed", too_long)
    xz = lzma.compress(b"abc") + bytes(3)
    assert "padding" in failure_of("xz-lzma2", xz)
    assert decompressed("snappy-framed", b"")[1] == b""  # what Go's writer makes of nothing


def test_failures_are_penalized_and_unreadable_content_says_so():
    bench = Bench("CompressContent", {"mode": "decompress", "compression_format": "gzip"})
    sample = (SAMPLES / "sample.txt.gz").read_bytes()
    good, corrupt, damaged = bench.add(sample, sample[:50], sample)
    bench.damage(damaged, CORRUPTED, good=20)
    bench.run_once()
    ((attributes, data, penalty),) = bench.drain("success")
    assert data == SAMPLE_TEXT and penalty == 0
    failed = bench.drain("failure")
    assert [each[0]["i"] for each in failed] == ["1", "2"]
    (corrupt_attributes, kept, corrupt_penalty), (damaged_attributes, _, damaged_penalty) = failed
    assert kept == sample[:50] and "truncated" in corrupt_attributes["compress.error"]
    assert damaged_attributes["content.error"].startswith("ContentCorrupted: ")
    assert "compress.error" not in damaged_attributes
    assert corrupt_penalty == damaged_penalty == NOW + PENALTY_MS


# -- memory ------------------------------------------------------------------------------


class DigestContent(InMemoryContentRepository):
    """Content that keeps only the SHA-256 of what is written to it, so that a test can
    write a content larger than it would hold in memory."""

    def __init__(self):
        super().__init__()
        self.digests: dict = {}
        self.digesting = False  # until then, content is kept as usual

    def write(self):
        return _DigestWriter(self) if self.digesting else super().write()


class _DigestWriter:
    def __init__(self, repository: DigestContent):
        self._repository = repository
        self._hash = hashlib.sha256()
        self._size = 0

    def write(self, data) -> int:
        self._hash.update(data)
        self._size += len(data)
        return len(data)

    def close(self, *, sync=None, retire=False):
        claim = self._repository._store(b"")
        self._repository.digests[claim.resource] = (self._size, self._hash.hexdigest())
        return claim

    def abort(self) -> None:
        pass


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def test_decompressing_200_mb_of_zeros_stays_in_bounded_memory():
    size = 200 << 20
    compressor = FORMATS["zstd"]
    compressed = io.BytesIO()
    compressor.compress(_Zeros(size), compressed, 3)
    assert len(compressed.getvalue()) < 100_000
    bench = Bench("CompressContent", {"mode": "decompress", "compression_format": "zstd"})
    bench.content = DigestContent()
    bench.committer = HeldCommitter(bench.shard, bench.content)
    bench.add(compressed.getvalue())
    bench.content.digesting = True
    baseline = peak = _resident_bytes()
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.002):  # a sample every 2 ms until the run is over
            peak = max(peak, _resident_bytes())

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        bench.run_once()
    finally:
        done.set()
        sampler.join()
    flowfiles, _ = bench.out["success"].poll(10, NOW)
    (flowfile,) = flowfiles
    expected = hashlib.sha256()
    for _ in range(size >> 20):
        expected.update(bytes(1 << 20))
    assert flowfile.size == size
    assert bench.content.digests[flowfile.content_claim.resource] == (size, expected.hexdigest())
    assert peak - baseline < 48 << 20, f"resident memory grew by {(peak - baseline) >> 20} MB"


class _Zeros:
    def __init__(self, size: int):
        self._left = size

    def read(self, size: int = -1) -> bytes:
        size = self._left if size < 0 else min(size, self._left)
        self._left -= size
        return bytes(size)
