"""The trainwreck command line: build, validate, new, serve, diagnose, merge, refresh, schema, sources."""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import sys
import time
from pathlib import Path

from generator import __version__
from generator.diagnose.errors import DiagnoseError
from generator.errors import ContentError, Problem, StrictModeError, TrainwreckError, tally

# What a finished build made, left for run() to drop with the process: freeing a large site's millions of
# objects one at a time takes longer than the rest of a warm build's exit.
_LEFT_TO_EXIT: list[object] = []
# Set by run(): this process ends when the command returns.
_ENDS_WITH_COMMAND: list[bool] = []


def _warn(warnings: list[Problem], quiet: bool) -> None:
    if not quiet:
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)


def find_root(start: Path) -> Path:
    """Return the nearest folder at or above start that holds site.yaml and entries/."""
    for folder in [start, *start.parents]:
        if (folder / "site.yaml").is_file() and (folder / "entries").is_dir():
            return folder
    raise TrainwreckError(f"no Trainwreck project (site.yaml and entries/) at or above {start}; use --root")


def _root(args: argparse.Namespace) -> Path:
    return Path(args.root).resolve() if args.root else find_root(Path.cwd().resolve())


def cmd_build(args: argparse.Namespace) -> int:
    """Build the site."""
    if _ENDS_WITH_COMMAND:
        # Nothing this process makes outlives it, and the build runs without cyclic collection anyway: with
        # collection never turned back on, no collection walks a large site's objects once the build returns.
        gc.disable()
    from generator.build import build

    root = _root(args)
    out = Path(args.out) if args.out else root / "site"
    started = time.perf_counter()
    result = build(root, out, strict=args.strict, search=not args.no_search, cache=not args.no_cache, jobs=args.jobs)
    _warn(result.warnings, args.quiet)
    seconds = time.perf_counter() - started
    searched = f", {result.indexed} of {result.shards} search shards indexed" if not args.no_search else ""
    print(
        f"Built {result.pages} pages ({result.entries} entries, {result.signatures} signatures) "
        f"into {result.out_dir} in {seconds:.1f}s with {len(result.warnings)} warning(s) "
        f"({len(result.rendered)} pages rendered{searched})."
    )
    _LEFT_TO_EXIT[:] = [result]
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Check the content without building the site; report only the problems under the given paths."""
    from generator.build import cores, load_catalog, source_memo

    root = _root(args)
    scope = _scope(root, args.paths)
    github = args.format == "github"
    prefix = _repository_prefix(root) if github else ""
    # What was checked is kept with the build's checks, beside the default site folder: the next run, or a
    # build, checks again only the files changed since, so a pre-commit hook stays quick on a large site.
    memo = None if args.no_cache else source_memo(root / "site")
    try:
        catalog = load_catalog(root, memo, args.jobs or cores())
    except ContentError as exc:
        if scope is None and not github:
            raise  # main() prints the report, as for every other command
        errors = [p for p in exc.problems if _within(p.path, scope)]
        if not errors:
            # Warnings come from the cross-file pass, which only runs on content without errors.
            print(
                f"OK: no errors in the {len(scope or [])} path(s) checked; their warnings are checked once "
                f"the {len(exc.problems)} problem(s) in other files are fixed."
            )
            return 0
        if not github:
            raise ContentError(errors) from None
        for error in errors:
            print(_located(error, prefix).annotation("error"))
        print(f"{tally(errors)}.", file=sys.stderr)
        return 1
    warnings = [w for w in catalog.warnings if _within(w.path, scope)]
    if github:
        if not args.quiet or args.strict:
            for warning in warnings:
                print(_located(warning, prefix).annotation("warning"))
        if args.strict and warnings:
            print(f"Aborted with {len(warnings)} warning(s) in strict mode.", file=sys.stderr)
            return 1
    else:
        _warn(warnings, args.quiet)
        if args.strict and warnings:
            raise StrictModeError(warnings)
    signatures = sum(len(e.signatures) for e in catalog.entries.values())
    checked = "" if scope is None else f" in the {len(scope)} path(s) checked"
    print(
        f"OK: {len(catalog.entries)} entries, {len(catalog.hubs)} hubs, {signatures} signatures, "
        f"{len(warnings)} warning(s){checked}."
    )
    return 0


def _scope(root: Path, paths: list[str]) -> list[str] | None:
    """Return the given files and folders relative to the project root, or None to report everything."""
    if not paths:
        return None
    scope = []
    for given in paths:
        # Symbolic links inside the project keep their own name, as the loader reports it.
        path = Path(os.path.abspath(given))
        if not path.exists() and not path.is_symlink():
            raise TrainwreckError(f"{given}: no such file or folder")
        if not path.is_relative_to(root):
            path = path.parent.resolve() / path.name
        if not path.is_relative_to(root):
            raise TrainwreckError(f"{given} is outside the project {root}")
        scope.append(path.relative_to(root).as_posix())
    return scope


def _within(path: str, scope: list[str] | None) -> bool:
    """Whether a problem's path is one of the scope's files or lies in one of its folders."""
    path = path.rstrip("/")
    return scope is None or any(s == "." or path == s or path.startswith(f"{s}/") for s in scope)


def _repository_prefix(root: Path) -> str:
    """Return the project folder's path in its git work tree and a slash (nothing at the top), as annotations need."""
    for folder in [root, *root.parents]:
        if (folder / ".git").exists():
            return "" if folder == root else f"{root.relative_to(folder).as_posix()}/"
    return ""


