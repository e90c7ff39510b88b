"""Render every page of the site in memory from the Catalog, with Jinja2."""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import pickle
import re
import typing
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any, Protocol
from urllib.parse import urlsplit

import jinja2
from jinja2.bccache import Bucket
from markupsafe import Markup, escape

from generator import jsonld
from generator.contract import entry_path
from generator.faq import expand_faq
from generator.link import Catalog
from generator.markup import (
    Made,
    breakable,
    highlight_code,
    keeping,
    outline,
    render_inline,
    render_markdown,
    show_controls,
    unsplittable,
)
from generator.schema import Entry, Hub
from generator.taxonomy import CATEGORIES, SYSTEMS
from generator.validate import EntryCard, collect_from_here, plain_digest
from generator.write import replace_file

SEVERITY_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3}
RECENT_ENTRIES = 8
# A page's side navigation lists at most this many of its category's entries, so a page's size does not
# grow with the category's.
SIDENAV_LIMIT = 120
ROW_TEMPLATE = "_entry_row.html"


@dataclass(frozen=True)
class Crumb:
    """One step of the breadcrumb trail."""

    name: str
    path: str


@dataclass(frozen=True)
class Page:
    """What the base template needs for any page."""

    path: str
    title: str
    description: str
    crumbs: list[Crumb]
    jsonld: list[dict[str, Any]] = field(default_factory=list)
    og_type: str = "website"
    indexable: bool = True


@dataclass(frozen=True)
class EntryRow:
    """An entry as listed on index, tag, category, system and hub pages."""

    id: str
    title: str
    summary: Markup  # rendered from Markdown
    category: str
    category_name: str
    severity: str
    systems: list[str]
    # What a page's cache key takes the row as (its card's row digest): many pages hold each row.
    digest: str = field(repr=False, compare=False)


@dataclass(frozen=True)
class Shelf:
    """A category's (id, title) pairs in title order, which the pages of all its entries share."""

    items: tuple[tuple[str, str], ...]

    def position(self, entry_id: str) -> int:
        """Where an entry stands on the shelf."""
        return self._positions[entry_id]

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {entry_id: k for k, (entry_id, _) in enumerate(self.items)}

    @cached_property
    def nav_lines(self) -> dict[str, list[str]]:
        """Each item's side-navigation line by the site path of the pages it links to: made once per shelf."""
        return {}

    @cached_property
    def item_digests(self) -> list[bytes]:
        """A digest of each (id, title) pair, for the digests of windows on the shelf."""
        return [hashlib.sha256(f"{i}\0{title}".encode("utf-8", "surrogatepass")).digest() for i, title in self.items]


@dataclass(frozen=True)
class Window:
    """Part of a shelf, items start to stop, iterated as its (id, title) pairs."""

    shelf: Shelf
    start: int
    stop: int

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.shelf.items[self.start : self.stop])

    @property
    def digest(self) -> str:
        """A digest of the items in the window alone: an entry added or renamed elsewhere on the shelf leaves it."""
        return hashlib.sha256(b"".join(self.shelf.item_digests[self.start : self.stop])).hexdigest()


@dataclass(frozen=True)
class EntryPageContext:
    """Context of templates/entry.html."""

    page: Page
    entry: Any  # its EntryCard in the view; the whole Entry once rendered
    faq: list[tuple[str, Markup]]  # empty in the view; (question, answer HTML) once rendered
    related: list[EntryRow]
    backlinks: list[EntryRow]
    edit_url: str
    category_name: str
    systems: list[tuple[str, str, str | None]]
    tags: list[tuple[str, str]]
    hubs: list[tuple[str, str]]
    siblings: Window  # the category's entries by title, for the side navigation


class Listed(tuple[str, ...]):
    """The entries a listing's table shows, by id, in order: their rows are made only where not made before."""


@dataclass(frozen=True)
class ListPageContext:
    """Context of templates/list.html: a tag, category or system page."""

    page: Page
    heading: str
    intro: str
    rows: Listed
    hubs: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class EntryName:
    """An entry as a hub's table names it: no more, so that its summary's edits leave the hub's page alone."""

    id: str
    title: str
    severity: str


@dataclass(frozen=True)
class HubRow:
    """One row of a hub's comparison table."""

    entry: EntryName
    errors: list[str]
    silent: bool
    indicates: str
    tell_apart: str | None


# A hub row's values as HubRow holds them, its entry's (id, title, severity) first; a group's as HubGroupView.
HubRowValues = tuple[str, str, str, list[str], bool, str, str | None]
HubLayout = tuple[str, str, str | None, list[HubRowValues]]


@dataclass(frozen=True)
class HubGroupView:
    """A titled group of hub rows."""

    id: str
    title: str
    description: str | None
    rows: list[HubRow]


@dataclass(frozen=True)
class HubPageContext:
    """Context of templates/hub.html."""

    page: Page
    hub: Hub
    groups: list[HubGroupView]
    edit_url: str
    hubs: list[tuple[str, str]]  # every hub by title, for the side navigation


