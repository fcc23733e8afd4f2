"""The layout's rules, checked on the source: no import cycle among our modules
(imports made inside functions count), dependencies that point one way
(`cluster -> flow -> replication -> repositories`), a pure `cluster.core`, kazoo
inside `cluster.zk` alone, and a service harness (`cluster.services`) that imports
nothing of the product."""

from __future__ import annotations

import ast
import os
from collections import defaultdict
from dataclasses import dataclass

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("repositories", "replication", "flow", "cluster", "benchmarks")
# Each package, with the packages of ours it may import (itself aside).
ALLOWED = {
    "repositories": set(),
    "replication": {"repositories"},
    "flow": {"repositories", "replication"},
    "cluster": {"repositories", "replication", "flow", "benchmarks"},
    "benchmarks": {"repositories", "replication", "flow", "cluster"},
}
# What `cluster.core` (the pure decisions) must never import: clients, threads,
# clocks, sockets, and every module of ours that does I/O.
CORE_FORBIDDEN_EXTERNAL = (
    "kazoo",
    "threading",
    "time",
    "socket",
    "hdfs_native",
    "pyarrow",
    "subprocess",
    "asyncio",
    "concurrent",
    "os",
    "shutil",
)
CORE_ALLOWED_INTERNAL = ("cluster.core", "cluster.errors")
# Inside `cluster`, what each part may import of `cluster` (besides itself): the
# subpackages form layers, core at the bottom (see cluster/__init__.py).
CLUSTER_LAYERS = {
    "cluster.errors": set(),
    "cluster.core": {"cluster.errors"},
    "cluster.zk": {"cluster.errors", "cluster.core"},
    "cluster.hdfs_identity": {"cluster.errors"},
    "cluster.clients": {"cluster.errors", "cluster.hdfs_identity", "cluster.zk"},
    "cluster.failover": {"cluster.errors", "cluster.core", "cluster.zk", "cluster.clients"},
    "cluster.node": {
        "cluster.errors",
        "cluster.core",
        "cluster.zk",
        "cluster.clients",
        "cluster.hdfs_identity",
        "cluster.failover",
    },
    "cluster.admin": {"cluster.errors", "cluster.core", "cluster.zk", "cluster.clients", "cluster.node"},
    "cluster.drills": {
        "cluster.errors",
        "cluster.core",
        "cluster.zk",
        "cluster.clients",
        "cluster.failover",
        "cluster.node",
        "cluster.admin",
        "cluster.services",
    },
    "cluster.services": set(),
}
# kazoo (its client, exceptions, recipes and states) is used by `cluster.zk` alone, which
# translates its exceptions into `cluster.errors` (kazoo's own model: one client facade).
# The service harness may use it too: it probes a ZooKeeper it started, and expires
# sessions as ZooKeeper would; it is not the product. Tests are not checked.
KAZOO_USERS = ("cluster.zk", "cluster.services")
# The harness of real services starts and stops them for tests, drills and operators; it
# imports nothing of the product, so that it can start the services the product needs
# whatever state the product is in (and never hides a product behaviour in a fixture).
HARNESS = "cluster.services"


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (ours: resolved to a module that exists)
    line: int
    nested: bool  # made inside a function or method
    typing_only: bool = False  # under `if TYPE_CHECKING:`: names a type, never runs