def _located(problem: Problem, prefix: str) -> Problem:
    return dataclasses.replace(problem, path=prefix + problem.path) if prefix else problem


def cmd_new(args: argparse.Namespace) -> int:
    """Scaffold a new entry."""
    from generator.scaffold import scaffold_entry, scaffold_from_log

    if args.from_log:
        path = scaffold_from_log(_root(args), args.from_log, args.id, args.system)
    elif args.id is None:
        raise TrainwreckError("give the new entry's id, or --from-log LOG:LINE to derive it from a log line")
    else:
        path = scaffold_entry(_root(args), args.id, args.system or "pytorch")
    print(f"Created {path}. Fill it in, then run `trainwreck validate`: it lists every field still missing.")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Build, serve on 127.0.0.1 and rebuild on change."""
    from generator.serve import serve

    root = _root(args)
    serve(root, Path(args.out) if args.out else root / "site", args.port, watch=not args.no_watch)
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """Print or write the JSON Schemas."""
    from generator.index import json_schemas

    schemas = json_schemas()
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, schema in schemas.items():
            (out / name).write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"Wrote {len(schemas)} schemas to {out}")
    else:
        print(json.dumps(schemas[f"{args.which}.schema.json"], indent=2, sort_keys=True))
    return 0


def cmd_refresh(args: argparse.Namespace) -> int:
    """Rewrite the committed derived files: schema/ and the packaged signature index."""
    from generator.build import THEME, load_catalog
    from generator.index import API_DIR, build_signature_index, json_schemas

    catalog = load_catalog(_root(args))
    files = build_signature_index(catalog)
    packaged = THEME / "generator" / "data" / "signatures.jsonl"
    packaged.write_text(files[f"{API_DIR}/signatures.jsonl"], encoding="utf-8")
    for name, schema in json_schemas().items():
        (THEME / "schema" / name).write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"Wrote {packaged.relative_to(THEME)} and {len(json_schemas())} schemas in schema/.")
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    """Diagnose logs against the signature index."""
    from generator.diagnose.run import diagnose
    from generator.diagnose.text import render_markdown, render_text, visible

    report, problems = diagnose(args.paths, Path(args.index) if args.index else None, args.engine)
    for problem in problems:
        print(f"error: {visible(problem)}", file=sys.stderr)
    if report.inputs:
        if args.json:
            print(report.model_dump_json(indent=2))
        else:
            print(render_markdown(report) if args.markdown else render_text(report), end="" if args.markdown else "\n")
    if args.redact:
        from generator.diagnose.redact import write_excerpt

        write_excerpt(report, Path(args.redact))
        print(f"Wrote a redacted excerpt to {args.redact}", file=sys.stderr)
    if args.html and report.inputs:
        from generator.diagnose.report_html import write_html

        write_html(report, Path(args.html))
        print(f"Wrote the HTML report to {args.html}", file=sys.stderr)
    if problems:
        return 2
    return 1 if any(f.role != "note" for f in report.findings) else 0


def cmd_merge(args: argparse.Namespace) -> int:
    """Merge per-node JSON reports into one."""
    from generator.diagnose.merge import merge_reports
    from generator.diagnose.text import render_text

    report = merge_reports([Path(p) for p in args.reports], Path(args.index) if args.index else None)
    print(report.model_dump_json(indent=2) if args.json else render_text(report))
    return 1 if any(f.role != "note" for f in report.findings) else 0


def cmd_lsp(args: argparse.Namespace) -> int:
    """Serve the Language Server Protocol over standard input and output."""
    try:
        from generator.lsp import serve
    except ImportError as exc:
        raise TrainwreckError(f"the language server needs pygls ({exc}): pip install 'trainwreck[lsp]'") from exc

    serve()
    return 0


def cmd_sources(args: argparse.Namespace) -> int:
    """Report sources without evidence in sources.lock.json; with --verify, look them up and record it."""
    from generator import provenance
    from generator.build import load_catalog

    root = _root(args)
    claims = provenance.claims(card.entry() for card in load_catalog(root).entries.values())
    lock = provenance.load_lock(root)
    if args.verify:
        mirrors = Path(args.mirrors) if args.mirrors else None
        for claim, evidence in provenance.verify(claims, lock, mirrors, recheck=args.recheck):
            if evidence is None:
                if claim.source not in lock:
                    print(f"{claim.source}: nothing here can look this up; record it by hand", file=sys.stderr)
                continue
            recorded = lock.get(claim.source, {})
            if not evidence.exists and recorded.get("how") in provenance.BY_HAND:
                print(f"{claim.source}: not found here ({evidence.note}); kept the evidence recorded by hand")
                continue
            lock[claim.source] = evidence.record()
            status = "found" if evidence.exists and not evidence.missing else "PROBLEM"
            print(f"{status}: {claim.source} ({evidence.how} {evidence.at}) {evidence.note}".rstrip())
        for source in provenance.stale(claims, lock):
            del lock[source]
        provenance.write_lock(root, lock)
    problems = provenance.unverified(claims, lock)
    for problem in problems:
        print(problem, file=sys.stderr)
    unseen = provenance.unseen(claims, lock)
    if args.verbose:
        for line in unseen:
            print(f"text not seen: {line}")
    texts = sum(len(c.texts) for c in claims)
    verbatim = sum(core in (lock.get(c.source) or {}).get("found", ()) for c in claims for _, core in c.texts)
    print(
        f"{len(claims) - len(problems)} of {len(claims)} sources found; of {texts} signatures' texts, "
        f"{verbatim} seen verbatim, {len(unseen)} not seen (--verbose lists them)."
    )
    return 1 if problems else 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    """Return the argument parser."""
    p = argparse.ArgumentParser(prog="trainwreck", description="Build the Trainwreck failure encyclopedia.")
    p.add_argument("--version", action="version", version=f"trainwreck {__version__}")
    p.add_argument("--root", help="project folder (default: the nearest folder with site.yaml)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print warnings")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    b = sub.add_parser("build", help="validate the content and build the site")
    b.add_argument("--strict", action="store_true", help="treat warnings as errors")
    b.add_argument("--out", help="output folder (default: site/)")
    b.add_argument("--no-search", action="store_true", help="skip the Pagefind search index")
    b.add_argument(
        "--no-cache",
        action="store_true",
        help="render every page, neither reading nor writing the page cache (.SITE.cache beside the output)",
    )
    b.add_argument("--jobs", type=_positive, help="processes that render pages (default: one per core)")
    b.set_defaults(func=cmd_build)

    v = sub.add_parser("validate", help="check entries, hubs and tags without building the site")
    v.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="report only the problems in these files or folders (the whole content is still checked)",
    )
    v.add_argument("--strict", action="store_true", help="treat warnings as errors")
    v.add_argument(
        "--format",
        choices=["text", "github"],
        default="text",
        help="github: print each problem as a GitHub Actions annotation on its file and line",
    )
    v.add_argument(
        "--no-cache",
        action="store_true",
        help="check every file, neither reading nor keeping what the last run checked (.site.cache beside site/)",
    )
    v.add_argument("--jobs", type=_positive, help="processes that check entries (default: one per core)")
    v.set_defaults(func=cmd_validate)

    n = sub.add_parser("new", help="scaffold a new entry")
    n.add_argument("id", nargs="?", help="kebab-case id, e.g. nccl-ib-retry-exceeded")
    n.add_argument("--system", help="system id; the entry goes to entries/<system>/ (default: pytorch)")
    n.add_argument(
        "--from-log",
        metavar="LOG:LINE",
        help="prefill the signature and its example from this log line (`diagnose` prints it for an unknown failure)",
    )
    n.set_defaults(func=cmd_new)

    s = sub.add_parser("serve", help="build, serve on 127.0.0.1 and rebuild on change")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--out", help="output folder (default: site/)")
    s.add_argument("--no-watch", action="store_true", help="do not rebuild on change")
    s.set_defaults(func=cmd_serve)

    d = sub.add_parser(
        "diagnose",
        help="match logs against the signature index and report the failure",
        description="Exit status: 0 no known failure (an exception no entry covers included), 1 a failure "
        "found, 2 bad usage, an unreadable input or index, or a matcher that is not installed.",
    )
    d.add_argument("paths", nargs="+", metavar="LOG", help="files, folders, globs, .gz files, or - for standard input")
    shape = d.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="print the versioned JSON report")
    shape.add_argument("--markdown", action="store_true", help="print the report as Markdown, for an issue thread")
    d.add_argument("--index", help="signatures.jsonl to use (default: the copy shipped with the tool)")
    d.add_argument("--engine", default="auto", help="candidate matcher: auto, hyperscan, re2 or literal")
    d.add_argument(
        "--redact", metavar="FILE", help="also write a shareable excerpt with hosts, IPs, users and tokens masked"
    )
    d.add_argument(
        "--html",
        metavar="FILE",
        help="also write the report as one self-contained HTML file (timeline, findings, fixes; no scripts)",
    )
    d.set_defaults(func=cmd_diagnose)

    m = sub.add_parser(
        "merge",
        help="merge the JSON reports of several nodes into one timeline",
        description="Exit status: 0 no known failure, 1 a failure found, 2 unreadable reports.",
    )
    m.add_argument("reports", nargs="+", metavar="REPORT", help="files written by `trainwreck diagnose --json`")
    m.add_argument("--json", action="store_true", help="print the merged JSON report")
    m.add_argument("--index", help="signatures.jsonl to use (default: the copy shipped with the tool)")
    m.set_defaults(func=cmd_merge)

    ls = sub.add_parser("lsp", help="serve log diagnoses and entry checks to an editor (Language Server Protocol)")
    ls.set_defaults(func=cmd_lsp)

    r = sub.add_parser("refresh", help="rewrite schema/ and the packaged signature index from the entries")
    r.set_defaults(func=cmd_refresh)

    sc = sub.add_parser("schema", help="print the JSON Schema of entries (or write all schemas)")
    sc.add_argument("which", nargs="?", default="entry", choices=["entry", "hub", "entries", "signature", "diagnosis"])
    sc.add_argument("--out", help="write every schema into this folder")
    sc.set_defaults(func=cmd_schema)

    so = sub.add_parser(
        "sources",
        help="check that every signature's source has recorded evidence (--verify looks them up)",
        description="Exit status: 0 every source has evidence that its file exists and prints its signatures' "
        "text, 1 otherwise.",
    )
    so.add_argument("--verify", action="store_true", help="look up sources without evidence: PyPI and local clones")
    so.add_argument("--mirrors", metavar="DIR", help="folder of clones named owner+repo/repo, read with git")
    so.add_argument("--recheck", action="store_true", help="with --verify, look up every source again")
    so.add_argument("-v", "--verbose", action="store_true", help="list the signatures whose text was not seen")
    so.set_defaults(func=cmd_sources)
    return p


def run() -> None:
    """The trainwreck command: main(), then exit, at once if a build left its objects to the exit."""
    _ENDS_WITH_COMMAND.append(True)
    code = main()
    if not _LEFT_TO_EXIT:
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    os._exit(code)  # everything the build started has ended; what remains is memory for the system to reclaim


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; print errors as messages, never as tracebacks, and return the exit code."""
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ContentError as exc:
        print(exc.report(), file=sys.stderr)
        return 1
    except StrictModeError as exc:
        _warn(exc.warnings, False)
        print(f"Aborted with {len(exc.warnings)} warning(s) in strict mode.", file=sys.stderr)
        return 1
    except TrainwreckError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except DiagnoseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader (head, less) went away; that is not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
