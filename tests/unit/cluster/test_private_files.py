"""What a node writes is its own: a standalone node run on the sample flow leaves no
directory under its data directory that another user can enter, and no file of its
repositories (content, WAL, swap, provenance journals and event files) that another
user can read (PutFile's output directory is for its readers, and keeps the umask's
modes), whatever the umask (the provenance index's files, which tantivy writes,
sit in a 0700 directory)."""

from __future__ import annotations

import os
import stat

from cluster.node.standalone import StandaloneNode
from cluster.services.process import wait_until

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_a_nodes_files_are_0600_and_its_directories_0700(tmp_path):
    data = tmp_path / "data"
    previous = os.umask(0o022)  # a usual umask, which would leave 0644 and 0755
    try:
        node = StandaloneNode.from_file(os.path.join(REPO, "examples", "hello.yaml"), str(data))
        node.start()
        try:
            wait_until(
                lambda: (
                    any(files for _, _, files in os.walk(data / "content"))
                    and any(files for _, _, files in os.walk(data / "out"))
                ),
                30,
                "content and output on disk",
            )
        finally:
            node.stop()
    finally:
        os.umask(previous)
    open_to_others = []
    for directory, subdirectories, files in os.walk(data):
        if directory == str(data):
            subdirectories.remove("out")  # PutFile's output: for its readers, as the umask says
        for name in subdirectories:
            path = os.path.join(directory, name)
            if stat.S_IMODE(os.lstat(path).st_mode) & 0o077:
                open_to_others.append(path)
        for name in files:
            path = os.path.join(directory, name)
            if os.sep + "index" + os.sep in path:
                continue  # the provenance index's files, in tantivy's modes; its directory keeps others out
            if stat.S_IMODE(os.lstat(path).st_mode) & 0o077:
                open_to_others.append(path)
    assert not open_to_others, open_to_others[:10]
    assert stat.S_IMODE(os.stat(data).st_mode) == 0o700