@dataclass(frozen=True)
class DirectoryContext:
    """Context of templates/directory.html: the list of tags, categories, systems or hubs."""

    page: Page
    heading: str
    intro: str
    items: list[tuple[str, str, str, int]]


@dataclass(frozen=True)
class HomeContext:
    """Context of templates/home.html."""

    page: Page
    hubs: list[tuple[str, str, str]]
    categories: list[tuple[str, str, str, int]]
    recent: list[EntryRow]
    counts: dict[str, int]


@dataclass(frozen=True)
class FailuresContext:
    """Context of templates/failures.html: every entry, grouped by category."""

    page: Page
    groups: list[tuple[str, str, Listed]]
    total: int


class Facets(typing.NamedTuple):
    """An entry's category, systems and tags as its page and its search document name them."""

    category_name: str
    systems: tuple[tuple[str, str, str | None], ...]  # (id, name, note)
    tags: tuple[tuple[str, str], ...]  # (id, title)


def entry_facets(entry: EntryCard, tag_titles: Mapping[str, str]) -> Facets:
    """The names of an entry's category, systems and tags, given its tags' titles; KeyError for a tag not given."""
    return Facets(
        CATEGORIES[entry.category].name,
        tuple((s.id, SYSTEMS[s.id].name, s.note) for s in entry.systems),
        tuple((t, tag_titles[t]) for t in entry.tags),
    )


@dataclass(frozen=True)
class EntryRecipe:
    """What an entry page's context is made from, and far smaller: the entry, and names and digests of the rest."""

    entry: EntryCard  # its digest stands for the entry
    category_name: str
    systems: tuple[tuple[str, str, str | None], ...]
    tags: tuple[tuple[str, str], ...]
    hubs: tuple[tuple[str, str], ...]
    related: tuple[str, ...]  # the digests of the entries listed, which their rows are made from
    backlinks: tuple[str, ...]
    edit_url: str
    siblings: str  # the digest of the window on the category's entries that the side navigation shows


@dataclass(frozen=True)
class ListingRecipe:
    """What a listing or hub page's context is made from, as plain data: a listing's rows as their digests.

    A listing of every entry holds ten thousand rows: its key is a digest of their digests, which the
    entries' cards hold, so no row is made for a listing that is not rendered.
    """

    context: str  # the context's class
    values: tuple[Any, ...]


class PageView:
    """One page to write: its output path, its template, and everything that template reads.

    A view with a recipe makes its context only when the context is first read: its page cache key is
    taken from the recipe, so a build that finds the page in the cache never makes the context at all.
    """

    __slots__ = ("path", "template", "recipe", "key", "_context", "_make")

    def __init__(
        self,
        path: str,
        template: str,
        context: Any = None,
        *,
        recipe: Any = None,
        make: Callable[[], Any] | None = None,
        key: str | None = None,
    ) -> None:
        self.path, self.template, self.recipe = path, template, recipe
        self.key = key  # the page's cache key, known from the last build: its recipe is not made at all
        self._context, self._make = context, make

    @property
    def context(self) -> Any:
        """One of the *Context classes, holding plain data only."""
        if self._context is None and self._make is not None:
            self._context, self._make = self._make(), None
        return self._context


def _read_markup(file: Path, salt: str) -> Made:
    """The markup kept in file under salt; none if there is none, it is damaged or of another salt."""
    try:
        found = pickle.loads(zlib.decompress(file.read_bytes()))
    except Exception:  # noqa: BLE001 - a missing or damaged file, however it fails to read, is made again
        return {}
    return found[1] if isinstance(found, tuple) and len(found) == 2 and found[0] == salt else {}


def _write_markup(file: Path, salt: str, made: Made) -> None:
    """Keep made in file under salt; a file that cannot be written costs time only."""
    with contextlib.suppress(OSError):
        file.parent.mkdir(parents=True, exist_ok=True)
        # Compressed: the markup of ten thousand entries is hundreds of megabytes of HTML.
        replace_file(file, zlib.compress(pickle.dumps((salt, made), protocol=pickle.HIGHEST_PROTOCOL), 1))


def prune_markup(folder: Path, entries: Iterable[str]) -> None:
    """Remove the kept markup of entries no longer in the site."""
    keep = {f"{entry_id}.pickle" for entry_id in entries}
    with contextlib.suppress(OSError), os.scandir(folder) as found:
        stale = [item.path for item in found if item.name not in keep]
    for path in stale:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _environment(templates: Path, compiled: Path | None = None) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates),
        # Compiling the templates cost a warm rebuild a tenth of its time. Jinja keys each compiled one by
        # its source's checksum and Jinja's own version, so an edited template is compiled again.
        bytecode_cache=_CompiledTemplates(str(compiled)) if compiled is not None else None,
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["md"] = lambda text: Markup(render_markdown(text)) if text else Markup("")
    env.filters["mdi"] = lambda text: Markup(render_inline(text)) if text else Markup("")
    # A metric is either a bare name (`grad_norm`), set as code, or a phrase with its own Markdown.
    env.filters["metric"] = lambda text: Markup(render_inline(f"`{text}`" if METRIC_NAME.match(text) else text))
    env.filters["visible"] = show_controls
    env.filters["outline"] = outline
    env.filters["breakable"] = lambda text: Markup(breakable(text))
    env.filters["unsplittable"] = lambda text: Markup(unsplittable(text))
    return env


