"""The commit record of a batch PutParquet wrote into a dataset: its on-disk format.

Path: `<dataset>/_custody/batches/<batch>.json` (Spark and other Parquet readers skip
directories whose names start with `_`). A batch is committed the moment its manifest
appears there (an atomic rename from the batch's staging directory); the data files it
lists may still be in staging then, and whoever reads the manifest next moves them
into place ("rolls it forward").

The file is UTF-8 JSON, one object, with exactly these members:

    format     "custody.parquet-batch"
    version    1
    batch      the batch id: 20 lowercase hex digits (`flow.spark.batches.batch_id`)
    shard      the shard whose processor wrote it (a string)
    epoch      the shard's epoch then (an integer >= 0)
    flowfiles  the ids of the batch's FlowFiles, sorted (strings)
    files      [staged, final] pairs: absolute paths, on the dataset's filesystem, of
               each data file in staging and where it goes in the dataset

A reader refuses any other `format`, a `version` above the one it knows, and a
manifest that lacks a member or has one of the wrong type (`ManifestError`, naming
the file).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

FORMAT = "custody.parquet-batch"
VERSION = 1


class ManifestError(ValueError):
    """A batch manifest that cannot be read; the message names the file and the fault."""


@dataclass(frozen=True)
class BatchManifest:
    batch: str
    shard: str
    epoch: int
    flowfiles: tuple[str, ...]
    files: tuple[tuple[str, str], ...]

    def encode(self) -> bytes:
        return json.dumps(
            {
                "format": FORMAT,
                "version": VERSION,
                "batch": self.batch,
                "shard": self.shard,
                "epoch": self.epoch,
                "flowfiles": sorted(self.flowfiles),
                "files": [list(pair) for pair in self.files],
            },
            indent=1,
        ).encode("utf-8")

    @classmethod
    def decode(cls, data: bytes, where: str = "manifest") -> BatchManifest:
        try:
            body = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            raise ManifestError(f"{where}: not a batch manifest (not UTF-8 JSON: {error})") from None
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise ManifestError(f"{where}: not a batch manifest (format is not {FORMAT!r})")
        version = body.get("version")
        if not isinstance(version, int) or version > VERSION:
            raise ManifestError(f"{where}: batch manifest version {version!r}; this release reads up to {VERSION}")
        batch, shard, epoch = body.get("batch"), body.get("shard"), body.get("epoch")
        flowfiles, files = body.get("flowfiles"), body.get("files")
        if not (
            isinstance(batch, str)
            and isinstance(shard, str)
            and isinstance(epoch, int)
            and epoch >= 0
            and isinstance(flowfiles, list)
            and all(isinstance(each, str) for each in flowfiles)
            and isinstance(files, list)
            and all(
                isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair) for pair in files
            )
        ):
            raise ManifestError(f"{where}: a batch manifest member is missing or of the wrong type")
        return cls(batch, shard, epoch, tuple(flowfiles), tuple((staged, final) for staged, final in files))
