"""The pipeline: load, validate, link, render, write, index."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import multiprocessing
import os
import pickle
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.cache import (
    NOTES,
    ROWS,
    SITE,
    SPARE,
    KeptDict,
    PageCache,
    Record,
    code_digest,
    kept_record,
    package_digest,
    read_kept_dict,
    read_record,
    write_kept_dict,
    write_record,
)
from generator.crawl import build_crawl_files
from generator.diagnose.rules import browser_rules
from generator.errors import BuildError, Problem, StrictModeError
from generator.index import KeptIndex, write_signature_index
from generator.link import Catalog, link_catalog
from generator.load import Memo, load_sources
from generator.markup import pygments_css
from generator.render import (
    Rendered,
    Renderer,
    entry_context,
    entry_notes,
    example_files,
    page_views,
    prune_markup,
    render_views,
    unchanged_entries,
)
from generator.search import (
    BUNDLE,
    Indexed,
    SearchPlan,
    cache_search,
    die_with_parent,
    index_ahead,
    keep_guide,
    link_search,
    search_plan,
)
from generator.validate import collect_from_here, validate_sources
from generator.write import (
    Stamp,
    clear_folders,
    copy_static,
    folder_stamps,
    is_site,
    remove_files,
    remove_folder,
    remove_pages_except,
    staging,
    sweep_folder,
    write_files,
    write_pages,
)

# Templates and static assets ship beside the package; content may live anywhere.
THEME = Path(__file__).resolve().parent.parent
SEARCH = BUNDLE.strip("/")  # the folder of the search bundles
# The folders of a site written whole by every build, never file by file (the search bundles by shard).
WHOLE = ("static", "api", SEARCH)


@dataclass(frozen=True)
class BuildResult:
    """What a build wrote."""

    out_dir: Path
    base_path: str
    pages: int
    entries: int
    signatures: int
    warnings: list[Problem]
    rendered: list[str]  # the pages not found in the page cache, hence changed since the last build
    search: SearchPlan  # what the search index holds, for `serve` to index after an update
    indexed: int = 0  # search shards Pagefind indexed (the others were as the cache kept them)
    catalog: Catalog | None = None  # the content built, for `serve` to render an edited page from
    written: tuple[str, ...] = ()  # in an update, the pages written (rendered now or taken from the cache)
    shards: int = 0  # search shards the index is in; none when the build wrote no index


def load_catalog(root: Path, memo: Memo | None = None, jobs: int = 1) -> Catalog:
    """Load, validate (entries over jobs processes) and link the content under root; raise ContentError on problems."""
    with fewer_collections():
        try:
            return link_catalog(validate_sources(load_sources(root, memo, parse_entries=False), jobs))
        finally:
            if memo is not None:
                memo.save()  # what was checked, even if a problem stops the build


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Run no cyclic garbage collection while the block runs, then as before.

    A build makes millions of objects that live until it ends and form almost no cycles; each collection
    walks them all again, which cost a third of loading a large site's catalog and of making its views.
    Reference counting still frees everything else at once; the processes forked to render and index
    collect as usual.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def cache_folder(out_dir: Path) -> Path:
    """Where builds into out_dir keep rendered pages: beside it, so a cache never lands in the site."""
    out_dir = out_dir.resolve()
    return out_dir.parent / f".{out_dir.name}.cache"


def source_memo(out_dir: Path) -> Memo:
    """The parsed and checked content files that builds into out_dir keep beside it."""
    return Memo(cache_folder(out_dir) / "sources.pickle", package_digest())


def build(
    root: Path,
    out_dir: Path,
    *,
    strict: bool = False,
    search: bool = True,
    theme: Path = THEME,
    cache: bool = True,
    jobs: int | None = None,
    memo: Memo | None = None,
    update: bool = False,
    keep: Callable[[str], bool] = lambda page: False,
) -> BuildResult:
    """Build the site from the content under root into out_dir, replacing it only on success.

    With update on (for `serve`), out_dir is updated in place instead: only changed pages are written,
    each atomically, except those keep names (written since by someone else), and its search index is
    left for the caller to replace (search.reindex).
    """
    with fewer_collections():
        # Before anything else: the shards an edit of a few entries changes are indexed from the last
        # build's plan while this one loads its catalog, and are then found in the cache.
        guess = search and cache and not update and "fork" in multiprocessing.get_all_start_methods()
        ahead = _Beside(index_ahead if guess else None, root, cache_folder(out_dir) / "search")
        try:
            result = _build(root, out_dir, strict, search, theme, cache, jobs, memo, update, keep)
        except BaseException:
            ahead.abandon()
            raise
        ahead.join()
        try:
            guessed = int(ahead.result() or 0)
        except Exception:  # noqa: BLE001 - a guess that failed cost only its time; the build indexed what it needed
            guessed = 0
        return dataclasses.replace(result, indexed=result.indexed + guessed)


def _build(
    root: Path,
    out_dir: Path,
    strict: bool,
    search: bool,
    theme: Path,
    cache: bool,
    jobs: int | None,
    memo: Memo | None,
    update: bool,
    keep: Callable[[str], bool],
) -> BuildResult:
    # Everything is gathered and checked before the first byte is written.
    if memo is None and cache:
        memo = source_memo(out_dir)
    catalog = load_catalog(root, memo, jobs or cores())
    if strict and catalog.warnings:
        raise StrictModeError(catalog.warnings)

    folder = cache_folder(out_dir)
    renderer = Renderer(catalog, theme / "templates", folder / "templates" if cache else None)
    salt = code_digest(theme / "templates", [catalog.site])
    notes = KeptDict({}, 0, 0)
    if cache:
        renderer.kept_markup = (folder / "markup", package_digest().hex())
        # Before the search plan and the views: the entries whose pages are as the last build made them.
        notes = read_kept_dict(folder, NOTES, salt + entry_context(catalog))
        renderer.kept = unchanged_entries(catalog, notes)
    # Keyed for the index this build writes, or the one `serve` writes after an update.
    plan = search_plan(renderer, catalog.site.language, keyed=cache and (search or update))
    in_place = update and cache and is_site(out_dir)  # `serve`'s, updated page by page
    # The search index is begun first, from the plan alone: Pagefind indexing a changed shard is the
    # longest part of a one-entry rebuild, and it needs no page. It writes into the site's folder once
    # the build has one; a site updated in place is indexed by its caller (search.reindex).
    stage_ready = _Later()

    def guide() -> None:
        """Keep what the next build's index_ahead reads: called by the indexing process once it has indexed."""
        if memo is not None:
            entries = {name: Renderer.entry_page(entry_id) for entry_id, name in catalog.entry_paths.items()}
            titles = {tag: info.title for tag, info in catalog.tags.items()}
            keep_guide(folder / "search", root, plan, entries, memo.statuses(), titles)

    indexing = _Beside(
        _index_once_staged if search and not in_place else None,
        plan,
        folder / "search" if cache else None,
        jobs or cores(),
        stage_ready,
        guide if cache else None,
    )
    try:
        return _write(
            out_dir, catalog, renderer, plan, indexing, stage_ready, salt, notes, theme, cache, jobs, in_place, keep
        )
    except BaseException:
        stage_ready.close()
        indexing.abandon()
        raise


