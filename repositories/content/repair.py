"""Repair of a replica (`custody content fsck --repair`): a whole resource file written anew.

The file is written under a temporary name in the container root, synced, then
renamed over the target, so a crash leaves either the old file or the whole new one,
never a mix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from repositories.claims import ResourceClaim
from repositories.storage import StorageError
from repositories.storage.protocol import join

from .errors import translate_storage_error
from .format import archive_directory, archive_path, resource_path
from .resource_io import ResourceIO
from .resources import ResourceTable
from .store import READ_CHUNK


def install_resource(table: ResourceTable, roots: Mapping[str, str], resource_io: ResourceIO,
                     clock: Callable[[], float], resource: ResourceClaim, source, *, archived: bool = False) -> int:
    """Write the resource file of `resource` from the binary stream `source`; returns
    its length. An archived file joins the archive as of now (unless already known)."""
    root = roots[resource.container]
    storage = resource_io.storage
    temporary = join(root, f".fsck-{resource.id}")
    resource_io.ensure_section(root, resource.section)
    if archived:
        storage.mkdir(archive_directory(root, resource.section), exist_ok=True)
    target = archive_path(root, resource) if archived else resource_path(root, resource)
    total = 0
    try:
        with storage.create(temporary, overwrite=True) as handle:
            while chunk := source.read(READ_CHUNK):
                handle.write(chunk)
                total += len(chunk)
            handle.sync()
        storage.rename(temporary, target, overwrite=True)
    except StorageError as error:
        raise translate_storage_error(error, claim=resource, path=target) from error
    if archived:
        with table.lock:
            table.archived.setdefault(resource, (clock(), total))
    return total
