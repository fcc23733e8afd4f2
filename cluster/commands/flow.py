"""`custody flow deploy FLOW.yaml (--url URL | --config NODE.toml)`: roll a new flow
version across a running cluster, node by node (see cluster.admin.deploy), and
follow it until every node runs it. The token comes from $CUSTODY_ADMIN_TOKEN or
$CUSTODY_ADMIN_TOKEN_FILE (an admin token).

`custody flow import FLOW.json [-o flow.yaml] [--report]`: a NiFi flow definition (what
NiFi's "Download flow definition" writes) to a Custody flow; `custody flow export
FLOW.yaml --nifi [-o flow.json]`: back (`flow.nifi_flow`). Either lists every problem
on stderr, exits 2 and writes nothing when the flow cannot be carried over whole."""

from __future__ import annotations

import os
import re
import sys

from . import add_python_options, python_registry, user_cache_directory


def register(subparsers) -> None:
    parser = subparsers.add_parser("flow", help="deploy a flow to a running cluster; import or export NiFi flows")
    commands = parser.add_subparsers(dest="flow_command", metavar="ACTION", required=True)
    deploy = commands.add_parser("deploy", help="roll a new flow version across the cluster, node by node")
    deploy.add_argument("flow", help="the flow file (YAML or JSON)")
    deploy.add_argument("--url", help="the admin API of any node of the cluster")
    deploy.add_argument("--config", help="a node's NODE.toml, instead of --url")
    deploy.add_argument("--timeout", type=float, default=1800.0, help="seconds to follow the deploy (default 1800)")
    deploy.set_defaults(func=run_deploy)
    importing = commands.add_parser("import", help="turn a NiFi flow definition (JSON) into a Custody flow")
    importing.add_argument("nifi_flow", metavar="FLOW.json", help="a NiFi flow definition, as NiFi downloads it")
    importing.add_argument("-o", "--output", help="the Custody flow file to write (default: standard output)")
    importing.add_argument("--report", action="store_true", help="print what each NiFi component and property became")
    add_python_options(importing)
    importing.set_defaults(func=run_import)
    exporting = commands.add_parser("export", help="turn a Custody flow into another tool's flow format")
    exporting.add_argument("flow", metavar="FLOW.yaml", help="the Custody flow file (YAML or JSON)")
    exporting.add_argument(
        "--nifi", action="store_true", required=True, help="write a NiFi flow definition (the only format)"
    )
    exporting.add_argument("-o", "--output", help="the NiFi flow definition to write (default: standard output)")
    add_python_options(exporting)
    exporting.set_defaults(func=run_export)


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


def run_import(args) -> int:
    import yaml

    from flow.errors import FlowError
    from flow.nifi_flow import import_nifi_flow

    try:
        with open(args.nifi_flow, "rb") as handle:
            content = handle.read()
    except OSError as error:
        print(f"custody flow import: cannot read {args.nifi_flow}: {error.strerror or error}", file=sys.stderr)
        return 2
    subflow_path = None
    if args.output is not None:  # a STATELESS group's flow goes beside it: FLOW.<group>.yaml
        stem = re.sub(r"\.(ya?ml|json)$", "", os.path.abspath(args.output))
        subflow_path = lambda group: f"{stem}.{re.sub(r'[^A-Za-z0-9._-]+', '-', group)}.yaml"  # noqa: E731
    try:
        registry = python_registry(args, user_cache_directory())
        imported = import_nifi_flow(content, source=args.nifi_flow, subflow_path=subflow_path, registry=registry)
    except FlowError as error:
        print(f"custody flow import: {error}", file=sys.stderr)
        return 2
    header = [f"# Imported from the NiFi flow definition {os.path.basename(args.nifi_flow)} by custody flow import."]
    for name, why in imported.unset_parameters.items():
        header.append(f"# Parameter {name} is left unset ({why}): custody run --param {name}=...")
    dump = lambda flow: yaml.safe_dump(flow, sort_keys=False, allow_unicode=True)  # noqa: E731
    text = "\n".join(header) + "\n" + dump(imported.flow)
    report = "\n".join(imported.report) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        if args.report:
            sys.stderr.write(report)
        return 0
    for path, flow in imported.subflows.items():
        subflow_header = (
            f"# The flow of a STATELESS group of {os.path.basename(args.nifi_flow)}, run by an ExecuteStateless.\n"
        )
        if not _write_whole(path, subflow_header + dump(flow), "custody flow import"):
            return 1
    if not _write_whole(args.output, text, "custody flow import"):
        return 1
    if args.report:
        sys.stdout.write(report)
    return 0


def run_export(args) -> int:
    import json

    from flow.definition import read_flow_document
    from flow.errors import FlowError
    from flow.nifi_flow import export_nifi_flow

    try:
        registry = python_registry(args, user_cache_directory())
        document = export_nifi_flow(read_flow_document(args.flow), source=args.flow, registry=registry)
    except FlowError as error:
        print(f"custody flow export: {error}", file=sys.stderr)
        return 2
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        return 0
    return 0 if _write_whole(args.output, text, "custody flow export") else 1


def _write_whole(path: str, text: str, command: str) -> bool:
    """Write `text` to `path` whole or not at all: a temporary file beside it, renamed."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except OSError as error:
        print(f"{command}: cannot write {path}: {error.strerror or error}", file=sys.stderr)
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return False
    return True