def _write(
    out_dir: Path,
    catalog: Catalog,
    renderer: Renderer,
    plan: SearchPlan,
    indexing: _Beside,
    stage_ready: _Later,
    salt: str,
    notes: KeptDict,
    theme: Path,
    cache: bool,
    jobs: int | None,
    in_place: bool,
    keep: Callable[[str], bool],
) -> BuildResult:
    """Render the catalog's pages and write the site: in place, or into a folder swapped in whole."""
    # Every page as a view: the data its template reads, cheap to make and to compare with the last build.
    views = page_views(renderer)
    rendered: list[str] = []
    changed: list[str] = []
    skipped: set[str] = set()  # pages keep named, which the folder holds as someone else wrote them
    indexed = Indexed(0, 0)  # none by this build: a site updated in place is indexed by its caller
    folder = cache_folder(out_dir)
    store = PageCache(folder / "pages", salt) if cache else None
    kept_rows = read_kept_dict(folder, ROWS, salt) if store else KeptDict({}, 0, 0)
    renderer.fragments = dict(kept_rows)  # what the templates add to, compared with what was kept at the end
    kept_index = KeptIndex(folder / "index", package_digest()) if cache else None
    files: dict[str, str | bytes] = {
        **build_crawl_files(catalog, [view.path for view in views]),
        **example_files(catalog),
        "static/pygments.css": pygments_css(),
        "static/diagnose-rules.js": browser_rules(),
    }

    def keep_for_next(store: PageCache) -> None:
        """Keep what the next build takes from this one: the pages used, the rows, the entries' notes, their markup."""
        store.prune()
        write_kept_dict(folder, ROWS, salt, renderer.row_fragments(), kept_rows)
        keys = {view.path: store.key(view) for view in views}
        noted = entry_notes(catalog, keys, plan.keys, notes, renderer.kept)
        write_kept_dict(folder, NOTES, salt + entry_context(catalog), noted, notes)
        prune_markup(folder / "markup", catalog.entries)

    paths = {view.path for view in views}
    stamps: dict[str, Stamp | None] = {}  # of the site's folders: none for a site updated in place (`serve`)
    if in_place:
        # Only what changed, file by file, while the server reads the folder.
        held = read_record(folder, SITE, salt)
        copy_static(theme / "static", out_dir)
        write_files(out_dir, files, atomic=True)
        write_signature_index(out_dir, catalog, kept_index)
        fresh = render_views(
            renderer, views, store, jobs or cores(), rendered.append, written=held.pages if held else {}
        )
        write_pages(out_dir, _except(fresh, keep, skipped, changed), atomic=True)
        if held is None:
            remove_pages_except(out_dir, paths)
        else:
            remove_files(out_dir, (held.pages.keys() - paths) | (held.files - files.keys()))
    else:
        # Into a staging folder: the spare (the site before the last build, brought up to date) or a new
        # one. Pagefind indexes the search documents and the signature index is written while the pages
        # are rendered over the cores and written as they come.
        spare = folder / "spare" if store else None
        # A cache that cannot tell its files from ones written over by hand since cannot vouch for the spare's.
        held = read_record(folder, SPARE, salt) if store and store.settled is not None else None
        before = kept_record(folder, SITE, salt) if store else None  # to keep as the spare's, once it is
        write_record(folder, SPARE, salt, None)  # until the spare is recorded again, it is not to be trusted
        aside: Path | None = None  # the spare's folders written whole again, set aside
        written: list[str] = []  # the pages written into the folder
        known: dict[str, Stamp] = {}  # the stamps of the verified folders nothing was written into since
        bundles: dict[str, str] = {}  # the spare's search bundles as recorded, each by its shard's key
        with staging(out_dir, len(views), spare, reuse=held is not None) as stage:
            if stage != spare:
                held = None
            elif held is not None:
                # The search bundles the spare holds stay, for the indexing to bring up to date shard by
                # shard (search.link_search); the other folders are set aside before they are written again.
                bundles = held.bundles if indexing.call is not None else {}
                aside = clear_folders(stage, [name for name in WHOLE if not (bundles and name == SEARCH)], out_dir)
            stage_ready.give((stage, bundles))  # only now: the spare's old bundles are set aside
            # It ends long before the pages are written; the pages and the search index are what the build
            # waits for, and on two cores three processes share them.
            signing = _Beside(write_signature_index, stage, catalog, kept_index, later=True)
            # The spare is swept by a process of its own while the pages are rendered here: nothing is
            # written into its swept folders before the sweep is done.
            sweeping = _Beside(_sweep_spare if held and store else None, stage, held, store, paths, files.keys())
            try:
                copy_static(theme / "static", stage)  # a folder the sweep leaves alone
                pages: Iterable[Rendered] = render_views(
                    renderer, views, store, jobs or cores(), rendered.append, written=held.pages if held else None
                )
                if held is not None:
                    pages = list(pages)  # rendered into the cache while the sweep runs: files, not HTML, held
                    sweeping.join()
                    lost, verified = sweeping.result()
                    known = {folder: stamp for folder in verified if (stamp := held.folders.get(folder))}
                    # The pages the spare was to hold as they are, but does not (removed or written by hand).
                    made = {page for page, _ in pages}
                    again = [view for view in views if view.path in lost and view.path not in made]
                    pages += list(render_views(renderer, again, store, jobs or cores(), rendered.append))
                    kept = {page: key for page, key in held.pages.items() if page in paths and page not in lost}
                    held = Record(kept, held.files)
                write_files(stage, files)
                write_pages(stage, _noted(pages, written), atomic=held is not None)
                if store:
                    keep_for_next(store)  # while the search index and the signature index are written
            finally:
                sweeping.abandon()  # a build that failed while the sweep ran; else it has ended
                indexing.join()
                signing.join()
            indexed = indexing.result() or Indexed(0, 0)
            signing.result()
            # Taken last: the next build into this folder reads none that is as it was now.
            stamps = folder_stamps(stage, [*paths, *files], WHOLE, known, [*written, *files]) if store else {}
            write_record(folder, SITE, salt, None)  # the folder swapped in next is not the one recorded
        if spare is not None and spare.is_dir():
            write_record(folder, SPARE, salt, before)  # the site just replaced, kept as the spare
        remove_folder(aside, len(views))  # only now: removing thousands of files beside the build slows it
    if store:
        # A page left as someone else wrote it is not recorded as this build's, so the next one writes it.
        keys = {view.path: store.key(view) for view in views}
        pages_now = {page: key for page, key in keys.items() if page not in skipped}
        write_record(folder, SITE, salt, Record(pages_now, frozenset(files), stamps, indexed.bundles))
        if in_place:
            keep_for_next(store)
    else:
        # What the folder now holds is not what the cache last recorded.
        write_record(folder, SITE, "", None)

    signatures = sum(len(e.signatures) for e in catalog.entries.values())
    return BuildResult(
        out_dir,
        catalog.site.path(),
        len(views),
        len(catalog.entries),
        signatures,
        catalog.warnings,
        rendered,
        plan,
        indexed.indexed,
        catalog,
        tuple(changed),
        indexed.shards,
    )


