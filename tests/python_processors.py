"""What the NiFi Python processor tests share: the fixtures' directories, and a wheel of
a tiny package written here (so that installing a processor's dependency needs no
package index: pip installs it from a local directory, `--no-index`)."""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
PROCESSORS = os.path.join(DATA, "python_processors")
WITH_DEPENDENCY = os.path.join(DATA, "python_processors_dependency")
MISSING_DEPENDENCY = os.path.join(DATA, "python_processors_missing")

SHOUT_MODULE = 'def shout(text):\n    return text.upper() + "!"\n'


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_shout_wheel(directory) -> str:
    """custody_tiny_shout 1.0 as a wheel in `directory` (made with zipfile: a wheel is a
    zip of the package, its METADATA, WHEEL and RECORD); returns its path."""
    os.makedirs(directory, exist_ok=True)
    info = "custody_tiny_shout-1.0.dist-info"
    files = {
        "custody_tiny_shout/__init__.py": SHOUT_MODULE.encode(),
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: custody_tiny_shout\nVersion: 1.0\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: custody-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [_record_line(name, data) for name, data in files.items()] + [f"{info}/RECORD,,"]
    path = os.path.join(str(directory), "custody_tiny_shout-1.0-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path
