"""Repair of a replica (`custody content fsck --repair`): a resource written anew, whole.

Each file (the checksum file, then the resource file) is written under a temporary
name in the container root, synced, then renamed over its target, so a crash leaves
either the old file or the whole new one, never a mix. Between the two renames the
new checksum file stands beside the old resource file: a claim whose bytes differ is
then refused by its checksum (never returned wrong), and the next fsck repairs it
again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from repositories.claims import ResourceClaim
from repositories.storage import Storage, StorageError
from repositories.storage.protocol import join

from .errors import translate_storage_error
from .format import archive_directory, archive_path, checksum_name, checksum_path, resource_path
from .hooks import ContentHooks
from .resource_io import ResourceIO
from .resources import ResourceTable
from .store import READ_CHUNK


def install_resource(
    table: ResourceTable,
    roots: Mapping[str, str],
    resource_io: ResourceIO,
    clock: Callable[[], float],
    resource: ResourceClaim,
    source,
    *,
    archived: bool = False,
    checksums=None,
    hooks: ContentHooks,
) -> int:
    """Write the resource file of `resource` from the binary stream `source`, and its
    checksum file from `checksums` (None: a resource of format 0, which has none);
    returns the resource file's length. An archived file joins the archive as of now
    (unless already known)."""
    root = roots[resource.container]
    storage = resource_io.storage
    resource_io.ensure_section(root, resource.section)
    if archived:
        storage.mkdir(archive_directory(root, resource.section), exist_ok=True)
    target = archive_path(root, resource) if archived else resource_path(root, resource)
    try:
        if checksums is not None:
            _install(
                storage,
                checksums,
                join(root, f".fsck-{checksum_name(resource)}"),
                checksum_path(root, resource, archived),
            )
            hooks.between_repair_renames(checksum_path(root, resource, archived), target)
        total = _install(storage, source, join(root, f".fsck-{resource.id}"), target)
    except StorageError as error:
        raise translate_storage_error(error, claim=resource, path=target) from error
    if archived:
        with table.lock:
            table.archived.setdefault(resource, (clock(), total))
    return total


def _install(storage: Storage, source, temporary: str, target: str) -> int:
    total = 0
    with storage.create(temporary, overwrite=True) as handle:
        while chunk := source.read(READ_CHUNK):
            handle.write(chunk)
            total += len(chunk)
        handle.sync()
    storage.rename(temporary, target, overwrite=True)
    return total
