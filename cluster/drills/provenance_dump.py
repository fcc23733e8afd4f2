"""Every provenance event of one stopped node, as the exactly-once check needs it:
one JSON array a line, [event type, FlowFile uuid, component, relationship, transit
uri, event time in ms] (`checker.event_identity`'s fields).

    python -m cluster.drills.provenance_dump /var/lib/custody/provenance

A node's provenance repository names its containers by absolute path, so it is read
where the node wrote it: the compose drill runs this in a container of the node's
image with the node's volume mounted where the node has it.
"""

from __future__ import annotations

import json
import sys

from .checker import cluster_provenance, event_identity


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m cluster.drills.provenance_dump PROVENANCE_DIRECTORY", file=sys.stderr)
        return 2
    for event in cluster_provenance(argv):
        print(json.dumps(list(event_identity(event))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
