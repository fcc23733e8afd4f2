"""The processor registry of a node with NiFi Python processors: NODE.toml's
`[python]` (or `custody run --python-extensions`) as `flow.python_extensions` takes it.
A node without any gets None, which the flow parser reads as the standard registry."""

from __future__ import annotations

from flow.python_extensions import PipIndex, PythonExtensions, extension_registry
from flow.registry import ProcessorRegistry


def python_extensions(
    directories, data_directory: str, *, index_url: str = "", find_links=(), no_index: bool = False
) -> PythonExtensions:
    """Where the processors are, with their dependencies installed under `data_directory`."""
    return PythonExtensions(
        tuple(directories),
        cache_directory=data_directory,
        index=PipIndex(index_url=index_url, find_links=tuple(find_links), no_index=no_index),
    )


def node_registry(extensions: PythonExtensions) -> ProcessorRegistry | None:
    """The standard registry with `extensions`' processors; None when there are none.
    Raises `PythonExtensionError` (a `FlowError`) naming the file that cannot be loaded."""
    if not extensions.directories:
        return None
    return extension_registry(extensions)


def config_registry(config) -> ProcessorRegistry | None:
    """`node_registry` of a clustered node's `NodeConfig`."""
    return node_registry(
        python_extensions(
            config.python_extensions,
            config.directory,
            index_url=config.python_index_url,
            find_links=config.python_find_links,
            no_index=config.python_no_index,
        )
    )
