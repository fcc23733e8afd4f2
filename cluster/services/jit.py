"""The JIT compilers a service's JVM runs with.

HotSpot compiles hot methods twice over by default: C1 at once, quickly, then C2
again, slowly and better. The harness's JVMs share two cores with the nodes they
serve, and C2's compiler threads take what the nodes' takeovers need: read per thread
from /proc during a failover drill, a broker just started spent 17-19 % of a core in
C2 over its first 80 s (C1 6 %) and 2-3 % from its third minute on, three DataNodes
together 6-19 % of a core over their first three minutes, the NameNode 2-6 %,
ZooKeeper 3-4 %, and again after every restart. So the harness's JVMs compile with
C1 alone (`-XX:TieredStopAtLevel=1`): code a little slower once warm, and no warm-up
spent on a second compiler.

`peak` keeps both compilers: what a long-running service on a machine of its own
runs, and what a benchmark of that service's own throughput asks for
(`custody services up --peak`, `KafkaBroker(peak=True)`).
"""

from __future__ import annotations

C1_ONLY = "-XX:TieredStopAtLevel=1"


def jit_options(peak: bool) -> tuple[str, ...]:
    """The JVM options that choose the JIT's compilers: C1 alone unless `peak`."""
    return () if peak else (C1_ONLY,)
