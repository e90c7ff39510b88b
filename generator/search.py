"""Index the site's searchable text with Pagefind: a small document per page, in shards of bounded size.

Pagefind is given, for each entry and hub, a document of the words a reader searches by (its title,
error strings, observations, symptoms, mechanism, misreadings, root causes, checks and fix), never the
rendered page: a page's navigation, highlighted code and derived FAQ cost Pagefind more to parse than
the words it indexes, and they are not what anyone searches for. The documents are split into shards
of at most SHARD_PAGES, each indexed by its own Pagefind process, so no process grows with the site;
the search page merges them. A shard whose documents are as they were is taken from the cache.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import fcntl
import functools
import gzip
import hashlib
import html
import json
import os
import pickle
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar

from generator.cache import package_digest
from generator.errors import BuildError
from generator.load import content_files, file_status
from generator.markup import markdown_text
from generator.render import EntryPageContext, Facets, HubLayout, HubPageContext, PageView, Renderer, entry_facets
from generator.schema import Entry, Hub
from generator.taxonomy import SYSTEMS
from generator.validate import EntryCard, plain_digest, read_and_check
from generator.write import exchange, link_tree, replace_file

# Error text is full of identifiers like grad_norm, NCCL_DEBUG and ProcessGroupNCCL.cpp:1234.
INCLUDE_CHARACTERS = "_.:"
PR_SET_PDEATHSIG = 1  # linux/prctl.h
BUNDLE = "pagefind/"
# An edit indexes its shard again, and Pagefind takes about 4 ms a document (one core's worth, on two):
# at 200 pages a one-entry rebuild's indexing stays under a second. The search page merges one more
# index per 200 pages (two small requests each before its first search). Pagefind holds a shard's
# index in memory, about 0.3 MB a page: a shard stays well under 500 MB.
SHARD_PAGES = 200
BUCKETS = 1 << 16  # pages are laid out in this many buckets by a digest of their path, shared out among shards
# Documents handed to a Pagefind process before it has answered the earlier ones: enough to keep it busy,
# few enough that it never holds a shard's documents all at once.
IN_FLIGHT = 32
DONE = ".complete"  # marks a cached shard as whole
DOCUMENTS = ".documents.pickle"  # beside a cached shard: its documents by path, with their keys
SHARDS = "shards.json"  # in the first bundle: the folders of the others, relative to it
# Pagefind writes its own search interfaces into every bundle, and no page loads them: static/search.js
# draws the results. Of a shard the search page merges it reads the index alone: the first bundle's
# scripts and WebAssembly search every shard (Pagefind loads a merged index with load_wasm off).
# At 10,000 pages the files left out were a quarter of the bytes of the search bundles.
UNUSED = (
    "pagefind-ui.js",
    "pagefind-ui.css",
    "pagefind-component-ui.js",
    "pagefind-component-ui.css",
    "pagefind-modular-ui.js",
    "pagefind-modular-ui.css",
    "pagefind-highlight.js",
)
FIRST_ONLY = ("pagefind.js", "pagefind-worker.js")  # with the bundle's wasm.*.pagefind: what searches the shards
GUIDE = ".guide.pickle"  # beside the cache's folder (search/ gives search.guide.pickle): what index_ahead reads
AHEAD_MOST = 16  # entry files changed since the last build beyond which index_ahead leaves the indexing to the build


@dataclass(frozen=True)
class SearchRecord:
    """What Pagefind indexes for one page: the page's path and a small HTML document of its searchable text."""

    path: str
    html: str


