"""Files dropped into a directory a GetFile watches: written whole under a hidden name,
then renamed, so the source never sees half a file.

    drop(inbox, "a.json", '{"id": 1}\\n')
    drop_all(inbox, {"a.json": ..., "b.csv": ...})   # all written, then all renamed
"""

from __future__ import annotations

import os


def drop_all(directory, files: dict[str, str]) -> None:
    for name, text in files.items():
        (directory / f".{name}").write_text(text)
    for name in files:
        os.rename(directory / f".{name}", directory / name)


def drop(directory, name: str, text: str) -> None:
    drop_all(directory, {name: text})
