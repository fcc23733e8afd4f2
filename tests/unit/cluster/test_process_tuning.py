"""Every `custody` command runs with the collector's young generation raised and Arrow
on jemalloc, unless the operator chose Arrow's allocator."""

import gc
import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from cluster.process_tuning import ARROW_POOL_VARIABLE, YOUNG_GENERATION, tune_process

# A command as a user types it (one that fails at once: an unknown file), then what
# its process was left with.
_PROBE = """
import gc, json, sys
from cluster.cli import main
code = main(["flow", "import", sys.argv[1]])
import pyarrow as pa
print(json.dumps({"code": code, "threshold": gc.get_threshold(), "pool": pa.default_memory_pool().backend_name}))
"""


def _probe(tmp_path, **environment) -> dict:
    env = {k: v for k, v in os.environ.items() if k != ARROW_POOL_VARIABLE} | environment
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_command_runs_with_the_young_generation_raised_and_arrow_on_jemalloc(tmp_path):
    seen = _probe(tmp_path)
    assert seen["code"] != 0  # the command itself ran, and refused the missing file
    assert seen["threshold"][0] == YOUNG_GENERATION
    assert seen["threshold"][1:] == list(gc.get_threshold()[1:])  # the older generations as Python has them
    assert seen["pool"] == "jemalloc"


def test_an_operator_who_chose_arrows_allocator_keeps_it(tmp_path):
    seen = _probe(tmp_path, **{ARROW_POOL_VARIABLE: "system"})
    assert seen["threshold"][0] == YOUNG_GENERATION
    assert seen["pool"] == "system"


@pytest.fixture
def restored():
    threshold, pool = gc.get_threshold(), pa.default_memory_pool()
    chosen = os.environ.pop(ARROW_POOL_VARIABLE, None)
    yield
    gc.set_threshold(*threshold)
    pa.set_memory_pool(pool)
    os.environ.pop(ARROW_POOL_VARIABLE, None)
    if chosen is not None:
        os.environ[ARROW_POOL_VARIABLE] = chosen


def test_with_arrow_loaded_already_new_buffers_come_from_jemalloc(restored):
    pa.set_memory_pool(pa.mimalloc_memory_pool())
    tune_process()
    assert pa.default_memory_pool().backend_name == "jemalloc"
    assert pa.array(["a", "b"]).buffers()[1] is not None
    assert os.environ[ARROW_POOL_VARIABLE] == "jemalloc"  # and so in the processes it starts
    tune_process()  # a second time changes nothing
    assert gc.get_threshold()[0] == YOUNG_GENERATION
    assert pa.default_memory_pool().backend_name == "jemalloc"


def test_with_arrow_built_without_jemalloc_the_pool_stays_as_it_was(restored, monkeypatch):
    def missing():
        raise NotImplementedError("built without jemalloc")

    pa.set_memory_pool(pa.mimalloc_memory_pool())
    monkeypatch.setattr(pa, "jemalloc_memory_pool", missing)
    tune_process()
    assert pa.default_memory_pool().backend_name == "mimalloc"
    assert gc.get_threshold()[0] == YOUNG_GENERATION