def shard_count(pages: int) -> int:
    """How many shards a site with this many searchable pages is indexed in."""
    return max(1, -(-pages // SHARD_PAGES))


@dataclass(frozen=True)
class SearchPage:
    """A page that has a search document: its path, and its view, made only if its document is."""

    path: str
    view: Callable[[], PageView]


@dataclass(frozen=True)
class SearchPlan:
    """What the search index holds: the pages that have a search document, and a key for each document.

    A document's key is a digest of what it is made from, so a shard whose keys are as they were needs
    no document made and no indexing. The plan is made from the catalog before any page's view is, so
    that the shards to index can be known, and indexed, while the build makes the rest.
    """

    pages: list[SearchPage]  # entry and hub pages, in path order
    keys: dict[str, str]  # document key by path; empty when nothing is to be kept
    language: str


def search_plan(renderer: Renderer, language: str, keyed: bool = True) -> SearchPlan:
    """The plan of the search index of a catalog; with keyed, each document's key for the cache."""
    catalog = renderer.catalog
    pages = [SearchPage(renderer.entry_page(e.id), partial(renderer.render_entry, e)) for e in catalog.entries.values()]
    hubs = [renderer.render_hub(h) for h in catalog.hubs.values()]
    pages += [SearchPage(view.path, partial(_given, view)) for view in hubs]
    keys: dict[str, str] = {}
    if keyed:
        # What _entry_document reads of an entry, without making its view: its card's digest and facets.
        kept = renderer.kept

        def key(e: EntryCard) -> str:
            known = kept.get(e.id)
            return known[1] if known and known[1] else _entry_key(e.digest, renderer.facets(e))

        keys = {renderer.entry_page(e.id): key(e) for e in catalog.entries.values()}
        pairs = zip(hubs, catalog.hubs.values(), strict=True)
        keys.update((view.path, _hub_key(hub, renderer.hub_layout(hub))) for view, hub in pairs)
    return SearchPlan(sorted(pages, key=lambda page: page.path), keys, language)


def _given(view: PageView) -> PageView:
    return view


def _entry_key(entry_digest: str, facets: Facets) -> str:
    """A digest of what an entry's search document is made from (see _entry_document)."""
    return plain_digest(("entry", entry_digest, facets.category_name, facets.systems, facets.tags))


def _hub_key(hub: Hub, layout: list[HubLayout]) -> str:
    """A digest of what a hub's search document is made from (see _hub_document): the hub and its rows' texts."""
    # The rows' title, errors, indicates and tell-apart, as HubRowValues holds them.
    rows = [(row[1], row[3], row[5], row[6]) for _, _, _, group in layout for row in group]
    return plain_digest(("hub", hub.model_dump_json(), [(title, about) for _, title, about, _ in layout], rows))


class _Paged(Protocol):
    @property
    def path(self) -> str: ...


P = TypeVar("P", bound=_Paged)


def shards(records: list[P]) -> list[tuple[str, list[P]]]:
    """Each shard's bundle folder (site-relative) and records, in path order; the first is the one the page loads.

    A record's shard is fixed by a digest of its path alone (the shard's share of BUCKETS buckets), so an
    edit keeps every page where it was and a new page changes only its own shard, until the site grows
    into one more shard. Digests share the pages out about evenly (within a fifth of the mean at 200 pages).
    """
    count = shard_count(len(records))
    runs: list[list[P]] = [[] for _ in range(count)]
    for record in sorted(records, key=lambda record: record.path):
        runs[_bucket(record.path) * count // BUCKETS].append(record)
    found = [(k, run) for k, run in enumerate(runs, 1) if run]
    return [(BUNDLE if n == 0 else f"{BUNDLE}shard-{k}/", run) for n, (k, run) in enumerate(found)]


@functools.cache  # a build lays the shards out three times, from one process's pages
def _bucket(path: str) -> int:
    return int.from_bytes(hashlib.sha256(path.encode()).digest()[:8], "big") % BUCKETS


def search_records(views: Iterable[PageView], language: str) -> list[SearchRecord]:
    """The search document of every page that has one (entries and hubs), in path order."""
    records = []
    for view in views:
        if isinstance(ctx := view.context, EntryPageContext):
            entry = ctx.entry if isinstance(ctx.entry, Entry) else ctx.entry.entry()
            facets = Facets(ctx.category_name, tuple(ctx.systems), tuple(ctx.tags))
            records.append(SearchRecord(view.path, _entry_document(entry, facets, language)))
        elif isinstance(view.context, HubPageContext):
            records.append(SearchRecord(view.path, _hub_document(view.context, language)))
    return sorted(records, key=lambda record: record.path)


def _document(
    language: str,
    title: str,
    filters: list[tuple[str, str]],
    sorts: list[tuple[str, str]],
    weighted: list[str],
    texts: Iterable[str],
) -> str:
    """A page as Pagefind reads it: the title, filter and sort values in attributes, then the text."""
    esc = html.escape
    parts = [f'<!DOCTYPE html><html lang="{esc(language)}"><head><meta charset="utf-8"></head>']
    parts.append("<body data-pagefind-body>")
    parts.append(f'<h1 data-pagefind-meta="title">{esc(title)}</h1>')
    parts += [f'<span data-pagefind-filter="{n}[data-value]" data-value="{esc(v)}"></span>' for n, v in filters]
    parts += [f'<span data-pagefind-sort="{n}[data-value]" data-value="{esc(v)}"></span>' for n, v in sorts]
    # Error strings outrank prose: a reader pastes them.
    parts += [f'<p data-pagefind-weight="5">{esc(text)}</p>' for text in weighted]
    parts += [f"<p>{esc(text)}</p>" for text in texts if text]
    parts.append("</body></html>")
    return "\n".join(parts)


def _entry_document(e: Entry, facets: Facets, language: str) -> str:
    """An entry's search document: made from the entry and its facets alone, which its key covers (_entry_key)."""
    systems = [name for _, name, _ in facets.systems]
    tags = [title for _, title in facets.tags]
    filters = [("category", facets.category_name), ("severity", e.severity)]
    filters += [("system", name) for name in systems] + [("tag", title) for title in tags]
    markdown = [
        e.summary,
        *(s.note or "" for s in e.signatures),
        *e.observations,
        *(part for s in e.symptoms for part in (s.symptom, s.cause)),
        e.mechanism,
        *(part for m in e.misread_as for part in (m.diagnosis, m.why_wrong, m.tell_apart)),
        *e.root_causes,
        *(c.step for c in e.confirm),
        e.fix.summary,
        *e.fix.steps,
        e.verify.step,
        e.verify.expected,
    ]
    facts = [f"Category: {facets.category_name}", f"Severity: {e.severity}", f"Systems: {', '.join(systems)}"]
    if tags:
        facts.append(f"Tags: {' '.join(tags)}")
    return _document(
        language,
        e.title,
        filters,
        [("updated", e.updated.isoformat())],
        [s.pattern for s in e.signatures],
        [*facts, *map(markdown_text, markdown)],
    )


def _hub_document(ctx: HubPageContext, language: str) -> str:
    h = ctx.hub
    rows = [row for group in ctx.groups for row in group.rows]
    markdown = [
        h.summary,
        h.intro,
        *(part for g in ctx.groups for part in (g.title, g.description or "")),
        *(part for row in rows for part in (row.entry.title, row.indicates, row.tell_apart or "")),
        *(f"{t.name} {t.reveals}" for t in h.tools),
    ]
    weighted = [err for row in rows for err in row.errors]
    system = [("system", SYSTEMS[h.system].name)]
    return _document(language, h.title, system, [], weighted, map(markdown_text, markdown))


def die_with_parent() -> None:
    """In a child process (the indexer, Pagefind): have the kernel kill it when its parent dies, as on a kill -9."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _pagefind_version() -> str:
    try:
        return metadata.version("pagefind")
    except metadata.PackageNotFoundError:
        return "?"


def _settings(plan: SearchPlan) -> str:
    """What every document and bundle also depends on: the generator's code, Pagefind's version and settings."""
    return f"{package_digest().hex()}\0pagefind=={_pagefind_version()}\0{INCLUDE_CHARACTERS}\0{plan.language}\0"


def _shard_key(plan: SearchPlan, pages: list[SearchPage]) -> str | None:
    """The cache key of a shard: the settings, and each page's path and key."""
    if not plan.keys:
        return None
    h = hashlib.sha256(_settings(plan).encode())
    for page in pages:
        h.update(f"{page.path}\0{plan.keys[page.path]}\0".encode())
    return h.hexdigest()


def cache_search(plan: SearchPlan, cache: Path, jobs: int = 1) -> int:
    """Index into the cache folder each shard of plan it does not hold whole; return how many that was.

    Needs no site folder, so it can run before the build has one. Documents are made only for the
    shards indexed, and of those, only for pages whose key changed since the shard they were in last.
    Waits first for index_ahead, which may have indexed them already.
    """
    with _cache_lock(cache):
        layout = shards(plan.pages)
        keys = [_shard_key(plan, pages) for _, pages in layout]
        todo = [k for k, key in enumerate(keys) if key is not None and not _kept(cache, key)]
        if not todo:
            return 0
        settings = _settings(plan)
        # The documents of the shards this build replaces: a changed shard's other documents are made again
        # only if what they are made from changed.
        earlier = _earlier_documents(cache, {k for k in keys if k}, settings)

        def one(k: int) -> None:
            records = _documents(layout[k][1], plan, earlier)
            _index_into(cache, typing.cast(str, keys[k]), records, plan.keys, settings)

        try:
            with ThreadPoolExecutor(max(1, min(jobs, len(todo)))) as pool:
                list(pool.map(one, todo))
        except OSError as exc:
            raise BuildError(f"could not write the search index: {exc}") from exc
        return len(todo)


def _index_into(cache: Path, key: str, records: list[SearchRecord], keys: dict[str, str], settings: str) -> None:
    """Index a shard's records into the cache under key, with its documents beside it; whole or not at all."""
    kept = cache / key
    cache.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=".pagefind-", dir=cache))
    try:
        _index_shard(fresh, records)
        canonicalise_index(fresh)
        documents = {r.path: (keys[r.path], r.html) for r in records}
        (fresh / DOCUMENTS).write_bytes(pickle.dumps((settings, documents), protocol=pickle.HIGHEST_PROTOCOL))
        (fresh / DONE).write_bytes(b"")
        shutil.rmtree(kept, ignore_errors=True)
        os.replace(fresh, kept)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


@contextlib.contextmanager
def _cache_lock(cache: Path) -> Iterator[None]:
    """Hold the search cache for this process alone: index_ahead and the build's indexing never index at once."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache.with_name(f"{cache.name}.lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield  # released as the file closes, or as the process holding it dies


@dataclass(frozen=True)
class _Guide:
    """What index_ahead reads of the last build: its plan's keys, and each entry file's status and page."""

    language: str
    keys: dict[str, str]  # every document's key, by page path
    entries: dict[str, tuple[tuple[int, ...] | None, str]]  # by file name under the root: its status, its page
    tag_titles: dict[str, str]
    # The status of each folder holding entry files, and of their parents: a file added changes its folder's.
    folders: dict[str, tuple[int, ...] | None]


def keep_guide(
    cache: Path,
    root: Path,
    plan: SearchPlan,
    pages: dict[str, str],
    statuses: dict[str, tuple[int, ...]],
    tag_titles: dict[str, str],
) -> None:
    """Keep beside the search cache what index_ahead needs of this build; one that cannot be written costs time only.

    pages names each entry file's page (under root), statuses the status each file had when its content
    was read. Being only a guide, it needs no lock: a guide that does not fit the files costs index_ahead
    its time.
    """
    # A file read too soon after it was written has no status in the memo, which could not trust it; a
    # guide can: a file changed since the build read it is at worst guessed wrong.
    entries = {name: (statuses.get(name) or _status_now(root / name), page) for name, page in pages.items()}
    folders = {folder for name in pages for folder in _parents(name)}
    guide = _Guide(plan.language, plan.keys, entries, tag_titles, {f: _status_now(root / f) for f in sorted(folders)})
    with contextlib.suppress(OSError):
        replace_file(cache.with_name(f"{cache.name}{GUIDE}"), pickle.dumps(guide, protocol=pickle.HIGHEST_PROTOCOL))


def _parents(name: str) -> Iterator[str]:
    """The folders a file under the root is in, its own first (entries/a/b.yaml: entries/a, then entries)."""
    while (cut := name.rfind("/")) > 0:
        name = name[:cut]
        yield name


def _status_now(path: Path) -> tuple[int, ...] | None:
    """A file's status now; None if it cannot be read."""
    try:
        return file_status(path)
    except OSError:
        return None


def index_ahead(root: Path, cache: Path) -> int:
    """Index, before the build has loaded its catalog, the shards a few edited entries change; return how many.

    A guess from the last build's plan (keep_guide) and the entry files whose status changed since: each
    edited entry's document key is made as the build makes it, and each shard is kept under the key of
    its documents, so a shard guessed wrong is one the build never looks up, and costs only time.
    """
    with _cache_lock(cache):
        try:
            guide = pickle.loads(cache.with_name(f"{cache.name}{GUIDE}").read_bytes())
        except Exception:  # noqa: BLE001 - none, or damaged: there is nothing to go on
            return 0
        if not isinstance(guide, _Guide):
            return 0
        changed: list[tuple[str, str | None]] = []  # file names, with the page each had (None: a file added)
        base = os.fspath(root)  # joined as strings: ten thousand Path objects cost more than the stats
        for name, (status, page) in guide.entries.items():
            try:
                if file_status(os.path.join(base, name)) != status:
                    changed.append((name, page))
            except OSError:
                return 0  # an entry removed: the layout of the shards is not the last build's
        changed += [(name, None) for name in _added(root, guide)]
        if len(changed) > AHEAD_MOST:
            return 0  # a large change, for the build to index as it finds it
        before = dict(guide.keys)
        made: dict[str, tuple[str, str]] = {}  # the edited and added entries' documents, by page with their keys
        hubs: set[str] = set()
        for name, known in changed:
            _digest, (card, problems, _unsafe, entry_id) = read_and_check((name, root / name))
            page = Renderer.entry_page(entry_id)
            # An added file is guessed only with an id of its own; an edited one only with the id it had.
            if card is None or problems or page in made or (known != page if known else page in guide.keys):
                continue
            try:
                facets = entry_facets(card, guide.tag_titles)
            except KeyError:
                continue  # a tag the last build did not have
            key = _entry_key(card.digest, facets)
            if key != guide.keys.get(page):
                guide.keys[page] = key
                made[page] = (key, _entry_document(card.entry(), facets, guide.language))
                hubs.update(f"hubs/{h.hub}/index.html" for h in card.hubs)
        if not made:
            return 0
        every = [SearchPage(path, _no_view) for path in sorted(guide.keys)]
        plan = SearchPlan(every, guide.keys, guide.language)
        settings = _settings(plan)
        layout = [run for _, run in shards(every) if any(p.path in made for p in run)]
        # The documents of the shards the last build indexed these pages in, and the edited ones made now.
        wanted = {p.path for run in layout for p in run}
        last = SearchPlan([SearchPage(path, _no_view) for path in sorted(before)], before, guide.language)
        folders = [
            cache / typing.cast(str, _shard_key(last, run))
            for _, run in shards(last.pages)
            if any(p.path in wanted for p in run)
        ]
        earlier = {**_documents_in(folders, settings), **made}
        indexed = 0
        for run in layout:
            key = typing.cast(str, _shard_key(plan, run))
            if _kept(cache, key) or any(p.path in hubs for p in run):
                continue  # a hub an edited entry is in may read what changed: its key is not known here
            if any(earlier.get(p.path, ("",))[0] != plan.keys[p.path] for p in run):
                continue  # a document the last build's shards do not hold
            try:
                _index_into(cache, key, _documents(run, plan, earlier), plan.keys, settings)
            except (OSError, BuildError):
                return indexed
            indexed += 1
        return indexed


def _added(root: Path, guide: _Guide) -> list[str]:
    """The entry files under the folders whose status changed since the guide was kept that it does not name."""
    changed: list[str] = []
    for folder, status in getattr(guide, "folders", {}).items():  # none in a guide an earlier release kept
        if any(folder.startswith(f"{other}/") for other in changed):
            continue  # a folder under one listed already
        try:
            if file_status(root / folder) != status:
                changed.append(folder)
        except OSError:
            return []  # a folder removed: its entries are found gone too
    found = (name for folder in changed for _path, name in content_files(root, folder, True, []))
    return [name for name in found if name not in guide.entries]


def _no_view() -> PageView:
    raise AssertionError("index_ahead makes no page view")


class Indexed(typing.NamedTuple):
    """What writing a search index took: the shards Pagefind indexed (the others were as the cache kept them)."""

    indexed: int
    shards: int
    bundles: dict[str, str] = {}  # the key of each bundle folder (site-relative) linked from the cache


def index_search(out_dir: Path, plan: SearchPlan, cache: Path | None = None, jobs: int = 1) -> Indexed:
    """Write the search bundles of plan under out_dir, indexing into the cache first what it lacks (cache_search)."""
    indexed = cache_search(plan, cache, jobs) if cache is not None and plan.keys else 0
    written = link_search(out_dir, plan, cache, jobs)
    return Indexed(indexed + written.indexed, written.shards)


def link_search(
    out_dir: Path, plan: SearchPlan, cache: Path | None = None, jobs: int = 1, held: Mapping[str, str] | None = None
) -> Indexed:
    """Write the search bundles of plan under out_dir: each shard the cache holds linked from it, the others indexed.

    held names the bundle folders out_dir holds already, each with the key of the shard it was linked from:
    one whose key is the shard's now is left as it is. With a cache folder and page keys, shards the cache
    holds but plan no longer uses are removed from it.
    """
    layout = shards(plan.pages)
    keys = [_shard_key(plan, pages) for _, pages in layout]
    folders = [out_dir / path for path, _ in layout]
    held = held or {}
    others = [path.removeprefix(BUNDLE) for path, _ in layout[1:]]

    made: list[Path] = []  # bundles indexed beside the site, for want of a cache

    def source(k: int) -> Path:
        key = keys[k]
        if cache is not None and key is not None and _kept(cache, key):
            return cache / key
        out_dir.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=".pagefind-", dir=out_dir))
        made.append(fresh)
        _index_shard(fresh, _documents(layout[k][1], plan, {}))
        canonicalise_index(fresh)
        return fresh

    # A bundle held as the key it has now, still the cache's files, is left; any other bundle of the folder goes.
    same = {
        k
        for k, (path, _) in enumerate(layout)
        if cache is not None
        and (key := keys[k]) is not None
        and held.get(path) == key
        and _kept(cache, key)
        and _links_of(folders[k], cache / key, others, k == 0)
    }
    _clear_bundles(out_dir / BUNDLE, {layout[k][0] for k in same}, {path.rstrip("/") for path in others})
    todo = [k for k in range(len(layout)) if k not in same]
    try:
        with ThreadPoolExecutor(max(1, min(jobs, len(layout)))) as pool:
            sources = dict(zip(todo, pool.map(source, todo), strict=True))
            # The first bundle's folder holds the others' folders: linked first, so that it is made by
            # its own link, not as the parent of another's while its own is being made.
            if 0 in sources:
                link_tree(sources[0], folders[0], skip=_left_out(sources[0], first=True))
            rest = [k for k in todo if k != 0]
            list(pool.map(lambda k: link_tree(sources[k], folders[k], skip=_left_out(sources[k])), rest))
        # The search page loads the first bundle and merges the others it finds listed beside it.
        (out_dir / BUNDLE).mkdir(parents=True, exist_ok=True)
        (out_dir / BUNDLE / SHARDS).write_text(json.dumps(others), encoding="utf-8")
        if cache is not None and cache.is_dir():
            for stale in cache.iterdir():
                if stale.name not in keys:
                    shutil.rmtree(stale, ignore_errors=True)
    except OSError as exc:
        raise BuildError(f"could not write the search index: {exc}") from exc
    finally:
        for fresh in made:
            shutil.rmtree(fresh, ignore_errors=True)
    # What each bundle folder now holds, by the key it was linked from: for the next build into this folder.
    linked = {layout[k][0]: keys[k] for k in same} | {
        layout[k][0]: keys[k] for k, folder in sources.items() if cache is not None and folder.parent == cache
    }
    return Indexed(len(made), len(layout), {path: key for path, key in linked.items() if key is not None})


