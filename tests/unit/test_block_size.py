"""The block size of the files Custody creates on HDFS (`replication.block_size`)."""

from __future__ import annotations

import pytest

from replication.block_size import DEFAULT_BLOCK_SIZE, block_size_setting


def test_custody_asks_for_16_mib_blocks_unless_told():
    assert block_size_setting({}) == DEFAULT_BLOCK_SIZE == 16 * 1024 * 1024
    assert block_size_setting({"dfs.client.socket-timeout": "5000"}) == DEFAULT_BLOCK_SIZE


@pytest.mark.parametrize(
    ("text", "size"),
    [("134217728", 128 << 20), ("128m", 128 << 20), ("128M", 128 << 20), (" 1g ", 1 << 30), ("512k", 512 << 10)],
)
def test_dfs_blocksize_is_read_as_hadoop_reads_it(text, size):
    assert block_size_setting({"dfs.blocksize": text}) == size


@pytest.mark.parametrize("text", ["", "m", "lots", "1.5m", "-1m", "0", "1000"])
def test_a_size_hdfs_would_not_take_is_one_clear_error(text):
    with pytest.raises(ValueError, match="dfs.blocksize") as raised:
        block_size_setting({"dfs.blocksize": text})
    assert repr(text) in str(raised.value)
