"""Subcommands of the `custody` CLI, one module each.

Every module here defines `register(subparsers)`, which adds its parser and sets
`func` (a callable taking the parsed arguments and returning an exit code).
`cluster.cli` discovers the modules, so adding a command is adding a file. What
several commands share is here: stopping on signals, and the options that name NiFi
Python processors (`custody run`, `custody flow import` and `export`).
"""

from ..node.signal_stop import stop_on_signals

__all__ = ["add_python_options", "python_registry", "stop_on_signals", "user_cache_directory"]


def add_python_options(parser) -> None:
    parser.add_argument(
        "--python-extensions",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory of NiFi 2 Python processors, each usable in the flow by its class name; repeatable "
        "(docs/develop/python-processors.md)",
    )
    parser.add_argument(
        "--python-index-url",
        default="",
        metavar="URL",
        help="the package index pip installs the Python processors' dependencies from (default: pip's own)",
    )
    parser.add_argument(
        "--python-find-links",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory of distributions pip may install those dependencies from; repeatable",
    )
    parser.add_argument(
        "--python-no-index",
        action="store_true",
        help="install the Python processors' dependencies from --python-find-links only",
    )


def python_registry(args, cache_directory: str):
    """The standard registry with the processors of `args.python_extensions` (None
    without any), their dependencies installed under `cache_directory`. Raises
    `flow.python_extensions.PythonExtensionError` (a `FlowError`) naming what cannot
    be loaded."""
    import os

    from ..node.python_extensions import node_registry, python_extensions

    return node_registry(
        python_extensions(
            [os.path.abspath(d) for d in args.python_extensions],
            cache_directory,
            index_url=args.python_index_url,
            find_links=[os.path.abspath(d) if "://" not in d else d for d in args.python_find_links],
            no_index=args.python_no_index,
        )
    )


def user_cache_directory() -> str:
    """Where a command that is not a node keeps the Python processors' dependencies:
    $XDG_CACHE_HOME/custody, or ~/.cache/custody."""
    import os

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "custody")