def _links_of(folder: Path, source: Path, others: list[str], first: bool) -> bool:
    """Whether folder holds the files of the cache's bundle source that a site's copy holds, linked, and no others.

    Each file is known by its inode, which listing a folder gives without reading a file's status: a file
    added, removed or replaced by hand since it was linked is found; one written over in place is not,
    and is written over in the cache too.
    """
    mine = {SHARDS, *(path.rstrip("/") for path in others)} if first else set()
    try:
        return _inodes(os.fspath(folder), mine) == _inodes(os.fspath(source), set(_left_out(source, first)))
    except OSError:
        return False


def _inodes(folder: str, skip: set[str]) -> dict[str, int]:
    """The inode of every file under folder, by its path there, but those skip names at its top."""
    found: dict[str, int] = {}
    todo = [(folder, "")]
    while todo:
        here, relative = todo.pop()
        with os.scandir(here) as items:
            for item in items:
                if relative or item.name not in skip:
                    if item.is_dir(follow_symlinks=False):
                        todo.append((item.path, f"{relative}{item.name}/"))
                    else:
                        found[relative + item.name] = item.inode()
    return found


def _clear_bundles(first: Path, keep: set[str], others: set[str]) -> None:
    """Empty the search folder but for the bundles keep names (site-relative); the first's sub-bundles are others."""
    if not first.is_dir():
        return
    if BUNDLE not in keep:
        for item in os.scandir(first):
            if item.name not in others or not item.is_dir(follow_symlinks=False):
                _remove(item)
    for item in os.scandir(first):
        if item.is_dir(follow_symlinks=False) and item.name.startswith("shard-"):
            if f"{BUNDLE}{item.name}/" not in keep:
                _remove(item)


