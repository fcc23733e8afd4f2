"""`custody admin token --file FILE --role read|admin --name NAME`: create a token for
the admin API. The token is printed once; FILE (NODE.toml's `[admin] tokens`) keeps
only its hash (see cluster.admin.tokens)."""

from __future__ import annotations

import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("admin", help="manage the admin API's tokens")
    commands = parser.add_subparsers(dest="admin_command", metavar="ACTION", required=True)
    token = commands.add_parser("token", help="create a token; print it once and store its hash")
    token.add_argument("--file", required=True, help="the token file of the node(s) (NODE.toml [admin] tokens)")
    token.add_argument(
        "--role",
        required=True,
        choices=("read", "admin"),
        help="read: every GET; admin: also control (offload, stop, drop, replay)",
    )
    token.add_argument("--name", required=True, help="whose token it is (shown in the node's log, never the token)")
    token.set_defaults(func=create_token)


def create_token(args) -> int:
    from ..admin.tokens import TokenFileError, add_token

    try:
        token = add_token(args.file, args.role, args.name)
    except TokenFileError as error:
        print(f"custody admin token: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"custody admin token: cannot write {args.file}: {error.strerror or error}", file=sys.stderr)
        return 1
    print(token)
    print(
        f"custody: {args.role} token {args.name!r} added to {args.file} (its hash only); "
        "keep the token above, it is not shown again",
        file=sys.stderr,
    )
    return 0