def our_modules(root: str = REPO) -> dict[str, str]:
    found = {}
    for package in PACKAGES:
        for directory, _, files in os.walk(os.path.join(root, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(directory, name)
                    module = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                    found[module.removesuffix(".__init__")] = path
    return found


def imports_of(module: str, path: str, modules: dict[str, str]) -> list[Import]:
    """Every import statement in the file, at any depth, as the modules it loads.
    `from package import name` loads `package.name` when that is a module of ours."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    is_package = path.endswith("__init__.py")
    out: list[Import] = []

    def visit(node: ast.AST, nested: bool, typing_only: bool = False) -> None:
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    visit(ast.Module(body=[statement], type_ignores=[]), inner, True)
                for statement in child.orelse:
                    visit(ast.Module(body=[statement], type_ignores=[]), inner, typing_only)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    out.append(Import(module, alias.name, child.lineno, nested, typing_only))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = module if is_package else module.rpartition(".")[0]
                    for _ in range(child.level - 1):
                        base = base.rpartition(".")[0]
                    prefix = f"{base}.{child.module}" if child.module else base
                else:
                    prefix = child.module or ""
                for alias in child.names:
                    candidate = f"{prefix}.{alias.name}"
                    target = candidate if candidate in modules else prefix
                    out.append(Import(module, target, child.lineno, nested, typing_only))
            visit(child, inner, typing_only)

    visit(tree, False)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    """`TYPE_CHECKING` or `typing.TYPE_CHECKING`: a block that only the type checker reads."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def resolve(name: str, modules: dict[str, str]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: str = REPO) -> tuple[dict[str, set[str]], list[Import]]:
    modules = our_modules(root)
    graph: dict[str, set[str]] = defaultdict(set)
    every: list[Import] = []
    for module, path in modules.items():
        for found in imports_of(module, path, modules):
            every.append(found)
            target = resolve(found.target, modules) if found.target.split(".")[0] in PACKAGES else None
            # A type named for the checker makes no cycle at run time; the layering
            # rules still count it (`every`).
            if target is not None and target != module and not found.typing_only:
                graph[module].add(target)
    return graph, every


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    nodes = sorted(set(graph) | {t for targets in graph.values() for t in targets})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _package(root, modules: dict[str, str]) -> tuple[dict[str, set[str]], list[Import]]:
    """The import graph of a package `flow` under `root` made of `modules` (name -> source)."""
    package = root / "flow"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, source in modules.items():
        (package / f"{name}.py").write_text(source)
    return import_graph(str(root))


def test_the_cycle_finder_counts_imports_made_inside_functions(tmp_path):
    graph, every = _package(
        tmp_path, {"a": "from .b import thing\n", "b": "def thing():\n    from . import a\n    return a\n"}
    )
    assert cycles(graph) == [["flow.a", "flow.b"]]
    assert any(found.nested and found.target == "flow.a" for found in every)


def test_an_import_for_the_type_checker_alone_makes_no_cycle_but_still_counts_as_a_dependency(tmp_path):
    graph, every = _package(
        tmp_path,
        {
            "a": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import Thing\n",
            "b": "from .a import other\n",
        },
    )
    assert cycles(graph) == []
    assert [found.target for found in every if found.typing_only] == ["flow.b"]


def test_no_import_cycle_among_our_modules():
    graph, _ = import_graph()
    found = cycles(graph)
    assert not found, "import cycles (each a set of modules that import each other, directly or not): " + "; ".join(
        " <-> ".join(cycle) for cycle in found
    )


def test_dependencies_point_one_way():
    graph, _ = import_graph()
    wrong = sorted(
        f"{source} imports {target}"
        for source, targets in graph.items()
        for target in targets
        if target.split(".")[0] != source.split(".")[0] and target.split(".")[0] not in ALLOWED[source.split(".")[0]]
    )
    assert not wrong, "dependencies must point cluster -> flow -> replication -> repositories: " + "; ".join(wrong)


def part_of(module: str) -> str:
    """`cluster.zk.store` -> `cluster.zk`: the layer a module of `cluster` belongs to."""
    return ".".join(module.split(".")[:2])


def test_cluster_layers_import_only_the_layers_below():
    graph, _ = import_graph()
    wrong = sorted(
        f"{source} imports {target}"
        for source, targets in graph.items()
        if part_of(source) in CLUSTER_LAYERS
        for target in targets
        if target.startswith("cluster")
        and part_of(target) != part_of(source)
        and part_of(target) not in CLUSTER_LAYERS[part_of(source)]
    )
    assert not wrong, "cluster's layers (cluster/__init__.py): " + "; ".join(wrong)


def core_violations(every: list[Import]) -> list[str]:
    wrong = []
    for found in every:
        if not (found.source == "cluster.core" or found.source.startswith("cluster.core.")):
            continue
        top = found.target.split(".")[0]
        if top in CORE_FORBIDDEN_EXTERNAL:
            wrong.append(f"{found.source}:{found.line} imports {found.target}")
        elif top in PACKAGES and not found.target.startswith(CORE_ALLOWED_INTERNAL):
            wrong.append(f"{found.source}:{found.line} imports {found.target} (I/O lives outside cluster.core)")
    return wrong


def test_cluster_core_is_pure():
    _, every = import_graph()
    assert any(found.source.startswith("cluster.core.") for found in every), "cluster.core has no modules"
    wrong = core_violations(every)
    assert not wrong, "cluster.core holds pure decisions only: " + "; ".join(wrong)


@pytest.mark.parametrize(
    "forbidden", ["kazoo.client", "threading", "time", "socket", "replication.hdfs_storage", "cluster.zk.store"]
)
def test_the_purity_check_catches_a_forbidden_import_even_inside_a_function(tmp_path, forbidden):
    core = tmp_path / "cluster" / "core"
    core.mkdir(parents=True)
    (tmp_path / "cluster" / "__init__.py").write_text("")
    (core / "__init__.py").write_text("from . import decide\n")
    (core / "decide.py").write_text(f"def decide():\n    import {forbidden}\n    return 1\n")
    _, every = import_graph(str(tmp_path))
    assert len(core_violations(every)) == 1 and forbidden in core_violations(every)[0]


def kazoo_violations(every: list[Import]) -> list[str]:
    return sorted(
        {
            f"{found.source}:{found.line} imports {found.target}"
            for found in every
            if found.target.split(".")[0] == "kazoo"
            and not any(found.source == user or found.source.startswith(user + ".") for user in KAZOO_USERS)
        }
    )


def test_kazoo_is_used_inside_cluster_zk_only():
    _, every = import_graph()
    assert any(found.target.startswith("kazoo") for found in every), "nothing imports kazoo: is the check blind?"
    wrong = kazoo_violations(every)
    assert not wrong, (
        "kazoo stays inside cluster.zk (its errors become cluster.errors there; its client comes from "
        "cluster.zk.client): " + "; ".join(wrong)
    )


def harness_violations(every: list[Import]) -> list[str]:
    return sorted(
        {
            f"{found.source}:{found.line} imports {found.target}"
            for found in every
            if (found.source == HARNESS or found.source.startswith(HARNESS + "."))
            and found.target.split(".")[0] in PACKAGES
            and not (found.target == HARNESS or found.target.startswith(HARNESS + "."))
        }
    )


def test_the_service_harness_imports_nothing_of_the_product():
    _, every = import_graph()
    assert any(found.source.startswith(HARNESS + ".") for found in every), "cluster.services has no modules"
    wrong = harness_violations(every)
    assert not wrong, "cluster.services starts services and imports nothing of the product: " + "; ".join(wrong)


@pytest.mark.parametrize(
    "where, statement, caught",
    [
        ("cluster/failover/leader.py", "from kazoo.exceptions import NoNodeError", True),
        ("flow/engine.py", "import kazoo.client", True),
        ("cluster/zk/store.py", "from kazoo.exceptions import NoNodeError", False),
        ("cluster/services/zookeeper.py", "from kazoo.client import KazooClient", False),
    ],
)
def test_the_kazoo_check_catches_an_import_outside_cluster_zk(tmp_path, where, statement, caught):
    path = tmp_path / where
    for directory in [path.parent, *path.parent.parents]:
        if directory == tmp_path:
            break
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "__init__.py").touch()
    path.write_text(f"def work():\n    {statement}\n")
    _, every = import_graph(str(tmp_path))
    assert bool(kazoo_violations(every)) is caught


@pytest.mark.parametrize(
    "statement, caught",
    [
        ("from flow.spark.session import EMBEDDED_CONF", True),
        ("from cluster.zk.store import ClusterStore", True),
        ("from repositories.storage import join", True),
        ("from .process import wait_until", False),
    ],
)
def test_the_harness_check_catches_an_import_of_the_product(tmp_path, statement, caught):
    for directory in ("cluster", "cluster/services", "cluster/zk", "flow", "flow/spark", "repositories"):
        (tmp_path / directory).mkdir(parents=True, exist_ok=True)
        (tmp_path / directory / "__init__.py").touch()
    for module in (
        "cluster/services/process.py",
        "cluster/zk/store.py",
        "flow/spark/session.py",
        "repositories/storage.py",
    ):
        (tmp_path / module).touch()
    (tmp_path / "cluster/services/spark.py").write_text(f"{statement}\n")
    _, every = import_graph(str(tmp_path))
    assert bool(harness_violations(every)) is caught