def _remove(item: os.DirEntry[str]) -> None:
    if item.is_dir(follow_symlinks=False):
        shutil.rmtree(item.path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(item.path)


def _left_out(bundle: Path, first: bool = False) -> tuple[str, ...]:
    """The names at a kept bundle's top that the site's copy leaves out: the cache's marks, and what no page loads."""
    if first:
        return (DONE, DOCUMENTS, *UNUSED)
    return (DONE, DOCUMENTS, *UNUSED, *FIRST_ONLY, *(p.name for p in bundle.glob("wasm.*.pagefind")))


def _earlier_documents(cache: Path, keys: set[str], settings: str) -> dict[str, tuple[str, str]]:
    """The documents, by path with their keys, of the cached shards that keys no longer names, made as now."""
    try:
        stale = [folder for folder in cache.iterdir() if folder.name not in keys]
    except OSError:
        return {}
    return _documents_in(stale, settings)


def _documents_in(folders: Iterable[Path], settings: str) -> dict[str, tuple[str, str]]:
    """The documents, by path with their keys, of the cached shards in folders, made as now."""
    earlier: dict[str, tuple[str, str]] = {}
    for folder in folders:
        try:
            made_with, found = pickle.loads((folder / DOCUMENTS).read_bytes())
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, AttributeError, TypeError):
            continue  # none, or damaged: its documents are made again
        if made_with == settings and isinstance(found, dict):
            earlier.update(found)
    return earlier


