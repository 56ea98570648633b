"""Command line: ``python -m graphjit cache info|clear|path``."""

from __future__ import annotations

import argparse
import sys

from graphjit.link.llvm.cache.objects import cache_clear, cache_info, cache_path


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m graphjit", description="graphjit utilities")
    sub = parser.add_subparsers(dest="command", required=True)
    cache = sub.add_parser("cache", help="the compile cache: objects, plans, rewritten graphs ($GRAPHJIT_CACHE_DIR)")
    cache.add_argument("action", choices=["info", "clear", "path"])
    args = parser.parse_args(argv)
    if args.action == "path":
        print(cache_path())
    elif args.action == "info":
        info = cache_info()
        print(f"dir: {info['dir']}\nentries: {info['entries']}\nplans: {info['plans']}\n"
              f"graphs: {info['graphs']}\nbytes: {info['bytes']}")
        if info["refused"]:
            print(f"refused: {info['refused']} (compiles run without the cache)")
    else:
        print(f"removed {cache_clear()} entries from {cache_path()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
