"""PutParquet's dataset: the batch manifest's format (and a sample of its first
version), commit by the manifest's rename, roll-forward of an interrupted move."""

import os

import pytest

from flow.spark.datasets import ParquetDataset
from flow.spark.manifest_format import BatchManifest, ManifestError
from repositories.storage import LocalStorage

SAMPLE = os.path.join(os.path.dirname(__file__), "data", "parquet-batch-manifest1.json")


def test_the_first_versions_manifest_still_reads():
    with open(SAMPLE, "rb") as file:
        manifest = BatchManifest.decode(file.read(), SAMPLE)
    assert (manifest.batch, manifest.shard, manifest.epoch) == ("0123456789abcdef0123", "n1-7", 3)
    assert len(manifest.flowfiles) == 2 and manifest.files[0][1].endswith("part-0123456789abcdef0123-00000.parquet")
    assert BatchManifest.decode(manifest.encode()) == manifest


@pytest.mark.parametrize(
    "data, words",
    [
        (b"\xff\xfe", "not UTF-8 JSON"),
        (b'{"format": "something else", "version": 1}', "format is not"),
        (b'{"format": "custody.parquet-batch", "version": 2}', "version 2"),
        (
            b'{"format": "custody.parquet-batch", "version": 1, "batch": "b", "shard": "s", "epoch": -1,'
            b' "flowfiles": [], "files": []}',
            "wrong type",
        ),
        (
            b'{"format": "custody.parquet-batch", "version": 1, "batch": "b", "shard": "s", "epoch": 0,'
            b' "flowfiles": ["a"], "files": [["only one"]]}',
            "wrong type",
        ),
    ],
)
def test_a_bad_manifest_is_refused_naming_the_file(data, words):
    with pytest.raises(ManifestError, match=words) as raised:
        BatchManifest.decode(data, "/d/_custody/batches/b.json")
    assert "/d/_custody/batches/b.json" in str(raised.value)


def staged_batch(tmp_path, batch="b" * 20, flowfiles=("f1", "f2")):
    staging = tmp_path / "staging" / batch
    (staging / "day=1").mkdir(parents=True)
    files = []
    for number in range(2):
        staged = staging / "day=1" / f"part-0000{number}.parquet"
        staged.write_bytes(b"PAR1 data %d" % number)
        files.append((str(staged), str(tmp_path / "dataset" / "day=1" / f"part-{batch}-{number:05d}.parquet")))
    manifest = BatchManifest(batch, "s", 0, flowfiles, tuple(files))
    (staging / "manifest.json").write_bytes(manifest.encode())
    return manifest, str(staging / "manifest.json")


def test_a_batch_is_committed_by_its_manifest_and_an_interrupted_move_rolls_forward(tmp_path):
    dataset = ParquetDataset(LocalStorage(), str(tmp_path / "dataset"))
    manifest, staged_manifest = staged_batch(tmp_path)
    assert dataset.committed() == {}
    dataset.commit(manifest, staged_manifest)
    # The writer died here: the batch is committed, its files are still in staging.
    assert set(dataset.committed()) == {"f1", "f2"}
    fresh = ParquetDataset(LocalStorage(), str(tmp_path / "dataset"))
    assert fresh.roll_forward(fresh.committed()["f1"]) == 2
    assert fresh.roll_forward(manifest) == 0  # again: nothing left to move, nothing moved twice
    assert sorted(os.listdir(tmp_path / "dataset" / "day=1")) == [
        f"part-{'b' * 20}-00000.parquet",
        f"part-{'b' * 20}-00001.parquet",
    ]
    fresh.forget(manifest)
    assert fresh.committed() == {}


def test_a_second_commit_of_the_same_batch_keeps_the_first(tmp_path):
    dataset = ParquetDataset(LocalStorage(), str(tmp_path / "dataset"))
    first, staged_first = staged_batch(tmp_path)
    dataset.commit(first, staged_first)
    again = BatchManifest(first.batch, "s", 1, first.flowfiles, ())
    (tmp_path / "again.json").write_bytes(again.encode())
    assert dataset.commit(again, str(tmp_path / "again.json")) == first


def test_manifests_past_their_retention_are_deleted(tmp_path):
    dataset = ParquetDataset(LocalStorage(), str(tmp_path / "dataset"), retention_s=60.0)
    manifest, staged_manifest = staged_batch(tmp_path)
    dataset.commit(manifest, staged_manifest)
    path = dataset.manifest_path(manifest.batch)
    os.utime(path, (os.path.getmtime(path) - 120, os.path.getmtime(path) - 120))
    assert dataset.committed() == {}
    assert not os.path.exists(path)