def _documents(pages: list[SearchPage], plan: SearchPlan, earlier: dict[str, tuple[str, str]]) -> list[SearchRecord]:
    """The search documents of pages, in path order: taken from earlier where the key is the same, else made."""
    taken = {p.path: earlier[p.path][1] for p in pages if earlier.get(p.path, ("",))[0] == plan.keys.get(p.path)}
    made = {r.path: r.html for r in search_records([p.view() for p in pages if p.path not in taken], plan.language)}
    return [
        SearchRecord(p.path, taken[p.path] if p.path in taken else made[p.path])
        for p in sorted(pages, key=lambda p: p.path)
    ]


def _kept(cache: Path | None, key: str | None) -> bool:
    """Whether the cache holds a shard's bundle whole."""
    return cache is not None and key is not None and (cache / key / DONE).is_file()


def reindex(site: Path, plan: SearchPlan, cache: Path | None = None, jobs: int = 1) -> None:
    """Index plan for a site being served, and swap the new bundles in for the old in one step."""
    fresh = Path(tempfile.mkdtemp(prefix=".pagefind-", dir=site))
    try:
        index_search(fresh, plan, cache, jobs)
        # One atomic exchange where the system has it, so a search never finds no index.
        if not ((site / BUNDLE).exists() and exchange(fresh / BUNDLE, site / BUNDLE)):
            shutil.rmtree(site / BUNDLE, ignore_errors=True)
            os.replace(fresh / BUNDLE, site / BUNDLE)
    except OSError as exc:
        raise BuildError(f"could not replace the search index in {site}: {exc}") from exc
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


