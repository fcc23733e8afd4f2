"""Subcommands of the `custody` CLI, one module each.

Every module here defines `register(subparsers)`, which adds its parser and sets
`func` (a callable taking the parsed arguments and returning an exit code).
`cluster.cli` discovers the modules, so adding a command is adding a file.
"""
