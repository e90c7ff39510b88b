"""Rendered pages kept between builds, keyed by a digest of everything that went into them.

A page's key covers its view (the entry, the rows of the entries it lists, the titles it links to),
the site configuration, the templates, the generator's own code and the versions of the libraries
that render: any change to any of them is a different key, so a stale page can never be served.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import pickle
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from generator.render import EntryRow, PageView
from generator.validate import EntryCard, plain_digest
from generator.write import Stamp, fs_clock, replace_file

PACKAGE = Path(__file__).resolve().parent
# The libraries whose output is part of a page.
RENDERING = ("jinja2", "markupsafe", "markdown-it-py", "mdurl", "pygments", "pydantic")


END = b"</html>\n"  # how every page ends


class _Digester(pickle.Pickler):
    """Pickle into a hash, with each pydantic model as its JSON: its own pickle holds a set, whose order varies."""

    def __init__(self, sink: Any) -> None:
        super().__init__(sink, protocol=5)
        # No memo: with one, two equal strings pickle as one or two by whether they are one object,
        # which differs between a file parsed now and one read back from the cache.
        self.fast = True

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, BaseModel):
            return _model, (type(obj).__name__, obj.model_dump_json())
        if isinstance(obj, EntryCard):
            return _model, ("EntryCard", obj.digest)  # the digest of the model every field comes from
        if isinstance(obj, EntryRow):
            return _model, ("EntryRow", obj.digest)  # taken once, for every page that holds it
        return NotImplemented


def _model(name: str, data: str) -> tuple[str, str]:
    return name, data  # never called: digests are never unpickled


class _Sink:
    def __init__(self) -> None:
        self.hash = hashlib.sha256()

    def write(self, data: bytes) -> None:
        self.hash.update(data)


def digest(value: Any) -> str:
    """Return the hex SHA-256 of value: the same data gives the same digest in every process."""
    sink = _Sink()
    _Digester(sink).dump(value)
    return sink.hash.hexdigest()


def recipe_values(recipe: Any) -> tuple[Any, ...]:
    """A recipe's type and field values, each entry card as its digest: plain data, alike in any process."""
    names = _FIELDS.get(type(recipe))
    if names is None:
        names = _FIELDS[type(recipe)] = tuple(f.name for f in dataclasses.fields(recipe))
    values = (getattr(recipe, name) for name in names)
    return (type(recipe).__name__, *(v.digest if isinstance(v, EntryCard) else v for v in values))


_FIELDS: dict[type, tuple[str, ...]] = {}


def _files_digest(folder: Path) -> bytes:
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".py", ".html", ".xml")):
        h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.digest()


@functools.lru_cache(maxsize=1)
def package_digest() -> bytes:
    """Digest of the generator's code and the rendering libraries' versions, read once per process.

    Once: the code that renders is the code imported at start, whatever is saved to disk later.
    """
    h = hashlib.sha256(_files_digest(PACKAGE))
    for name in RENDERING:
        try:
            h.update(f"{name}=={metadata.version(name)}\0".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name}==?\0".encode())
    return h.digest()


def code_digest(templates: Path, extra: Iterable[Any] = ()) -> str:
    """Digest of what renders every page: the generator's code, library versions and the templates as saved now."""
    h = hashlib.sha256(package_digest() + _files_digest(templates))
    h.update(digest(list(extra)).encode())
    return h.hexdigest()


SITE = "site.pickle"  # what the site folder holds
SPARE = "spare.pickle"  # what the spare folder holds: the site before the last build, which the next build updates


@dataclass(frozen=True)
class Record:
    """What a site folder holds, as the build that wrote it recorded: each page's key, and its other files."""

    pages: dict[str, str]
    files: frozenset[str] = frozenset()  # besides pages and the static/, api/ and pagefind/ folders
    folders: dict[str, Stamp | None] = field(default_factory=dict)  # the stamps of the folders that hold them
    bundles: dict[str, str] = field(default_factory=dict)  # each search bundle folder's shard key (search.Indexed)


# A record's file: its salt on a line, then the record pickled (a large site's is ten thousand pages).
def _head(salt: str) -> bytes:
    return salt.encode() + b"\n"