def _index_shard(bundle: Path, records: list[SearchRecord]) -> None:
    """Index records with one `pagefind --service` into bundle; raise BuildError if it fails.

    The service (base64 JSON messages, each followed by a comma) is given the documents in path order,
    so the same documents give the same bundle on any file system.
    """
    try:
        from pagefind.service import get_executable

        binary = get_executable()
        if binary is None:
            raise OSError("the pagefind binary is not installed (pip install pagefind[bin])")
        service = subprocess.Popen(
            [str(binary), "--service"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
    except (OSError, ImportError) as exc:
        raise BuildError(f"could not run Pagefind: {exc}") from exc
    try:
        _PagefindSession(service).index(bundle, ((r.path, r.html) for r in records))
    finally:
        if service.stdin:
            try:
                service.stdin.close()
            except OSError:
                pass
        try:
            service.wait(timeout=60)
        except subprocess.TimeoutExpired:
            service.kill()


class _PagefindSession:
    """One conversation with `pagefind --service`: requests written ahead, answers read by a thread."""

    def __init__(self, service: subprocess.Popen[bytes]) -> None:
        assert service.stdin is not None and service.stdout is not None
        self.stdin = service.stdin
        self.answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.sent = 0
        # A thread drains the answers so that writing requests ahead can never fill both pipes.
        threading.Thread(target=self._read, args=(service.stdout,), daemon=True).start()

    def _read(self, stdout: IO[bytes]) -> None:
        pending: list[bytes] = []  # the pieces of an unfinished message: the bundle's runs to many megabytes
        while chunk := stdout.read1(1 << 20):  # type: ignore[attr-defined]
            *ends, rest = chunk.split(b",")  # base64 never holds a comma
            for end in ends:
                message = b"".join([*pending, end])
                pending = []
                try:
                    self.answers.put(json.loads(base64.b64decode(message)))
                except ValueError:
                    self.answers.put({"payload": {"type": "Error", "message": message.decode("utf-8", "replace")}})
            if rest:
                pending.append(rest)
        self.answers.put(None)

    def _send(self, payload: dict[str, Any]) -> None:
        self.sent += 1
        message = {"message_id": self.sent, "payload": payload}
        self.stdin.write(base64.b64encode(json.dumps(message).encode("utf-8")) + b",")

    def _answer(self) -> dict[str, Any]:
        try:
            answer = self.answers.get(timeout=600)
        except queue.Empty as exc:
            raise BuildError("Pagefind did not answer within 10 minutes") from exc
        if answer is None:
            raise BuildError("Pagefind stopped before it had indexed the site")
        payload: dict[str, Any] = answer.get("payload") or {}
        if payload.get("type") == "Error":
            raise BuildError(f"Pagefind failed to index the site: {payload.get('message')}")
        return payload

    def index(self, bundle: Path, documents: Iterator[tuple[str, str]]) -> None:
        """Create an index, add every document in the order given, and write the bundle it returns."""
        waiting = 0
        try:
            self._send({"type": "NewIndex", "config": {"include_characters": INCLUDE_CHARACTERS}})
            self.stdin.flush()
            index_id = self._answer()["index_id"]
            for path, document in documents:
                self._send({"type": "AddFile", "index_id": index_id, "file_path": path, "file_contents": document})
                waiting += 1
                if waiting >= IN_FLIGHT:
                    self.stdin.flush()
                    self._answer()
                    waiting -= 1
            # The bundle comes back in the answer and is written here: Pagefind's own WriteFiles can
            # answer before its last file is flushed, and the service exits when its input closes.
            self._send({"type": "GetFiles", "index_id": index_id})
            self.stdin.flush()
        except OSError as exc:
            raise BuildError(f"Pagefind stopped while indexing the site: {exc}") from exc
        for _ in range(waiting):
            self._answer()
        for item in self._answer()["files"]:
            target = bundle / item["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(base64.b64decode(item["content"]))


# Pagefind writes filter values and the filter list in hash-map order, which changes from run to
# run. The functions below rewrite those files in sorted order so that identical input gives a
# byte-identical site. The files are gzip'd CBOR behind a "pagefind_dcd" signature.
_SIGNATURE = b"pagefind_dcd"


def _cbor_head(major: int, value: int) -> bytes:
    if value < 24:
        return bytes([major << 5 | value])
    for extra, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if value < 1 << (8 * size):
            return bytes([major << 5 | extra]) + value.to_bytes(size, "big")
    raise ValueError("integer too large for CBOR")


def _cbor_encode(item: object) -> bytes:
    if isinstance(item, bool) or item is None:
        raise ValueError("unexpected CBOR simple value")
    if isinstance(item, int):
        return _cbor_head(0, item) if item >= 0 else _cbor_head(1, -1 - item)
    if isinstance(item, bytes):
        return _cbor_head(2, len(item)) + item
    if isinstance(item, str):
        data = item.encode("utf-8")
        return _cbor_head(3, len(data)) + data
    if isinstance(item, list):
        return _cbor_head(4, len(item)) + b"".join(_cbor_encode(x) for x in item)
    raise ValueError(f"cannot encode {type(item).__name__}")


def _cbor_decode(data: bytes, pos: int = 0) -> tuple[object, int]:
    major, info = data[pos] >> 5, data[pos] & 31
    pos += 1
    if info < 24:
        value = info
    elif info <= 27:
        size = 1 << (info - 24)
        value = int.from_bytes(data[pos : pos + size], "big")
        pos += size
    else:
        raise ValueError("indefinite-length CBOR is not expected in a Pagefind file")
    if major == 0:
        return value, pos
    if major == 1:
        return -1 - value, pos
    if major == 2:
        return data[pos : pos + value], pos + value
    if major == 3:
        return data[pos : pos + value].decode("utf-8"), pos + value
    if major == 4:
        items = []
        for _ in range(value):
            item, pos = _cbor_decode(data, pos)
            items.append(item)
        return items, pos
    raise ValueError(f"unexpected CBOR major type {major}")


def _read(path: Path) -> object:
    raw = gzip.decompress(path.read_bytes())
    if not raw.startswith(_SIGNATURE):
        raise BuildError(f"unexpected Pagefind file format: {path.name}")
    item, _ = _cbor_decode(raw, len(_SIGNATURE))
    return item


def _write(folder: Path, prefix: str, suffix: str, item: object, digits: int) -> str:
    raw = _SIGNATURE + _cbor_encode(item)
    name = f"{prefix}{hashlib.sha256(raw).hexdigest()[:digits]}"
    (folder / f"{name}{suffix}").write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
    return name


def canonicalise_index(bundle: Path) -> None:
    """Rewrite Pagefind's filter and meta files in sorted order, under content-derived names."""
    entry_path = bundle / "pagefind-entry.json"
    entry = json.loads(entry_path.read_text(encoding="utf-8"))
    for language, info in sorted(entry["languages"].items()):
        meta_path = bundle / f"pagefind.{info['hash']}.pf_meta"
        meta = _read(meta_path)
        assert isinstance(meta, list)
        filters = meta[3]
        assert isinstance(filters, list)
        renamed = []
        for name, old_hash in filters:
            old = bundle / "filter" / f"{old_hash}.pf_filter"
            data = _read(old)
            assert isinstance(data, list)
            data[1] = sorted(data[1], key=lambda value: value[0])
            old.unlink()
            renamed.append([name, _write(bundle / "filter", f"{language}_", ".pf_filter", data, 7)])
        meta[3] = sorted(renamed)
        meta_path.unlink()
        info["hash"] = _write(bundle, f"pagefind.{language}_", ".pf_meta", meta, 10).removeprefix("pagefind.")
    entry_path.write_text(json.dumps(entry, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
