"""The block size of the files Custody creates on HDFS.

HDFS's default block is 128 MB, and the NameNode reserves room for a whole block of a
new file's size on each DataNode of its pipeline while it is written (below); Custody
asks for smaller blocks, and `dfs.blocksize` in the client settings (`[hdfs.config]`)
overrides that, as it does for Hadoop's own clients.
"""

from __future__ import annotations

# The block size of every file an `HdfsStorage` creates, unless its client settings name one
# (`dfs.blocksize`, which Hadoop's own clients also read for the files they create; a
# number of bytes, or with Hadoop's suffixes k, m, g, t). Smaller than HDFS's 128 MB
# default because of how the NameNode places a block: a DataNode is chosen only if its
# free space, less one block of the new file's size for every block scheduled on it and
# not yet reported finished, still holds one such block. Custody keeps files open
# (journals, content resources), and a block never finished (a hedge of a new file
# deleted while open, a writer given up on a dead pipeline) stays counted while other
# blocks keep being finished (the count is rolled every ten minutes, but finished blocks
# come off its older half first): in a long drill about 310 were counted on each
# DataNode, which at 128 MB refused every new block on a disk with 41 GB free. Most of Custody's files are
# small (content resources of about a megabyte, journals rolled at each checkpoint), so a
# smaller block costs the NameNode few more blocks; a large one is simply cut in more.
DEFAULT_BLOCK_SIZE = 16 * 1024 * 1024
_SIZE_SUFFIXES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
# A block holds whole checksum chunks (dfs.bytes-per-checksum, 512 by default); the
# NameNode also has a minimum of its own (dfs.namenode.fs-limits.min-block-size, 1 MB
# by default), which it enforces at the first create.
CHECKSUM_CHUNK = 512


def block_size_setting(config: dict[str, str]) -> int:
    """The block size of new files under client settings `config` (`DEFAULT_BLOCK_SIZE`
    unless `dfs.blocksize` says otherwise); ValueError naming the setting if it is not a
    size HDFS takes."""
    text = config.get("dfs.blocksize")
    if text is None:
        return DEFAULT_BLOCK_SIZE
    value = str(text).strip().lower()
    scale = _SIZE_SUFFIXES.get(value[-1:], 1)
    digits = value[:-1] if scale > 1 else value
    if not digits.isdigit():
        raise ValueError(f"dfs.blocksize must be a number of bytes, or one with k, m, g or t after it, not {text!r}")
    size = int(digits) * scale
    if size <= 0 or size % CHECKSUM_CHUNK:
        raise ValueError(f"dfs.blocksize {text!r} ({size} bytes) must be a positive multiple of {CHECKSUM_CHUNK} bytes")
    return size