def read_record(folder: Path, name: str, salt: str) -> Record | None:
    """The record name in the cache folder, or None when there is none, it is damaged or another salt wrote it."""
    try:
        with (folder / name).open("rb") as f:
            if f.read(len(_head(salt))) != _head(salt):
                return None
            found = pickle.load(f)
    except Exception:  # noqa: BLE001 - a missing or damaged file, however it fails to read, is no record
        return None
    return found if isinstance(found, Record) else None


def kept_record(folder: Path, name: str, salt: str) -> bytes | None:
    """The record name in the cache folder as written, if it was written under salt: to keep under another name.

    Not read: a record damaged since is found so when it is read (read_record) under its new name.
    """
    try:
        found = (folder / name).read_bytes()
    except OSError:
        return None
    return found if found.startswith(_head(salt)) else None


def write_record(folder: Path, name: str, salt: str, record: Record | bytes | None) -> None:
    """Keep record as name in the cache folder, or, given None, drop it; one that cannot be written costs time only."""
    path = folder / name
    try:
        if record is None:
            path.unlink(missing_ok=True)
            return
        folder.mkdir(parents=True, exist_ok=True)
        if isinstance(record, bytes):
            replace_file(path, record)  # as kept_record found it
            return
        replace_file(path, _head(salt) + pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        pass


def forget_pages(folder: Path, pages: Iterable[str]) -> None:
    """Drop pages from the record of what the site built with the cache in folder holds: the next build writes them."""
    pages = set(pages)
    try:
        with (folder / SITE).open("rb") as f:
            salt = f.readline().rstrip(b"\n").decode(errors="replace") if pages else ""
    except OSError:
        return
    record = read_record(folder, SITE, salt) if salt else None
    if record is not None and pages & record.pages.keys():
        kept = {k: v for k, v in record.pages.items() if k not in pages}
        write_record(folder, SITE, salt, dataclasses.replace(record, pages=kept))


ROWS = "rows.pickle"  # the HTML of each listing row the last build made, by the row's digest
NOTES = "entries.pickle"  # what each entry page of the last build was made from, with its keys (render.EntryNote)


class KeptDict(dict[str, Any]):
    """A dict as read back from a file of the cache folder: written whole once, then each build's changes appended.

    A build that changed one entry appends that entry's values, not ten thousand; once the appended
    changes outgrow a quarter of the whole, the next save writes it whole again.
    """

    def __init__(self, values: dict[str, Any], whole: int, appended: int) -> None:
        super().__init__(values)
        self.whole, self.appended = whole, appended  # bytes of the file: the whole, and the changes after it


def read_kept_dict(folder: Path, name: str, salt: str) -> KeptDict:
    """The dict kept as name in the cache folder under salt, its appended changes applied; empty if none or damaged."""
    try:
        with (folder / name).open("rb") as f:
            found = pickle.load(f)
            if not (isinstance(found, tuple) and len(found) == 2 and found[0] == salt and isinstance(found[1], dict)):
                return KeptDict({}, 0, 0)
            values, whole = found[1], f.tell()
            try:
                while f.peek(1):
                    changed, removed = pickle.load(f)
                    values.update(changed)
                    for key in removed:
                        values.pop(key, None)
            except Exception:  # noqa: BLE001 - a torn tail: what came before it stands, and the next save is whole
                return KeptDict(values, whole, whole)
            return KeptDict(values, whole, f.tell() - whole)
    except Exception:  # noqa: BLE001 - a missing or damaged file, however it fails to read, holds nothing
        return KeptDict({}, 0, 0)


def write_kept_dict(folder: Path, name: str, salt: str, values: dict[str, Any], kept: KeptDict) -> None:
    """Keep values as name in the cache folder: their changes since kept was read, appended; failing costs time only."""
    changed = {k: value for k, value in values.items() if (old := kept.get(k, _NONE)) is not value and old != value}
    removed = [key for key in kept if key not in values]
    if not changed and not removed:
        return
    with contextlib.suppress(OSError):
        if kept.whole and kept.appended <= kept.whole // 4:
            with (folder / name).open("ab", buffering=0) as f:
                f.write(pickle.dumps((changed, removed), protocol=pickle.HIGHEST_PROTOCOL))  # one write: whole or torn
            return
        folder.mkdir(parents=True, exist_ok=True)
        replace_file(folder / name, pickle.dumps((salt, values), protocol=pickle.HIGHEST_PROTOCOL))


_NONE = object()


SETTLED = "settled"  # in the page cache's folder: the file system's time when the last build ended, in ns


class PageCache:
    """HTML of rendered pages under folder/, one file per key; pages no build used are pruned.

    A site's pages are hard links to these files, so a page written over in place (opened for writing,
    not replaced) writes into the cache too. Such a file has changed since the last build ended
    (settled): it is not served again, nor kept where a site links it (write.sweep_folder).
    """

    def __init__(self, folder: Path, salt: str) -> None:
        self.folder = folder
        self.salt = salt
        self.used: set[str] = set()
        self.valid: set[str] = set()
        self._keys: dict[str, tuple[PageView, str]] = {}  # keys whose file was read whole or written by this build
        self.settled: int | None = None  # none known: no file is taken as a build left it
        try:
            self.settled = int((folder / SETTLED).read_text(encoding="ascii"))
        except (OSError, ValueError):
            pass

    def key(self, view: PageView) -> str:
        """The key of a page: its view (its recipe, where it has one), under this build's code and configuration."""
        if view.key is not None:
            return view.key
        known = self._keys.get(view.path)
        if known is None or known[0] is not view:
            if view.recipe is None:
                key = digest([self.salt, view.path, view.template, view.context])
            else:
                key = plain_digest((self.salt, view.path, view.template, recipe_values(view.recipe)))
            known = self._keys[view.path] = (view, key)
        return known[1]

    def file(self, key: str) -> Path | None:
        """The file holding key's HTML, kept through this build's pruning; None when it is missing or damaged.

        Files are never changed in place, so a build hard-links them into its site instead of copying.
        """
        path = self.folder / f"{key}.html"
        try:
            with path.open("rb") as f:
                status = os.fstat(f.fileno())
                # Every page ends with its closing tag: a file torn by a crash ends short of it.
                f.seek(max(0, status.st_size - len(END)))
                whole = f.read() == END
        except OSError:
            return None
        if not whole or self.settled is None or status.st_mtime_ns >= self.settled:
            return None
        self.valid.add(key)
        self.used.add(key)
        return path

    def inodes(self) -> dict[str, int]:
        """The inode of each key's file: a page linked from the cache is that file."""
        try:
            with os.scandir(self.folder) as found:
                return {item.name.removesuffix(".html"): item.inode() for item in found if item.name.endswith(".html")}
        except OSError:
            return {}

    def keep(self, key: str) -> None:
        """Keep key's page through this build's pruning without reading it."""
        self.used.add(key)

    def put(self, key: str, html: bytes) -> Path | None:
        """Keep html under key and return its file; a cache that cannot be written only costs the next build time."""
        self.used.add(key)
        path = self.folder / f"{key}.html"
        if key in self.valid:
            return path
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            replace_file(path, html)  # as any page is written: the site's pages are links to these files
            self.valid.add(key)
        except OSError:
            return None
        return path if html.endswith(END) else None

    def prune(self) -> None:
        """Remove the pages this build did not use, so the cache holds one site; then record the time as settled."""
        for name in self._files():
            if name.rpartition(".")[0] not in self.used:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.folder, name))
        # Taken last: every file this build wrote is older. A file changed in the same tick of the file
        # system's clock is taken as changed after it, which costs a page rendered again at most.
        with contextlib.suppress(OSError):
            replace_file(self.folder / SETTLED, str(fs_clock(self.folder)).encode("ascii"))

    def _files(self) -> Iterator[str]:
        """The names of the files in the folder that are or were pages."""
        try:
            with os.scandir(self.folder) as found:
                yield from [item.name for item in found if item.name.endswith((".html", ".part"))]
        except OSError:
            return