def _sweep_spare(
    stage: Path, held: Record, store: PageCache, paths: set[str], files: Iterable[str]
) -> tuple[set[str], set[str]]:
    """Sweep the spare of what this build does not write too; return the pages it lacks, and its folders verified.

    A page kept must still be the cache's file of its key (write.sweep_folder): known by its inode.
    """
    inodes = store.inodes()
    wanted = {page: inodes.get(key, -1) for page, key in held.pages.items() if page in paths}
    kept = {**wanted, **dict.fromkeys(held.files & set(files))}
    verified: set[str] = set()
    listed = [*held.pages, *held.files]
    lost = sweep_folder(stage, kept, WHOLE, held.folders, listed, store.settled, verified)
    return lost, verified


def _noted(pages: Iterable[Rendered], written: list[str]) -> Iterator[Rendered]:
    """The pages, each added to written as it is given out."""
    for page in pages:
        written.append(page[0])
        yield page


def _except(
    pages: Iterable[Rendered], keep: Callable[[str], bool], skipped: set[str], passed: list[str]
) -> Iterator[Rendered]:
    """The pages keep does not name, each added to passed; the ones it names are added to skipped."""
    for page, html in pages:
        if keep(page):
            skipped.add(page)
        else:
            passed.append(page)
            yield page, html


