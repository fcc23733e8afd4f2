"""The four content repositories conform to `ContentStore`, and their writers to
`ClaimWriter`: every method of the protocol exists, and accepts every call the
protocol allows (same parameter names and kinds, defaults where the protocol has
them, and any extra parameter optional)."""

from __future__ import annotations

import inspect

import pytest

from flow.memory_content import InMemoryContentRepository
from replication.hdfs_content import open_hdfs_content_repository
from replication.replicating_content import ReplicatingContentRepository
from repositories.content import ClaimWriter, ContentRepositoryConfig, ContentStore, open_filesystem_content_repository
from repositories.storage import LocalStorage

POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def protocol_methods(protocol: type, dunders: tuple[str, ...] = ()) -> list[str]:
    names = [name for name, value in vars(protocol).items() if inspect.isfunction(value) and not name.startswith("_")]
    return names + list(dunders)


def incompatibilities(declared, implemented) -> list[str]:
    """How a call that `declared` (the protocol's function) allows could fail on the
    bound method `implemented`."""
    wanted = [p for p in inspect.signature(declared).parameters.values() if p.name != "self"]
    given = list(inspect.signature(implemented).parameters.values())
    by_name = {p.name: p for p in given}
    takes_args = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in given)
    takes_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in given)
    positional = [p for p in given if p.kind in POSITIONAL]
    problems = []
    for index, parameter in enumerate(wanted):
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        match = by_name.get(parameter.name)
        if parameter.kind in POSITIONAL:
            if not (index < len(positional) and positional[index].name == parameter.name) and not takes_args:
                problems.append(f"{parameter.name} is not its positional parameter {index}")
                continue
        elif match is None or match.kind not in (
            inspect.Parameter.KEYWORD_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            if not takes_kwargs:
                problems.append(f"takes no keyword {parameter.name}")
            continue
        if (
            match is not None
            and parameter.default is not inspect.Parameter.empty
            and match.default is inspect.Parameter.empty
        ):
            problems.append(f"{parameter.name} has no default")
    declared_names = {p.name for p in wanted}
    for parameter in given:
        if (
            parameter.name not in declared_names
            and parameter.default is inspect.Parameter.empty
            and parameter.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        ):
            problems.append(f"requires {parameter.name}, which the protocol does not pass")
    return problems


def assert_conforms(instance, protocol: type, dunders: tuple[str, ...] = ()) -> None:
    problems = []
    for name in protocol_methods(protocol, dunders):
        implemented = getattr(instance, name, None)
        if not callable(implemented):
            problems.append(f"{name}: missing")
            continue
        problems += [f"{name}: {problem}" for problem in incompatibilities(getattr(protocol, name), implemented)]
    assert not problems, f"{type(instance).__name__} does not conform to {protocol.__name__}: " + "; ".join(problems)


def filesystem(tmp_path):
    return open_filesystem_content_repository({"local": str(tmp_path / "local")})


def hdfs(tmp_path):
    # The HDFS repository is the same class over a StorageResourceIO; any Storage will
    # do to build one, so no HDFS is needed to check its shape.
    return open_hdfs_content_repository(LocalStorage(), str(tmp_path / "hdfs"), "node")


def replicating(tmp_path):
    local = open_filesystem_content_repository(
        {"c": str(tmp_path / "replica-local")}, ContentRepositoryConfig(sync_on_close=False)
    )
    remote = open_hdfs_content_repository(LocalStorage(), str(tmp_path / "replica-hdfs"), "node", ("c",))
    return ReplicatingContentRepository([local, remote])


def memory(tmp_path):
    return InMemoryContentRepository()


STORES = [filesystem, hdfs, replicating, memory]


@pytest.fixture(params=STORES, ids=[make.__name__ for make in STORES])
def store(request, tmp_path):
    store = request.param(tmp_path)
    yield store
    store.close()


def test_the_protocol_declares_what_the_flow_and_the_nodes_call():
    assert set(protocol_methods(ContentStore)) == {
        "write",
        "write_bytes",
        "write_many",
        "open_read",
        "read",
        "read_many",
        "export_to",
        "increment",
        "decrement",
        "claimant_count",
        "sync",
        "check_durable",
        "recover",
        "collect",
        "age_off",
        "close",
    }


def test_each_store_has_every_method_of_the_protocol_with_a_compatible_signature(store):
    assert_conforms(store, ContentStore)


def test_each_store_writes_with_a_claim_writer(store):
    writer = store.write()
    try:
        assert_conforms(writer, ClaimWriter, dunders=("__enter__", "__exit__"))
    finally:
        writer.abort()


def test_each_store_round_trips_a_claim_through_the_protocol(store):
    with store.write() as writer:
        writer.write(b"hello ")
        writer.write(b"world")
    claim = writer.claim
    store.sync()
    store.check_durable([claim])
    assert store.read(claim) == b"hello world"
    with store.open_read(claim, 6) as stream:
        assert stream.read() == b"world"
    assert store.claimant_count(claim) == 1
    assert store.increment(claim) == 2
    assert store.decrement(claim) == 1


def test_each_store_writes_and_reads_many_claims_in_order(store):
    contents = [f"claim {i}".encode() * (i % 4) for i in range(30)]
    claims = store.write_many(contents)
    assert [claim.length for claim in claims] == [len(data) for data in contents]
    assert all(store.claimant_count(claim) >= 1 for claim in claims)
    store.sync()
    store.check_durable(claims)
    order = list(reversed(range(30))) + [3, 3]
    assert store.read_many([claims[i] for i in order]) == [contents[i] for i in order]
    assert store.read_many([]) == []


def test_the_checker_catches_an_incompatible_signature():
    class Missing:
        def write(self):
            pass

    class Wrong(InMemoryContentRepository):
        def open_read(self, claim, start=0):  # `offset` renamed, `length` gone
            return super().open_read(claim, start)

        def sync(self, retire):  # a parameter the protocol never passes
            pass

    with pytest.raises(AssertionError, match="write_bytes: missing"):
        assert_conforms(Missing(), ContentStore)
    with pytest.raises(AssertionError) as caught:
        assert_conforms(Wrong(), ContentStore)
    message = str(caught.value)
    assert "open_read: offset" in message and "open_read: length" in message and "sync: requires retire" in message
