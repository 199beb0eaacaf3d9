"""``infonce-book``: run one chapter (``run``), build the book (``build``), typeset its PDFs
(``pdf``), print the claims ledger (``ledger``), list the executable pages (``chapters``);
``infonce-book --help`` says more."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

# Standard library only at import time: `--help`, a bad argument, `chapters` and `ledger` answer in
# well under a second, without torch, scipy or pandas (tests/pipeline/test_cli_light.py), and a
# core-only install (no [book] extra) gets a message, not a traceback. What a command needs is
# imported where it runs.
from ..experiment.paths import project_root
from ..experiment.profiles import PROFILES
from .editions import EDITIONS

#: ``typeset.PAPERS`` and ``utils.device.DEVICES`` (and ``cuda:N``) without importing the print route or
#: torch (tests check that they agree); the extra a core-only install lacks.
PAPERS = ("a4", "letter")
DEVICES = ("auto", "cpu", "cuda")
BOOK_EXTRA = ".[book]"


def _seed(value: str) -> int:
    if not value.isdecimal():
        raise argparse.ArgumentTypeError(f"--seed must be an integer >= 0, got {value!r}")
    return int(value)


def _device(value: str) -> str:
    if value in DEVICES or value.startswith("cuda:"):
        return value
    raise argparse.ArgumentTypeError(f"--device must be one of {list(DEVICES)} (or cuda:N), got {value!r}")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="infonce-book", description="Execute and build the InfoNCE book.")
    sub = p.add_subparsers(dest="command", required=True)
    cmd = {name: sub.add_parser(name, help=text) for name, text in (
        ("run", "execute one chapter with papermill into _build/notebooks"),
        ("build", "execute every chapter (skipping unchanged ones) and build _build/html"),
        ("pdf", "typeset the built book with LaTeX to _build/pdf (book.pdf, appendix.pdf, one PDF per chapter)"),
        ("ledger", "print the claims ledger of the last build"),
        ("chapters", "list the executed pages: name, file, and whether it is a chapter or back matter (back "
                     "matter records no claims)"))}
    cmd["run"].add_argument("chapter", help="chapter name, e.g. c1_rate (see `infonce-book chapters`)")
    for c in (cmd["run"], cmd["build"]):
        c.add_argument("--profile", choices=PROFILES, default="standard",
                       help="experiment sizes: smoke (CI, minutes), standard (CPU; the default), full (GPU)")
        c.add_argument("--device", type=_device, default="auto",
                       help="auto (the default: CUDA when present), cpu or cuda")
        c.add_argument("--seed", type=_seed, default=0, help="seed of every random draw (default 0)")
        c.add_argument("--force", action="store_true", help="re-execute even if nothing changed")
    for name in ("run", "build", "pdf", "ledger"):
        cmd[name].add_argument("--build-dir", type=Path, default=None, help="build folder (default: _build)")
    for name in ("build", "pdf"):
        cmd[name].add_argument("--edition", choices=EDITIONS, default="web", help="web (default: _build/html, "
                               "_build/pdf) or students (no solutions: _build/html-students, _build/pdf-students)")
    cmd["pdf"].add_argument("--paper", choices=sorted(PAPERS), default="a4", help="paper size (default: a4)")
    cmd["ledger"].add_argument("--format", choices=("json", "table"), default="table", help="default: table")
    cmd["ledger"].add_argument("--id", dest="record_ids", nargs="+", default=None, metavar="ID", help="only these "
                               "records, by id (e.g. 4.C5-rademacher-slope-k) or old id (C5-rademacher-slope-k)")
    return p


def _terminate(signum, frame):
    """SIGTERM (``kill``, a CI timeout) unwinds like Ctrl-C: the running chapter's kernel is shut
    down and its temporary files removed; nothing of it reaches the build folder."""
    raise KeyboardInterrupt(f"signal {signum}")


#: The ``[book]`` extra's modules that the commands import (a core-only install has none of them);
#: those before "sphinx" are checked before a command runs chapters, which would otherwise fail in
#: their first cell, far from the cause.
_BOOK_MODULES = ("pandas", "matplotlib", "papermill", "jupytext", "nbformat", "ipykernel", "yaml", "tabulate",
                 "sphinx", "seaborn", "jupyter_book", "myst_nb", "nbclient", "jupyter_client", "sklearn",
                 "sphinx_proof", "sphinx_exercise", "sphinxcontrib")


def _missing_extra(name: str) -> int:
    print(f"error: this command needs {name!r}, which the core install leaves out; install the book's "
          f"extra: pip install -e '{BOOK_EXTRA}' in the repository's folder", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a locale that cannot write the ledger's text: escapes
        if hasattr(stream, "reconfigure") and (stream.encoding or "").lower().replace("-", "") != "utf8":
            stream.reconfigure(errors="backslashreplace")
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread: leave signals alone
        previous = None
    try:
        return _main(argv)
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] in _BOOK_MODULES:
            return _missing_extra(err.name)
        raise
    except BrokenPipeError:  # e.g. `infonce-book ledger | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("error: interrupted; the interrupted chapter left no result in the build folder (its last "
              "successful result, if any, is kept); run the command again to finish", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv=None) -> int:
    args = _parser().parse_args(argv)
    root = project_root()
    if not (root / "_toc.yml").is_file():
        print(f"error: no _toc.yml found at or above {Path.cwd()}; run infonce-book inside the "
              f"repository (or set INFONCE_BOOK_ROOT)", file=sys.stderr)
        return 2
    if args.command not in ("chapters", "ledger"):
        import importlib.util  # light; only the commands that run chapters check

        for name in _BOOK_MODULES[:_BOOK_MODULES.index("sphinx")]:
            if importlib.util.find_spec(name) is None:
                return _missing_extra(name)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    try:
        if args.command == "chapters":
            from .pages import back_matter, executable_pages  # yaml ([book] extra): per command

            not_chapters = back_matter(root)
            for name, path in executable_pages(root).items():
                rel = path.relative_to(root)
                print(f"{name}\t{rel}\t{'back matter' if str(rel.with_suffix('')) in not_chapters else 'chapter'}")
        elif args.command == "ledger":
            from ..experiment.ledger import find_record, format_table, load_records  # tabulate: per command

            build_dir = (args.build_dir or root / "_build").resolve()
            records = load_records(build_dir / "ledger")
            for failed in sorted((build_dir / "notebooks").glob("*.failed.ipynb")):
                print(f"warning: the last run of chapter {failed.name.split('.')[0]} failed ({failed}); "
                      f"its records below are from its last successful run", file=sys.stderr)
            if args.record_ids:
                try:
                    records = [find_record(records, rid) for rid in args.record_ids]
                except KeyError as err:
                    print(f"error: {err.args[0]}", file=sys.stderr)
                    return 2
            if args.format == "json":
                print(json.dumps(records, indent=2))
            else:
                print(format_table(records) if records else
                      "no ledger records: run `infonce-book build` (or `infonce-book run <chapter>`) first")
        elif args.command == "pdf":
            from .typeset import build_pdfs  # the print route's tool chain: per command

            print(build_pdfs(args.build_dir or root / "_build", root, edition=args.edition, paper=args.paper,
                             log=log).book)
        else:
            if args.command == "run":  # an unknown chapter is told before the heavy imports
                from .pages import resolve_chapter  # yaml ([book] extra): per command
                resolve_chapter(args.chapter, root)
            from . import run as pipeline  # the pipeline proper: torch, papermill (not for the light commands)

            if args.command == "run":
                print(pipeline.run_chapter(args.chapter, profile=args.profile, device=args.device, seed=args.seed,
                                           build_dir=args.build_dir, force=args.force, root=root, log=log).notebook)
            else:
                print(pipeline.build(profile=args.profile, device=args.device, seed=args.seed, root=root, log=log,
                                     build_dir=args.build_dir, force=args.force, edition=args.edition))
    except (ValueError, TypeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
