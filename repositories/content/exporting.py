"""Exporting claims into local files: the content repository's side of NiFi's
`ProcessSession.exportTo(FlowFile, Path, append)`.

A sink that writes a FlowFile's content to a file (PutFile) need not bring the bytes
into Python: a claim in a local resource file is copied by the kernel, from the
resource file to the target file (`os.copy_file_range`: a copy inside the page cache,
or no copy at all where the file system shares extents). Its checksums still vouch
for every byte: `ClaimReader.export` reads each run of blocks into a buffer its thread
reuses, checks their CRCs there (C code, the GIL released), and only then has the
kernel copy that range. The bytes are read twice from the page cache (once into the
buffer, once by the kernel), which is cheaper than allocating a fresh megabyte per
read as a stream does, and on a file system with reflinks saves the write. A mapped
resource file would save the first copy, but a file cut short while mapped kills the
process with SIGBUS instead of raising `ContentTruncated`.

The bytes checked are the bytes copied: a resource file is only ever appended to
(`writing`), and fsck's repair renames a new file over it (`repair`), which leaves
an open descriptor on the old one.

Where the kernel cannot copy between the two files (another file system on an old
kernel, a file system without the call, a target opened for appending), the checked
bytes are written from the buffer; a claim that is not a local file (HDFS, a replica
that fails over, memory) is streamed through that buffer (`copy_stream`).
"""

from __future__ import annotations

import errno
import os
import threading

# Errors of `os.copy_file_range` that say the kernel will not copy between these two
# files (not that either is at fault): the bytes are written from user space instead.
NO_KERNEL_COPY = frozenset({errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL, errno.EBADF})
STREAM_CHUNK = 1 << 20  # what `copy_stream` reads at a time
# A thread keeps its buffer up to this size (a run of blocks `ClaimReader` checks at
# once, with a block on either side); a larger one, for a huge checksum block, is dropped.
KEPT_BUFFER = (4 << 20) + (128 << 10)

_reused = threading.local()


def reused_buffer(length: int) -> memoryview:
    """A writable view of `length` bytes, from a buffer this thread reuses: no fresh
    allocation (and no page faults) per read. Valid until the thread's next call."""
    buffer: bytearray | None = getattr(_reused, "buffer", None)
    if buffer is None or len(buffer) < length:
        buffer = bytearray(length)
        if length <= KEPT_BUFFER:
            _reused.buffer = buffer
    return memoryview(buffer)[:length]


def read_at(fd: int, offset: int, length: int) -> memoryview:
    """Up to `length` bytes of the file at `fd` from `offset`, into the thread's reused
    buffer (fewer only at the end of the file); the file's position does not move."""
    view = reused_buffer(length)
    got = 0
    while got < length:
        count = os.preadv(fd, [view[got:]], offset + got)
        if count == 0:
            break
        got += count
    return view[:got]


def write_all(fd: int, data) -> int:
    """Write all of `data` to `fd` (os.write may take less than it is given)."""
    view = memoryview(data)
    total = len(view)
    while view:
        view = view[os.write(fd, view) :]
    return total


def kernel_copy(source: int, target: int, offset: int, count: int) -> tuple[int, bool]:
    """Have the kernel copy `count` bytes of `source` from `offset` to `target` at its
    position (which moves past them). Returns (bytes copied, whether the kernel copies
    between these files): fewer than `count` with True when the source ended first (a
    file cut short); with False the caller writes the rest itself. Raises any other
    OSError (a full disk, a failing device)."""
    done = 0
    while done < count:
        try:
            copied = os.copy_file_range(source, target, count - done, offset + done)
        except OSError as error:
            if error.errno in NO_KERNEL_COPY:
                return done, False
            raise
        if copied == 0:
            break
        done += copied
    return done, True


def copy_stream(stream, target: int) -> int:
    """Everything `stream` (a binary stream with `readinto`) still yields, written to
    `target`, through the thread's reused buffer; the bytes copied."""
    total = 0
    while True:
        view = reused_buffer(STREAM_CHUNK)
        count = stream.readinto(view)
        if not count:
            return total
        total += write_all(target, view[:count])