def _index_once_staged(
    plan: SearchPlan, cache: Path | None, jobs: int, stage: _Later, guide: Callable[[], None] | None
) -> Indexed:
    """Index what the cache lacks from the plan alone; once the build has its folder, write the bundles there.

    Then keep the guide index_ahead reads in the next build.
    """
    indexed = cache_search(plan, cache, jobs) if cache is not None and plan.keys else 0
    given = stage.get()
    if given is None:
        return Indexed(indexed, 0)  # the build stopped before it had a folder
    folder, held = given
    written = link_search(folder, plan, cache, jobs, held)
    if guide is not None and plan.keys:
        guide()
    return Indexed(indexed + written.indexed, written.shards, written.bundles)


class _Later:
    """What the build gives a process forked before it had it: the folder to write into, and its search bundles."""

    def __init__(self) -> None:
        self.reader, self.writer = multiprocessing.Pipe(duplex=False)

    def give(self, value: tuple[Path, dict[str, str]]) -> None:
        """Send the value."""
        self.writer.send(value)

    def close(self) -> None:
        """Give nothing more: a process waiting in get() gets None."""
        self.writer.close()

    def get(self) -> tuple[Path, dict[str, str]] | None:
        """The value given, waiting for it; None once the giver closed without giving one."""
        # A forked process holds a copy of the giving end too: closed here, else it would wait forever.
        self.writer.close()
        try:
            value: tuple[Path, dict[str, str]] = self.reader.recv()
        except EOFError:
            return None
        return value


