"""`executor_pids`: the executors a standalone worker launched, found by the worker
address on their command line, so that stopping the harness's Spark leaves none."""

import subprocess
import sys

from cluster.services.network import HOST
from cluster.services.process import wait_until
from cluster.services.spark import executor_pids


def test_a_process_that_names_the_worker_is_found_and_one_for_another_worker_is_not():
    argv = [
        sys.executable,
        "-c",
        "import sys, time; time.sleep(60)",
        "org.apache.spark.executor.CoarseGrainedExecutorBackend",
        "--worker-url",
        f"spark://Worker@{HOST}:40101",
    ]
    executor = subprocess.Popen(argv)
    try:
        # Its command line is the new one once the child has exec'd.
        wait_until(lambda: executor.pid in executor_pids(40101), 10, "the process to be found")
        assert executor.pid not in executor_pids(40102)
    finally:
        executor.kill()
        executor.wait()
    assert executor.pid not in executor_pids(40101)
