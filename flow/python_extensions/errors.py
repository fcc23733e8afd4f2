"""What goes wrong loading NiFi-style Python processors: one root, each message naming
the file and saying what to do."""

from __future__ import annotations

from ..errors import ProcessorRegistryError


class PythonExtensionError(ProcessorRegistryError):
    """A Python processor directory that cannot be loaded whole: a module that does not
    import, a processor class without ProcessorDetails, a type name taken already, a
    dependency that cannot be installed. Nothing of the directory is registered."""


class DependenciesUnavailable(PythonExtensionError):
    """`pip` could not install a processor's `ProcessorDetails.dependencies` (no package
    index in reach, or a requirement it does not have); `command` is the exact command
    that installs them, to run where an index is in reach."""

    def __init__(self, message: str, command: str):
        super().__init__(message)
        self.command = command