class _Beside:
    """A call run in a process of its own beside the build; result() returns what it returned, or raises.

    A forked process, made before the render workers are, rather than a thread: forking a process that
    runs another thread can copy a lock that thread held, and the render workers are forked.
    """

    def __init__(self, call: Callable[..., Any] | None, *args: object, later: bool = False) -> None:
        self.call, self.args = call, args
        self.later = later  # whether the process yields the cores to the build's others: none waits on it
        self.outcome: tuple[Any, BaseException | None] = (None, None)
        self.process: Any = None
        if call is None:
            return
        if "fork" not in multiprocessing.get_all_start_methods():
            self.process = False  # run in this process when join() is called
            return
        self.reader, writer = multiprocessing.get_context("fork").Pipe(duplex=False)
        self.process = multiprocessing.get_context("fork").Process(target=self._run, args=(writer,), daemon=True)
        self.process.start()
        writer.close()

    def _call(self) -> tuple[Any, BaseException | None]:
        try:
            assert self.call is not None
            return self.call(*self.args), None
        except BaseException as exc:  # handed to the process that asks for the result
            return None, exc

    def _run(self, writer: Any) -> None:
        die_with_parent()
        if self.later:
            with contextlib.suppress(OSError):
                os.nice(10)
        collect_from_here()  # this process makes and drops documents and records
        value, error = self._call()
        try:
            writer.send((value, error))
        except (pickle.PicklingError, TypeError, AttributeError):
            writer.send((None, BuildError(f"{type(error).__name__}: {error}")))

    def join(self) -> None:
        """Wait for the call to end."""
        if self.process is False:
            self.outcome = self._call()
        elif self.process is not None:
            try:
                self.outcome = self.reader.recv()
            except EOFError:
                self.outcome = (None, BuildError("the search indexing process died"))
            self.process.join()
        self.process = None

    def abandon(self) -> None:
        """Stop the call, for a build that failed: its process is ended, and a call not yet run never is."""
        if self.process:
            self.process.terminate()
            self.process.join()
        self.process = None

    def result(self) -> Any:
        """What the call returned; raise what it raised."""
        value, error = self.outcome
        if error is not None:
            raise error
        return value


def cores() -> int:
    """The cores this process may run on: how many processes a build or a check runs at once by default."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