class _CompiledTemplates(jinja2.FileSystemBytecodeCache):
    """Compiled templates kept in a folder between builds; one that cannot be read or written costs only time."""

    def load_bytecode(self, bucket: Bucket) -> None:
        """Fill bucket from its file, or leave it empty if the file is missing or damaged."""
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 - a damaged file, however it fails to read, is compiled again
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        """Keep bucket's code in its file, atomically, if the folder can be written."""
        with contextlib.suppress(OSError):
            os.makedirs(self.directory, exist_ok=True)
            super().dump_bytecode(bucket)


METRIC_NAME = re.compile(r"^[A-Za-z_][\w.]*$")


def nav_items(items: Iterable[tuple[str, str]], base: str, current: str) -> Markup:
    """A side navigation's list items, linking to base + id + "/", the current one marked.

    Each page of a category lists 120 of its entries; as a template loop with escaping, that was a
    tenth of rendering an entry page. A shelf's lines are made once, and each page joins its window's.
    """
    if isinstance(items, Window):
        lines = items.shelf.nav_lines.get(base)
        if lines is None:
            lines = items.shelf.nav_lines[base] = [_nav_line(base, i, title, "") for i, title in items.shelf.items]
        window = lines[items.start : items.stop]
        at = items.shelf._positions.get(current, -1) - items.start
        if 0 <= at < len(window):
            window[at] = _nav_line(base, current, items.shelf.items[items.start + at][1], current)
        return Markup("".join(window))
    return Markup("".join(_nav_line(base, i, title, current) for i, title in items))


def _nav_line(base: str, item: str, title: str, current: str) -> str:
    """One side-navigation line, as the template wrote it: the title as text and tooltip."""
    text, href = escape(title), escape(f"{base}{item}/")
    mark = ' aria-current="page"' if item == current else ""
    return f'    <li><a href="{href}" title="{text}"{mark}>{text}</a></li>\n'


def _prefixed(prefix: str) -> Callable[[str], str]:
    """The site-absolute path of a page from its site-relative one: a listing of every entry asks for thousands."""

    def path(relative: str = "") -> str:
        return prefix + relative

    return path


def source_link(source: str) -> tuple[str, str | None]:
    """Return the display text and URL of a signature's provenance."""
    if source.startswith("docs:"):
        url = source[len("docs:") :]
        return link_label(url), url
    if source.startswith("pypi:"):
        package, _, path = source[len("pypi:") :].partition(":")
        name, _, version = package.partition("==")
        return f"{path} in {package}", f"https://pypi.org/project/{name}/{version}/"
    repo, _, path = source.partition(":")
    repo, _, ref = repo.partition("@")
    return f"{repo}: {path}", f"https://github.com/{repo}/blob/{ref or 'HEAD'}/{path}"


def link_label(url: str) -> str:
    """Return a short label for a URL: its host and path."""
    parts = urlsplit(url)
    return (parts.netloc + parts.path).rstrip("/")


