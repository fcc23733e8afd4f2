"""What every `custody` process sets up for itself before it runs a flow, as NiFi's
bootstrap sets the JVM's garbage collector and heap before NiFi starts.

Two settings, each measured on the flow benchmark's engine flow with `perf` (share of
the process's CPU samples, 100,000 FlowFiles):

* **Python's cyclic garbage collector runs less often.** Its youngest generation is
  collected after `YOUNG_GENERATION` more allocations than deallocations, not
  Python's default 700. A flow allocates tuples, records and attribute maps by the
  hundred per commit, and almost all of them are freed by their reference counts the
  moment the commit ends; at 700 the collector ran every few commits and walked every
  young object each time (9 % of the samples; 1.7 % at 20,000). Reference cycles are
  still collected, only later; the older generations keep Python's thresholds.
* **Arrow's buffers come from jemalloc, not Arrow's default mimalloc.** The
  provenance columns and event files of each commit are Arrow buffers; while a
  process's heap grew, mimalloc returned the pages of freed ones to the kernel (it
  asks for transparent huge pages, 2 MB each) and the next commit faulted fresh ones
  in, which the kernel zeroes: 11-21 % of the samples of a ten-second run, against
  0.5 % with jemalloc. In a three-minute run of the same flow the three allocators
  Arrow offers used the same CPU per FlowFile, and jemalloc held the least memory
  (0.6 GB resident; mimalloc 0.7-0.9 GB; the C library's allocator grew to 1.2 GB).
  The choice is made through Arrow's own `ARROW_DEFAULT_MEMORY_POOL`, so that it
  holds for Arrow's C++ code as well and for the processes a command starts (a node's
  workers); an operator who set that variable chooses the allocator instead. A build
  of Arrow without jemalloc warns once and keeps its default.
"""

from __future__ import annotations

import gc
import os
import sys

YOUNG_GENERATION = 20_000
ARROW_POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


def tune_process() -> None:
    """Apply both settings to this process (idempotent), without importing Arrow: a
    command that never uses it does not pay for loading it."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION, older, oldest)
    if ARROW_POOL_VARIABLE in os.environ:
        return
    os.environ[ARROW_POOL_VARIABLE] = "jemalloc"  # read once, when Arrow is loaded
    if "pyarrow" in sys.modules:
        # Loaded already: Arrow read the variable. Buffers allocated from now on
        # come from jemalloc; those allocated before go back to their own pool.
        import pyarrow as pa

        try:
            pa.set_memory_pool(pa.jemalloc_memory_pool())
        except NotImplementedError:  # a build without it
            pass
