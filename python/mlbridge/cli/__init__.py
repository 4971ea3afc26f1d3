"""The ``mlbridge`` command: one sub-command per workflow stage.

Each sub-command lives in its own module with ``add_parser(sub)``, which sets
``run(args) -> int`` as the parser default. Exit codes scripts can rely on:
0 success, 1 the work failed (e.g. some modules did not compile), 2 a usage
error (bad flag, missing file, not a corpus), 130 interrupted.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import List, Optional

from .errors import UsageError, describe

#: sub-command modules, in --help order; a module that cannot be imported
#: (an optional dependency missing) is skipped.
COMMANDS = ["serve", "corpus", "log", "train", "tune", "convert", "worker", "version"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:   # argparse's own exit(2), one line with the command's name
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="mlbridge", description="mlbridge: ML models for compiler decisions, "
                 "and the MLGO workflow (corpora, scoring, training logs, training).")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f".{name}", __name__)
        except ImportError:
            continue
        mod.add_parser(sub)
    return ap


def main(argv: Optional[List[str]] = None, parser: Optional[argparse.ArgumentParser] = None) -> int:
    """Runs the command (or `parser`'s: a sub-command run on its own) with its exit codes."""
    from ..core.errors import MLBridgeError
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        if parser is None and argv[:1] == ["convert"]:   # its own parser (cli/convert.py's main), --help included
            from .convert import main as convert_main
            return int(convert_main(argv[1:]) or 0)
        args = (parser or build_parser()).parse_args(argv)
        return int(args.run(args) or 0)
    except UsageError as exc:
        print(f"mlbridge: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
        print(f"mlbridge: error: {exc.strerror or exc}: {exc.filename}" if exc.filename else f"mlbridge: error: {exc}",
              file=sys.stderr)
        return EXIT_USAGE
    except MLBridgeError as exc:
        print(f"mlbridge: error: {describe(exc)}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("mlbridge: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
