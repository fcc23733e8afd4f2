"""`python -m cluster.reference DIR`: write the generated reference pages into DIR
(the site's is `docs/reference`)."""

from __future__ import annotations

import argparse
import sys

from . import render_pages, write_pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cluster.reference",
        description="Write the documentation's reference pages, generated from the code.",
    )
    parser.add_argument("directory", metavar="DIR", help="where to write them (the site's: docs/reference)")
    args = parser.parse_args(argv)
    changed = write_pages(args.directory)
    print(
        f"{len(render_pages())} reference pages in {args.directory}; "
        + (f"rewritten: {', '.join(changed)}" if changed else "all were up to date")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