class Renderer:
    """Render pages of one Catalog; each render_* returns (relative output path, HTML)."""

    def __init__(self, catalog: Catalog, templates: Path, compiled: Path | None = None) -> None:
        """Render catalog with the templates in that folder, keeping them compiled in the folder compiled if given."""
        self.catalog = catalog
        self.site = catalog.site
        self.env = _environment(templates, compiled)
        # The folder an entry page's highlighted code and Markdown are kept in between renders (markup.keeping),
        # by entry, with the digest of the code that made them.
        self.kept_markup: tuple[Path, str] | None = None
        # A listing row's HTML by the row's digest: the same in every listing, and made once for all of them.
        # A build keeps it between builds with the pages it was rendered under (see row_fragments).
        self.fragments: dict[str, str] = {}
        self.env.globals.update(
            site=self.site,
            entry_rows=self.entry_rows,
            path=_prefixed(self.site.path()),
            url=self.site.url,
            jsonld=jsonld.script_text,
            source_link=source_link,
            entry_path=entry_path,
            nav_items=lambda items, prefix, current: nav_items(items, self.site.path(prefix), current),
            highlight=lambda code, lang: Markup(highlight_code(code, lang)),
            link_label=link_label,
            system_name=lambda sid: SYSTEMS[sid].name,
        )

    @property
    def catalog(self) -> Catalog:
        """The content rendered; setting another (as serve does for a saved entry) forgets what was made of this."""
        return self._catalog

    @catalog.setter
    def catalog(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._by_title: dict[str, Shelf] = {}
        self._rows: dict[str, EntryRow] = {}
        self._hubs: dict[str, PageView] = {}  # made once: for the search plan first, then with every page
        self._hub_layouts: dict[str, list[HubLayout]] = {}
        self._tag_titles = {tag: info.title for tag, info in catalog.tags.items()}
        self._facets: dict[str, Facets] = {}
        self._order: dict[str, tuple[int, str]] = {}  # each entry's place in a listing, made once
        # The page and search document keys of the entries whose pages read what they read in the last
        # build (unchanged_entries): their views and keys are not made again.
        self.kept: dict[str, tuple[str, str]] = {}

    # -- shared pieces -------------------------------------------------------------------------

    def row(self, entry_id: str) -> EntryRow:
        """Return the listing row of an entry: one object, shared by every page that lists it."""
        row = self._rows.get(entry_id)
        if row is None:
            row = self._rows[entry_id] = self._make_row(entry_id)
        return row

    def _make_row(self, entry_id: str) -> EntryRow:
        e = self.catalog.entries[entry_id]
        return EntryRow(
            e.id,
            e.title,
            Markup(e.summary_html),
            e.category,
            CATEGORIES[e.category].name,
            e.severity,
            [SYSTEMS[s.id].name for s in e.systems],
            e.row,
        )

    def entry_rows(self, rows: Listed) -> Markup:
        """The HTML of a listing table's rows, one templates/_entry_row.html each, made once for each row content."""
        entries, fragments = self.catalog.entries, self.fragments
        return Markup("".join(fragments.get(entries[i].row) or self._entry_row(self.row(i)) for i in rows))

    def _entry_row(self, row: EntryRow) -> str:
        html = self.fragments.get(row.digest)
        if html is None:
            html = self.fragments[row.digest] = self.env.get_template(ROW_TEMPLATE).render(r=row)
        return html

    def row_fragments(self) -> dict[str, str]:
        """The HTML made of the rows of this catalog, by digest: what a later build under the same templates reuses.

        Made for every row: a build that renders over forked workers made none in this process.
        """
        fragments = self.fragments
        return {
            card.row: fragments.get(card.row) or self._entry_row(self.row(entry_id))
            for entry_id, card in self.catalog.entries.items()
        }

    def ranked(self, ids: list[str]) -> list[str]:
        """Entries in listing order: most severe first, then by title."""
        order = self._order
        if not order:
            order.update((i, (SEVERITY_ORDER[e.severity], e.title.lower())) for i, e in self.catalog.entries.items())
        return sorted(ids, key=order.__getitem__)

    def _row_digests(self, ids: list[str]) -> tuple[str, ...]:
        entries = self.catalog.entries
        return tuple(entries[i].row for i in ids)

    def _page(self, path: str, title: str, description: str, crumbs: list[tuple[str, str]], **kw: Any) -> Page:
        trail = [Crumb("Home", "")] + [Crumb(n, p) for n, p in crumbs]
        data = list(kw.pop("jsonld", []))
        if crumbs:
            data.append(jsonld.breadcrumbs(self.site, [(c.name, c.path) for c in trail]))
        return Page(path, title, description, trail if crumbs else [], data, **kw)

    def render(self, view: PageView) -> str:
        """Render one page's HTML from its view; an entry's with the markup kept from its last render, if kept."""
        context = view.context
        if self.kept_markup is None or not isinstance(context, EntryPageContext):
            return self._render(view.template, context)
        folder, salt = self.kept_markup
        file = folder / f"{context.entry.id}.pickle"
        before = _read_markup(file, salt)
        with keeping(before) as used:
            html = self._render(view.template, context)
        if used != before:
            _write_markup(file, salt, used)
        return html

    def _render(self, template: str, context: Any) -> str:
        context = self.expand(context)
        return self.env.get_template(template).render(ctx=context, page=context.page)

    def expand(self, context: Any) -> Any:
        """The context a template reads: an entry page's whole entry and its FAQ, which its view leaves out.

        The view holds the entry's card, which its digest stands for: the model is unpickled and the FAQ's
        Markdown rendered (its JSON-LD quotes it as plain text) only for a page that is rendered.
        """
        if not isinstance(context, EntryPageContext) or isinstance(context.entry, Entry):
            return context
        entry = context.entry.entry()
        faq_html = [
            (item.question, Markup(item.html if item.html is not None else render_markdown(item.answer)))
            for item in expand_faq(entry, self.catalog)
        ]
        page = context.page
        if faq_html:
            data = list(page.jsonld)
            data.insert(1, jsonld.faq_page(faq_html))  # after the article, before the breadcrumbs
            page = replace(page, jsonld=data)
        return replace(context, entry=entry, faq=faq_html, page=page)

    def _edit_url(self, source: str) -> str:
        return f"{self.site.repo_url.rstrip('/')}/edit/{self.site.edit_branch}/{source}"

    # -- pages -----------------------------------------------------------------------------------

    def render_entry(self, entry: EntryCard) -> PageView:
        """Render /failures/<id>/."""
        related = self.catalog.related.get(entry.id, [])
        backlinks = [i for i in self.catalog.backlinks.get(entry.id, []) if i not in related]
        siblings = self._siblings(entry)
        facets = self.facets(entry)
        recipe = EntryRecipe(
            entry,
            facets.category_name,
            facets.systems,
            facets.tags,
            tuple((h.hub, self.catalog.hubs[h.hub].title) for h in entry.hubs),
            tuple(self.catalog.entries[i].digest for i in related),
            tuple(self.catalog.entries[i].digest for i in backlinks),
            self._edit_url(self.catalog.entry_paths[entry.id]),
            siblings.digest,
        )
        return PageView(
            self.entry_page(entry.id),
            "entry.html",
            recipe=recipe,
            make=lambda: self._entry_context(recipe, related, backlinks, siblings),
        )

    def kept_entry(self, entry: EntryCard, key: str) -> PageView:
        """An entry page made from what it was made from in the last build, whose key that build recorded."""
        return PageView(self.entry_page(entry.id), "entry.html", key=key, make=lambda: self.render_entry(entry).context)

    def facets(self, entry: EntryCard) -> Facets:
        """The names of an entry's category, systems and tags: made once, for the search plan and the page."""
        # By id: the memo is emptied whenever the catalog, and with it every card, is replaced.
        known = self._facets.get(entry.id)
        if known is None:
            known = self._facets[entry.id] = entry_facets(entry, self._tag_titles)
        return known

    @staticmethod
    def entry_page(entry_id: str) -> str:
        """The output path of an entry's page."""
        return entry_path(entry_id) + "index.html"

    def _entry_context(
        self, recipe: EntryRecipe, related: list[str], backlinks: list[str], siblings: Window
    ) -> EntryPageContext:
        """The context of an entry page, made from its recipe."""
        entry = recipe.entry
        path = entry_path(entry.id)
        article = jsonld.entry_article(entry, self.site, path, [title for _, title in recipe.tags])
        page = self._page(
            path,
            entry.title,
            entry.description,
            [
                ("All failures", "failures/"),
                (recipe.category_name, f"categories/{entry.category}/"),
                (entry.title, path),
            ],
            jsonld=[article],  # the FAQ's follows once its Markdown is rendered
            og_type="article",
        )
        return EntryPageContext(
            page=page,
            entry=entry,
            faq=[],
            related=[self.row(i) for i in related],
            backlinks=[self.row(i) for i in backlinks],
            edit_url=recipe.edit_url,
            category_name=recipe.category_name,
            systems=list(recipe.systems),
            tags=list(recipe.tags),
            hubs=list(recipe.hubs),
            siblings=siblings,
        )

    def _siblings(self, entry: EntryCard) -> Window:
        """The category's entries by title around this one, at most SIDENAV_LIMIT: the rest are a click away."""
        shelf = self._by_title.get(entry.category)
        if shelf is None:
            ids = self.catalog.by_category[entry.category]
            ordered = sorted(((i, self.catalog.entries[i].title) for i in ids), key=lambda item: item[1].lower())
            shelf = self._by_title[entry.category] = Shelf(tuple(ordered))
        if len(shelf.items) <= SIDENAV_LIMIT:
            return Window(shelf, 0, len(shelf.items))
        start = min(max(0, shelf.position(entry.id) - SIDENAV_LIMIT // 2), len(shelf.items) - SIDENAV_LIMIT)
        return Window(shelf, start, start + SIDENAV_LIMIT)

    def render_hub(self, hub: Hub) -> PageView:
        """Render /hubs/<id>/ with its comparison table in groups."""
        view = self._hubs.get(hub.id)
        if view is None:
            view = self._hubs[hub.id] = self._make_hub(hub)
        return view

    def _make_hub(self, hub: Hub) -> PageView:
        path = f"hubs/{hub.id}/"
        layout = self.hub_layout(hub)
        page = self._page(
            path,
            hub.title,
            hub.summary,
            [("Hubs", "hubs/"), (hub.title, path)],
            jsonld=[jsonld.hub_article(hub, self.site, path)],
        )
        edit_url = self._edit_url(self.catalog.hub_paths[hub.id])
        hubs = sorted(((h.id, h.title) for h in self.catalog.hubs.values()), key=lambda item: item[1].lower())

        def make() -> HubPageContext:
            groups = [
                HubGroupView(group, title, description, [HubRow(EntryName(*row[:3]), *row[3:]) for row in rows])
                for group, title, description, rows in layout
            ]
            return HubPageContext(page, hub, groups, edit_url, hubs)

        # Plain data, the hub as its JSON and its rows as tuples: thousands of rows are digested at C speed.
        recipe = ListingRecipe("HubPageContext", (hub.model_dump_json(), page, layout, edit_url, hubs))
        return PageView(path + "index.html", "hub.html", recipe=recipe, make=make)

    def hub_layout(self, hub: Hub) -> list[HubLayout]:
        """A hub's groups with their rows, as plain data: the fields of HubGroupView, and of HubRow as a tuple."""
        layout = self._hub_layouts.get(hub.id)
        if layout is not None:
            return layout
        rows = self.catalog.hub_rows.get(hub.id, [])
        entries = self.catalog.entries
        made: dict[str, list[HubRowValues]] = {}
        for entry_id, ref in rows:
            entry = entries[entry_id]
            errors = [s.pattern for s in entry.signatures if not s.search_key][:2]
            row = (entry.id, entry.title, entry.severity, errors, not entry.signatures, ref.indicates, ref.tell_apart)
            made.setdefault((ref.group or "all") if hub.groups else "all", []).append(row)
        if hub.groups:
            layout = [(g.id, g.title, g.description, made[g.id]) for g in hub.groups if g.id in made]
        else:
            layout = [("all", "", None, made.get("all", []))]
        self._hub_layouts[hub.id] = layout
        return layout

    def render_list(self, kind: str, key: str) -> PageView:
        """Render a tag, category or system page."""
        listing = LISTINGS[kind]
        name, intro = listing.term(self.catalog, key)
        heading = listing.heading.format(name=name)
        hubs = [(h.id, h.title) for h in self.catalog.hubs.values() if kind == "systems" and h.system == key]
        path = f"{kind}/{key}/"
        page = self._page(path, heading, intro, [(listing.parent, f"{kind}/"), (heading, path)])
        ids = self.ranked(listing.members(self.catalog)[key])
        return PageView(
            path + "index.html",
            "list.html",
            recipe=ListingRecipe("ListPageContext", (page, heading, intro, self._row_digests(ids), tuple(hubs))),
            make=lambda: ListPageContext(page, heading, intro, Listed(ids), hubs),
        )

    def render_directory(self, kind: str) -> PageView:
        """Render /tags/, /categories/, /systems/ or /hubs/."""
        directory = DIRECTORIES[kind]
        path = f"{kind}/"
        page = self._page(path, directory.heading, directory.intro, [(directory.heading, path)])
        context = DirectoryContext(page, directory.heading, directory.intro, directory.items(self.catalog))
        return PageView(path + "index.html", "directory.html", context)

    def render_home(self) -> PageView:
        """Render the home page."""
        entries = self.catalog.entries.values()
        recent = sorted(entries, key=lambda e: (e.updated, e.id), reverse=True)[:RECENT_ENTRIES]
        page = self._page(
            "",
            self.site.title,
            self.site.tagline,
            [],
            jsonld=[jsonld.website(self.site)],
        )
        context = HomeContext(
            page,
            hubs=[(h.id, h.title, h.summary) for h in self.catalog.hubs.values()],
            categories=[
                (c, CATEGORIES[c].name, CATEGORIES[c].description, len(ids))
                for c, ids in self.catalog.by_category.items()
            ],
            recent=[self.row(e.id) for e in recent],
            counts={
                "entries": len(self.catalog.entries),
                "signatures": sum(len(e.signatures) for e in entries),
                "hubs": len(self.catalog.hubs),
            },
        )
        return PageView("index.html", "home.html", context)

    def render_failures(self) -> PageView:
        """Render /failures/, every entry grouped by category."""
        groups = [(c, CATEGORIES[c].name, self.ranked(ids)) for c, ids in self.catalog.by_category.items()]
        total = len(self.catalog.entries)
        page = self._page(
            "failures/",
            "All failures",
            f"All {total} failures in the encyclopedia, by category.",
            [("All failures", "failures/")],
        )
        return PageView(
            "failures/index.html",
            "failures.html",
            recipe=ListingRecipe(
                "FailuresContext", (page, tuple((c, name, self._row_digests(ids)) for c, name, ids in groups), total)
            ),
            make=lambda: FailuresContext(page, [(c, n, Listed(ids)) for c, n, ids in groups], total),
        )

    def render_search(self) -> PageView:
        """Render /search/."""
        page = self._page(
            "search/",
            "Search",
            "Search every failure by error text, system, category, severity and tag.",
            [("Search", "search/")],
        )
        return PageView("search/index.html", "search.html", _Simple(page))

    def render_diagnose(self) -> PageView:
        """Render /diagnose/, the in-browser log scanner."""
        page = self._page(
            "diagnose/",
            "Diagnose a log",
            "Paste a training or inference log and match it against every known failure, in your browser.",
            [("Diagnose a log", "diagnose/")],
        )
        examples = [
            _TryExample(x.label, ex.source, [f"{EXAMPLES}/{PurePosixPath(x.case).name}/{n}" for n in ex.files])
            for x, ex in self.catalog.examples
        ]
        return PageView("diagnose/index.html", "diagnose.html", _Diagnose(page, examples))

    def render_404(self) -> PageView:
        """Render /404.html."""
        page = Page("404.html", "Page not found", "This page does not exist.", [], indexable=False)
        return PageView("404.html", "404.html", _Simple(page))


@dataclass(frozen=True)
class Listing:
    """A kind of listing page (/tags/<id>/, /categories/<id>/, /systems/<id>/): where its terms come from."""

    parent: str  # title of the directory page above it
    heading: str  # with {name} for the term's name
    members: Callable[[Catalog], dict[str, list[str]]]  # term id to entry ids
    term: Callable[[Catalog, str], tuple[str, str]]  # term id to (name, description)


LISTINGS = {
    "tags": Listing(
        "Tags", "Tag: {name}", lambda c: c.by_tag, lambda c, key: (c.tags[key].title, c.tags[key].description)
    ),
    "categories": Listing(
        "Categories",
        "{name} failures",
        lambda c: c.by_category,
        lambda c, key: (CATEGORIES[key].name, CATEGORIES[key].description),
    ),
    "systems": Listing(
        "Systems",
        "{name} failures",
        lambda c: c.by_system,
        lambda c, key: (SYSTEMS[key].name, SYSTEMS[key].description),
    ),
}


@dataclass(frozen=True)
class Directory:
    """A directory page (/tags/, /categories/, /systems/, /hubs/): its words and its items."""

    heading: str
    intro: str
    items: Callable[[Catalog], list[tuple[str, str, str, int]]]  # (id, name, description, entries)


DIRECTORIES = {
    "tags": Directory(
        "Tags",
        "Every tag and how many failures carry it.",
        lambda c: [(t, i.title, i.description, len(c.by_tag[t])) for t, i in c.tags.items() if t in c.by_tag],
    ),
    "categories": Directory(
        "Categories",
        "Failures by the kind of thing that breaks.",
        lambda c: [(k, CATEGORIES[k].name, CATEGORIES[k].description, len(ids)) for k, ids in c.by_category.items()],
    ),
    "systems": Directory(
        "Systems",
        "Failures by the library, runtime or hardware that reports them.",
        lambda c: [(k, SYSTEMS[k].name, SYSTEMS[k].description, len(ids)) for k, ids in c.by_system.items()],
    ),
    "hubs": Directory(
        "Hubs",
        "One system's errors side by side, with the switches that tell them apart.",
        lambda c: [(h.id, h.title, h.summary, len(c.hub_rows.get(h.id, []))) for h in c.hubs.values()],
    ),
}


@dataclass(frozen=True)
class _Simple:
    page: Page


@dataclass(frozen=True)
class _TryExample:
    """A "Try an example" button: its label, the thread the logs come from, the files it loads."""

    label: str
    source: str
    files: list[str]  # site-relative paths


@dataclass(frozen=True)
class _Diagnose:
    page: Page
    examples: list[_TryExample]


EXAMPLES = "diagnose/examples"


def example_files(catalog: Catalog) -> dict[str, bytes]:
    """The log files the diagnosis page's examples load, at the paths its buttons name."""
    return {
        f"{EXAMPLES}/{PurePosixPath(x.case).name}/{name}": data
        for x, example in catalog.examples
        for name, data in example.files.items()
    }


# What an entry's page was made from in a build, with its keys: the card's digest, the entry's file,
# category and title, the ids of its related entries and backlinks, its page key and its search document key.
EntryNote = tuple[str, str, str, str, tuple[str, ...], tuple[str, ...], str, str]


def entry_context(catalog: Catalog) -> str:
    """A digest of what an entry page reads besides entries and the site's configuration: tag and hub titles.

    The notes of a build are kept under it: notes taken with other titles are not read.
    """
    tags = sorted((tag, info.title) for tag, info in catalog.tags.items())
    return plain_digest((tags, sorted((hub.id, hub.title) for hub in catalog.hubs.values())))


def entry_notes(
    catalog: Catalog,
    page_keys: Mapping[str, str],
    search_keys: Mapping[str, str],
    noted: Mapping[str, EntryNote] | None = None,
    unchanged: Collection[str] = (),
) -> dict[str, EntryNote]:
    """The notes of a catalog's entries by id, given their pages' keys and search documents' keys by page path.

    An entry unchanged since noted (unchanged_entries) keeps its note where its keys are as noted.
    """
    notes: dict[str, EntryNote] = {}
    related, backlinks = catalog.related, catalog.backlinks
    for i, e in catalog.entries.items():
        page = Renderer.entry_page(i)
        keys = (page_keys[page], search_keys.get(page, ""))
        if noted is not None and i in unchanged and (note := noted[i])[6:] == keys:
            notes[i] = note
            continue
        notes[i] = (
            e.digest,
            catalog.entry_paths[i],
            e.category,
            e.title,
            tuple(related.get(i, ())),
            tuple(backlinks.get(i, ())),
            *keys,
        )
    return notes


def unchanged_entries(catalog: Catalog, notes: Mapping[str, EntryNote]) -> dict[str, tuple[str, str]]:
    """The noted page and search keys of every entry whose page reads what it read when noted.

    An entry page's recipe (render_entry) reads its card, its file's path, the tag and hub titles (the
    notes are kept under them: entry_context), the cards of its related entries and backlinks, and its
    window on its category's entries by title. A
    page is taken as it was only where all of those are: an entry added or removed (which moves the
    windows and rankings) takes none; a title or category changed takes none of the categories it was
    and is in; a changed card takes the pages that list it as related or as a backlink.
    """
    if notes.keys() != catalog.entries.keys():
        return {}
    changed: set[str] = set()
    shelves: set[str] = set()
    for i, e in catalog.entries.items():
        note = notes[i]
        if note[0] != e.digest or note[1] != catalog.entry_paths[i]:
            changed.add(i)
            if note[2] != e.category or note[3] != e.title:
                shelves.update((note[2], e.category))
    same: dict[str, tuple[str, str]] = {}
    related, backlinks = catalog.related, catalog.backlinks
    for i, e in catalog.entries.items():
        if i in changed or e.category in shelves:
            continue
        note = notes[i]
        rel, back = related.get(i, ()), backlinks.get(i, ())
        if tuple(rel) != note[4] or tuple(back) != note[5]:
            continue
        if changed and not (changed.isdisjoint(rel) and changed.isdisjoint(back)):
            continue
        same[i] = (note[6], note[7])
    return same


def page_views(renderer: Renderer) -> list[PageView]:
    """Every HTML page of the site as a view, in output-path order."""
    r, catalog = renderer, renderer.catalog
    views = [r.render_home(), r.render_failures(), r.render_search(), r.render_diagnose(), r.render_404()]
    kept = r.kept
    views += [r.kept_entry(e, kept[e.id][0]) if e.id in kept else r.render_entry(e) for e in catalog.entries.values()]
    views += [r.render_hub(h) for h in catalog.hubs.values()]
    views += [r.render_list(kind, key) for kind, listing in LISTINGS.items() for key in listing.members(catalog)]
    views += [r.render_directory(kind) for kind in DIRECTORIES]
    return sorted(views, key=lambda view: view.path)


# Below this many pages to render, forking worker processes from a large build costs more than it saves.
PARALLEL_MIN = 64
_WORK: tuple[Renderer, list[PageView]] | None = None  # what forked workers inherit


def _render_at(position: int) -> bytes:
    assert _WORK is not None
    renderer, views = _WORK
    return renderer.render(views[position]).encode("utf-8")


def _render_many(renderer: Renderer, views: list[PageView], jobs: int) -> Iterator[bytes]:
    """Yield each view's HTML in order, rendered over `jobs` forked processes that share the catalog."""
    global _WORK
    if jobs <= 1 or len(views) < PARALLEL_MIN or "fork" not in multiprocessing.get_all_start_methods():
        for view in views:
            yield renderer.render(view).encode("utf-8")
        return
    # Forked workers read the parent's catalog as it stands, with nothing pickled across: the rows' HTML
    # too, made here once rather than in every worker.
    renderer.row_fragments()
    _WORK = (renderer, views)
    try:
        with multiprocessing.get_context("fork").Pool(jobs, initializer=collect_from_here) as pool:
            yield from pool.imap(_render_at, range(len(views)), chunksize=8)
    finally:
        _WORK = None


def render_views(
    renderer: Renderer,
    views: list[PageView],
    cache: PageStore | None,
    jobs: int,
    on_render: Callable[[str], object] = lambda path: None,
    written: dict[str, str] | None = None,
) -> Iterator[Rendered]:
    """Yield (path, page) of every view in order: the cache's file where its key is there, else the rendered HTML.

    A page is yielded as the cache file that holds it when there is one, for the writer to link rather than
    copy. Given written (path to key of the pages a folder holds), only the pages whose key differs are yielded.
    """
    keys = [cache.key(view) for view in views] if cache else []
    if cache and written is not None:
        changed = [i for i, view in enumerate(views) if written.get(view.path) != keys[i]]
        for i in set(range(len(views))) - set(changed):
            cache.keep(keys[i])
        views, keys = [views[i] for i in changed], [keys[i] for i in changed]
    found = [cache.file(key) for key in keys] if cache else [None] * len(views)
    fresh = _render_many(renderer, [view for view, file in zip(views, found, strict=True) if file is None], jobs)
    for i, view in enumerate(views):
        if (file := found[i]) is not None:
            yield view.path, file
            continue
        html = next(fresh)
        on_render(view.path)
        stored = cache.put(keys[i], html) if cache else None
        yield view.path, stored or html


class PageStore(Protocol):
    """Where rendered pages are kept between builds (generator/cache.py)."""

    def key(self, view: PageView) -> str: ...
    def file(self, key: str) -> Path | None: ...
    def put(self, key: str, html: bytes) -> Path | None: ...
    def keep(self, key: str) -> None: ...


Rendered = tuple[str, bytes | Path]  # a page's HTML, or the cache file that holds it
