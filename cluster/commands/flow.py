"""`custody flow deploy FLOW.yaml (--url URL | --config NODE.toml)`: roll a new flow
version across a running cluster, node by node (see cluster.admin.deploy), and
follow it until every node runs it. The token comes from $CUSTODY_ADMIN_TOKEN or
$CUSTODY_ADMIN_TOKEN_FILE (an admin token)."""

from __future__ import annotations

import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("flow", help="deploy a flow to a running cluster")
    commands = parser.add_subparsers(dest="flow_command", metavar="ACTION", required=True)
    deploy = commands.add_parser("deploy", help="roll a new flow version across the cluster, node by node")
    deploy.add_argument("flow", help="the flow file (YAML or JSON)")
    deploy.add_argument("--url", help="the admin API of any node of the cluster")
    deploy.add_argument("--config", help="a node's NODE.toml, instead of --url")
    deploy.add_argument("--timeout", type=float, default=1800.0, help="seconds to follow the deploy (default 1800)")
    deploy.set_defaults(func=run_deploy)


def run_deploy(args) -> int:
    import urllib.error

    from flow.definition import read_flow_document
    from flow.errors import FlowError

    from ..admin.client import DeployError, admin_url, deploy_flow
    from ..errors import ClusterError
    from .node import load_config

    try:
        document = read_flow_document(args.flow)
        if args.url:
            base = args.url.rstrip("/")
        elif args.config:
            args.name = args.directory = None
            base = admin_url(load_config(args))
        else:
            raise ValueError("give --url http://HOST:PORT of a node's admin API, or --config NODE.toml")
    except (FlowError, ValueError, ClusterError) as error:
        print(f"custody flow deploy: {error}", file=sys.stderr)
        return 2
    say = lambda line: print(line, flush=True)  # noqa: E731 - progress goes to stdout as it happens
    try:
        body = deploy_flow(base, document, timeout=args.timeout, say=say)
    except DeployError as error:
        print(f"custody flow deploy: {error}", file=sys.stderr)
        return error.exit_code
    except (urllib.error.URLError, OSError) as error:
        print(
            f"custody flow deploy: the admin API at {base} did not answer ({getattr(error, 'reason', error)})",
            file=sys.stderr,
        )
        return 1
    print(f"custody: every node runs flow version {body['version']}")
    return 0
