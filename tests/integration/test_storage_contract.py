"""The storage contract, on local disk and on the real HDFS: one suite, two backends."""

import pytest

from repositories.storage import StorageFileExists, StorageFileNotFound, join, parent


def write(store, name, body, *, overwrite=False):
    path = join(store.root, name)
    with store.storage.create(path, overwrite=overwrite) as handle:
        handle.write(body)
        handle.sync()
    return path


def test_create_sync_read_back(any_store):
    path = write(any_store, "a", b"hello world")
    assert any_store.storage.read(path) == b"hello world"
    assert any_store.storage.status(path).length == 11
    assert not any_store.storage.status(path).is_dir


def test_append_extends_and_tell_tracks_position(local_store):
    """Local disk only: HDFS refuses appends (test_hdfs_close)."""
    assert local_store.storage.reopens_for_append
    path = write(local_store, "log", b"one;")
    with local_store.storage.append(path) as handle:
        assert handle.tell() == 4
        handle.write(b"two;")
        handle.write(memoryview(b"three;"))
        assert handle.tell() == 14
        handle.sync()
    assert local_store.storage.read(path) == b"one;two;three;"


def test_range_reads(any_store):
    body = bytes(range(256)) * 64
    path = write(any_store, "r", body)
    storage = any_store.storage
    assert storage.read(path, 0, 10) == body[:10]
    assert storage.read(path, 1000, 333) == body[1000:1333]
    assert storage.read(path, len(body) - 5, 100) == body[-5:]
    assert storage.read(path, len(body) + 10, 5) == b""
    assert storage.read(path, 100) == body[100:]
    with storage.open_read(path) as stream:
        stream.seek(4000)
        assert stream.read(96) == body[4000:4096]


def test_create_never_makes_parents(any_store):
    path = join(any_store.root, "missing", "child")
    with pytest.raises(StorageFileNotFound) as caught:
        any_store.storage.create(path)
    assert "missing" in str(caught.value)
    assert not any_store.storage.exists(join(any_store.root, "missing"))


def test_create_refuses_existing_unless_overwrite(any_store):
    path = write(any_store, "x", b"first")
    with pytest.raises(StorageFileExists):
        any_store.storage.create(path)
    write(any_store, "x", b"second", overwrite=True)
    assert any_store.storage.read(path) == b"second"


def test_atomic_rename_file_and_directory(any_store):
    storage = any_store.storage
    src = write(any_store, "partial", b"snapshot body")
    dst = join(any_store.root, "snapshot")
    storage.rename(src, dst)
    assert not storage.exists(src)
    assert storage.read(dst) == b"snapshot body"

    replacement = write(any_store, "partial2", b"newer")
    with pytest.raises(StorageFileExists):
        storage.rename(replacement, dst)
    assert storage.read(dst) == b"snapshot body"
    storage.rename(replacement, dst, overwrite=True)
    assert storage.read(dst) == b"newer"

    shard = join(any_store.root, "shard-1")
    storage.mkdir(shard)
    write(any_store, "shard-1/journal", b"j")
    fenced = join(any_store.root, "shard-1-fenced-2")
    storage.rename(shard, fenced)
    assert not storage.exists(shard)
    assert storage.read(join(fenced, "journal")) == b"j"


def test_list_is_sorted_and_typed(any_store):
    storage = any_store.storage
    for name in ("b", "a", "c"):
        write(any_store, name, name.encode() * 3)
    storage.mkdir(join(any_store.root, "dir"))
    listed = storage.list(any_store.root)
    assert [status.name for status in listed] == ["a", "b", "c", "dir"]
    assert [status.is_dir for status in listed] == [False, False, False, True]
    assert listed[0].length == 3
    assert listed[0].path == join(any_store.root, "a")
    with pytest.raises(StorageFileNotFound):
        storage.list(join(any_store.root, "nope"))


def test_delete_file_and_tree(any_store):
    storage = any_store.storage
    path = write(any_store, "gone", b"x")
    assert storage.delete(path) is True
    assert storage.delete(path) is False
    assert not storage.exists(path)
    tree = join(any_store.root, "tree")
    storage.mkdir(join(tree, "deep"), parents=True)
    write(any_store, "tree/deep/f", b"x")
    storage.delete(tree, recursive=True)
    assert not storage.exists(tree)


def test_mkdir_without_parents_fails_and_exist_ok(any_store):
    storage = any_store.storage
    with pytest.raises(StorageFileNotFound):
        storage.mkdir(join(any_store.root, "p", "q"))
    storage.mkdir(join(any_store.root, "p"))
    with pytest.raises(StorageFileExists):
        storage.mkdir(join(any_store.root, "p"))
    storage.mkdir(join(any_store.root, "p"), exist_ok=True)


def test_synced_bytes_are_visible_to_a_second_reader_length(any_store):
    storage = any_store.storage
    path = join(any_store.root, "open")
    handle = storage.create(path)
    try:
        handle.write(b"z" * 5000)
        handle.sync()
        assert storage.status(path).length == 5000
    finally:
        handle.close()
    assert storage.read(path) == b"z" * 5000


def test_arrow_view_lists_and_reads(any_store):
    import pyarrow.fs

    path = write(any_store, "arrow", b"columnar")
    arrow = any_store.storage.arrow_filesystem()
    info = arrow.get_file_info(path)
    assert info.type == pyarrow.fs.FileType.File and info.size == 8
    listed = arrow.get_file_info(pyarrow.fs.FileSelector(any_store.root))
    assert [entry.base_name for entry in listed] == ["arrow"]
    with arrow.open_input_file(path) as stream:
        assert stream.read_at(3, 2) == b"lum"


def test_sync_data_leaves_a_new_name_to_the_caller_who_syncs_its_directory_once(any_store):
    storage = any_store.storage
    path = join(any_store.root, "named")
    with storage.create(path) as handle:
        handle.write(b"bytes")
        handle.sync_data()
        directory = handle.unsynced_directory()
        assert directory in (None, parent(path))  # None where a name needs no sync (HDFS)
        if directory is not None:
            storage.sync_directory(directory)
            handle.directory_synced()
        assert handle.unsynced_directory() is None
        handle.write(b" more")
        handle.sync()
        assert handle.unsynced_directory() is None
    assert storage.read(path) == b"bytes more"
    if storage.reopens_for_append:
        with storage.append(path) as handle:
            assert handle.unsynced_directory() is None  # an existing file's name is durable already
