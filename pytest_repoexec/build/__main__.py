"""``python -m pytest_repoexec.build build|export ...``: the sub-commands without ``repoexec``'s own parser."""

import argparse
import sys

from .command import register


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_repoexec.build")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
