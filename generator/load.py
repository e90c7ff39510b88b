"""Read YAML files into plain data, remembering the line and column of every key and item."""

from __future__ import annotations

import hashlib
import mmap
import os
import pickle
import re
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from generator.errors import Problem
from generator.write import partial_file, replace_file

# The C parser is several times faster and keeps the same marks; fall back where libyaml is absent.
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
STR_TAG = "tag:yaml.org,2002:str"
MAX_FILE_BYTES = 1 << 20  # an entry is a few pages of text; anything larger is a mistake
# Plain scalars YAML 1.1 reads as booleans; authors usually meant the word.
BOOLEAN_WORDS = {"yes", "no", "on", "off", "y", "n", "true", "false"}
# Deeper nesting than any entry needs; it also keeps the walk far from Python's recursion limit.
MAX_DEPTH = 32
# A file whose status is younger than this may change again without its status changing (coarse clocks).
RECENT_NS = 2_000_000_000
# C0 controls and DEL (a double-quoted "\a" makes one): no page, feed or terminal should carry them.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

Path_ = tuple[str | int, ...]


@dataclass
class Document:
    """A parsed YAML file: its data and where each key or item starts.

    An entry a build checks in a worker process is read there; its document keeps only the file it
    came from, and its positions are found again from the file only if a cross-entry check has a
    problem to place in it.
    """

    path: str
    data: Any
    positions: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    boolean_words: dict[Path_, str] = field(default_factory=dict)
    source: str | None = None  # the file, for an entry read and checked elsewhere
    pending: bool = False  # not read yet: validation reads, parses and checks it

    def locate(self, loc: Path_) -> tuple[int, int]:
        """Return the line and column of the deepest known prefix of a key path."""
        if not self.positions and self.source is not None:
            try:
                self.positions = parse_yaml(self.path, Path(self.source).read_bytes())[0].positions
            except OSError:
                pass
        for end in range(len(loc), -1, -1):
            if loc[:end] in self.positions:
                return self.positions[loc[:end]]
        return (1, 1)

    def problem(self, loc: Path_, message: str, hint: str = "") -> Problem:
        """Make a Problem located at a key path."""
        line, column = self.locate(loc)
        return Problem(self.path, line, column, dotted(loc), message, hint)


def dotted(loc: Path_) -> str:
    """Render a key path as `fix.code[0].language`."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


class _Walker:
    """Build plain data from a YAML node tree, recording positions as it goes."""

    def __init__(self, loader: yaml.SafeLoader, doc: Document) -> None:  # or CSafeLoader
        self.loader = loader
        self.doc = doc
        self.seen: set[int] = set()
        self.problems: list[Problem] = []

    def walk(self, node: yaml.Node, loc: Path_) -> Any:
        if id(node) in self.seen:
            # Aliases would let a small file expand into a huge one; entries never need them.
            self.problems.append(self.doc.problem(loc, "YAML anchors and aliases are not allowed"))
            return None
        self.seen.add(id(node))
        if len(loc) > MAX_DEPTH:
            self.problems.append(self.doc.problem(loc, f"nested more than {MAX_DEPTH} levels deep"))
            return None
        if isinstance(node, yaml.MappingNode):
            result: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    # A list or mapping as a key (an alias bomb among them) is never a field name.
                    at = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                    self.problems.append(Problem(self.doc.path, *at, dotted(loc), "a key must be plain text"))
                    continue
                key = key_node.value
                child = (*loc, key)
                self.doc.positions[child] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                if key in result:
                    self.problems.append(self.doc.problem(child, "duplicate key", "each key may appear once"))
                result[key] = self.walk(value_node, child)
            return result
        if isinstance(node, yaml.SequenceNode):
            items = []
            for index, item in enumerate(node.value):
                child = (*loc, index)
                self.doc.positions[child] = (item.start_mark.line + 1, item.start_mark.column + 1)
                items.append(self.walk(item, child))
            return items
        try:
            # Most scalars are text, which is the node's value: constructing it would only return that.
            value = node.value if node.tag == STR_TAG else self.loader.construct_object(node, deep=True)
        except (ValueError, OverflowError) as exc:
            # A scalar that looks like a date or number but is not one: `2026-13-45`.
            self.problems.append(self.doc.problem(loc, f"{node.value!r} is not a valid value: {exc}"))
            return None
        # Example log lines keep theirs (colour codes are part of a real line); pages show them as symbols.
        if isinstance(value, str) and "examples" not in loc and (bad := CONTROL.search(value)):
            self.problems.append(
                self.doc.problem(
                    loc,
                    f"control character U+{ord(bad.group()):04X} is not allowed",
                    "remove it; pages, feeds and terminals cannot show it",
                )
            )
        if isinstance(value, bool) and not getattr(node, "style", None) and node.value.lower() in BOOLEAN_WORDS:
            self.doc.boolean_words[loc] = node.value
        return value


def ignored_folder(folder: Path) -> None:
    """Make a cache folder that git leaves out in any repository, by a `.gitignore` of `*` inside it."""
    # `trainwreck validate`, run as a pre-commit hook, keeps its checks in a project whose own
    # .gitignore may not name the folder.
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# Kept by trainwreck between builds; never committed.\n*\n", encoding="utf-8")


class Memo:
    """What was found in each entry file, by its name and bytes: kept in memory, and in one file if given one.

    The file is salted with a digest of the generator's code, so a changed generator reads it as empty;
    it is as trusted as the project folder. It also holds each entry file's status (times, size, inode)
    beside the digest of its bytes, so a file whose status is as it was need not be read again, and
    values derived from all entries (recall, remember), each with the key of what it was derived from.

    The file is the whole memo as one pickle, then the changes of each later build appended as one
    pickle each: a build that checked one entry appends that entry, not the whole site's. Once the
    changes outgrow a quarter of the whole, the next save writes it whole again.
    """

    def __init__(self, file: Path | None = None, salt: bytes = b"") -> None:
        self.kept: dict[tuple[str, bytes], Any] = {}
        self.file, self.salt = file, salt
        self._statuses: dict[str, tuple[tuple[int, ...], bytes]] = {}  # by file name: status, digest of bytes
        self._values: dict[str, tuple[str, Any]] = {}  # by name: the key of what it was derived from, the value
        self._seen: set[tuple[str, bytes]] = set()
        self._read = file is None
        self._whole = True  # whether the next save writes the whole memo rather than appending its changes
        self._touched: tuple[set[tuple[str, bytes]], set[str], set[str]] = (set(), set(), set())

    def key(self, display: str, raw: bytes, digested: bool = False) -> tuple[str, bytes]:
        """The key of a file's findings: its name and a digest of its bytes (raw is that digest if digested)."""
        key = (display, raw if digested else hashlib.sha256(raw).digest())
        self._seen.add(key)
        return key

    def file_key(self, display: str, path: str) -> tuple[str, bytes]:
        """The key of the file at path, read only if its status is not the one recorded with its digest."""
        self._load()
        st = os.stat(path)
        status = _status(st)
        known = self._statuses.get(display)
        if known is not None and known[0] == status:
            return self.key(display, known[1], digested=True)
        digest = hashlib.sha256(Path(path).read_bytes()).digest()
        # A file changed within the clock's resolution of its status being taken could change again
        # unseen under the same status: only an older status stands for its bytes.
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RECENT_NS:
            self._statuses[display] = (status, digest)
            self._touched[1].add(display)
        return self.key(display, digest, digested=True)

    def statuses(self) -> dict[str, tuple[int, ...]]:
        """Each file's status when its kept findings' bytes were read; a file read too soon after a write has none."""
        self._load()
        return {name: status for name, (status, _digest) in self._statuses.items()}

    def get(self, key: tuple[str, bytes]) -> Any:
        """What was found in the file under key, or None when it was never checked."""
        self._load()
        return self.kept.get(key)

    def put(self, key: tuple[str, bytes], found: Any) -> None:
        """Keep what was found in the file under key."""
        self._load()
        self.kept[key] = found
        self._touched[0].add(key)

    def recall(self, name: str, key: str) -> Any:
        """The value remembered as name, if it was derived from what key stands for; else None."""
        self._load()
        known = self._values.get(name)
        return known[1] if known is not None and known[0] == key else None

    def remember(self, name: str, key: str, value: Any) -> None:
        """Keep value as name, derived from what key stands for."""
        self._load()
        self._values[name] = (key, value)
        self._touched[2].add(name)

    def passed(self, key: str) -> bool:
        """Whether the cross-entry signature checks passed on signatures whose key is key."""
        return self.recall("signature checks", key) is not None

    def passes(self, key: str) -> None:
        """Record that the signature checks passed on signatures whose key is key."""
        if not self.passed(key):
            self.remember("signature checks", key, True)

    def forget_unseen(self) -> None:
        """Drop the files no longer in the content, or changed since; called once a load is complete."""
        names = {name for name, _ in self._seen}
        for key in set(self.kept) - self._seen:
            del self.kept[key]
            self._touched[0].add(key)
        for name in set(self._statuses) - names:
            del self._statuses[name]
            self._touched[1].add(name)
        self._seen = set()

    def save(self) -> None:
        """Write what changed since the file was read; a memo that cannot be written costs only time."""
        # Taken first and copied: `serve` checks a saved file in one thread while another rebuilds.
        touched, self._touched = self._touched, (set(), set(), set())
        if self.file is None or not any(touched):
            return
        try:
            if self._whole:
                ignored_folder(self.file.parent)
                state = (dict(self.kept), dict(self._statuses), dict(self._values))
                replace_file(self.file, lambda f: self._write_whole(f, state))
            else:
                keys, names, values = touched
                change = (
                    {k: self.kept.get(k) for k in keys},
                    {n: self._statuses.get(n) for n in names},
                    {n: self._values[n] for n in values},
                )
                with self.file.open("ab", buffering=0) as f:
                    f.write(pickle.dumps(change, pickle.HIGHEST_PROTOCOL))  # in one write: never interleaved
        except (OSError, pickle.PicklingError):
            # Left for the next save to write.
            self._touched[0].update(touched[0])
            self._touched[1].update(touched[1])
            self._touched[2].update(touched[2])
            return
        self._whole = False

    def _write_whole(self, f: BinaryIO, state: object) -> None:
        assert self.file is not None
        # The entries' models go out of band, into a file of their own that the next build maps rather
        # than reads; a token written in both tells a pair written together from a pair torn by a crash.
        models, token = self.file.with_suffix(MODELS), os.urandom(16)
        partial = partial_file(models)
        try:
            with partial.open("wb") as side:
                side.write(token)

                def out_of_band(buffer: pickle.PickleBuffer) -> bool:
                    data = buffer.raw()
                    side.write(len(data).to_bytes(8, "little"))
                    side.write(data)
                    return False

                f.write(self.salt + token)
                # Streamed: the memo of a large site is a hundred megabytes, never held pickled in memory.
                pickle.Pickler(f, pickle.HIGHEST_PROTOCOL, buffer_callback=out_of_band).dump(state)
            os.replace(partial, models)  # first: the memo file that names this token replaces the old one after
        finally:
            partial.unlink(missing_ok=True)

    def _load(self) -> None:
        if self._read:
            return
        self._read = True
        assert self.file is not None
        try:
            with self.file.open("rb") as f:
                if f.read(len(self.salt)) != self.salt:
                    return  # written by other code, whose findings this code need not share
                models = _mapped_models(self.file.with_suffix(MODELS), f.read(16))
                self.kept, self._statuses, self._values = pickle.load(f, buffers=models)
                whole = f.tell()
                self._whole = False
                while f.peek(1):
                    kept, statuses, values = pickle.load(f)
                    _apply(self.kept, kept)
                    _apply(self._statuses, statuses)
                    self._values.update(values)
                self._whole = f.tell() - whole > whole // 4
        except Exception:  # noqa: BLE001 - a missing or damaged file, however it fails to read, is as far as it reads
            self._whole = True


MODELS = ".models"  # the suffix of the file beside the memo's that holds the entries' models


def _mapped_models(path: Path, token: bytes) -> Iterator[memoryview]:
    """The models the memo's file was written with, in order, as views of the file mapped into memory.

    The file is replaced, never written over in place: a view stays valid while the build runs, and
    after, in `serve`, whose first build's cards hold theirs.
    """
    with path.open("rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mapped)
    if len(token) != 16 or view[:16] != token:
        raise ValueError(f"{path.name} was not written with the memo's file")
    at, end, unpack = 16, len(view), struct.Struct("<Q").unpack_from
    while at < end:
        (length,) = unpack(mapped, at)
        if at + 8 + length > end:
            raise ValueError(f"{path.name} ends short of a model")
        yield view[at + 8 : at + 8 + length]
        at += 8 + length


def file_status(path: int | str | os.PathLike[str]) -> tuple[int, ...]:
    """A file's or open descriptor's status as the memo records it: times, size, inode, device; OSError if unread."""
    return _status(os.stat(path))


def _status(st: os.stat_result) -> tuple[int, ...]:
    return st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev


def _apply(kept: dict[Any, Any], change: dict[Any, Any]) -> None:
    for key, value in change.items():
        if value is None:
            kept.pop(key, None)
        else:
            kept[key] = value


def load_yaml(path: Path | str, display: str, parse: bool = True) -> tuple[Document, list[Problem]]:
    """Parse one YAML file; return the document and any problems found while reading it.

    Without parse, the file is left for validation to read (an entry checked in a worker).
    """
    if not parse:
        return Document(display, None, source=os.fspath(path), pending=True), []
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        return Document(display, None), [read_problem(display, exc)]
    return parse_yaml(display, raw)


def read_problem(display: str, exc: OSError) -> Problem:
    """The problem of a content file that cannot be read."""
    return Problem(display, 0, 0, "", f"cannot read file: {exc.strerror}")


def parse_yaml(display: str, raw: bytes) -> tuple[Document, list[Problem]]:
    """Parse a YAML file's bytes, recording where each key and item starts."""
    doc = Document(display, None)
    if len(raw) > MAX_FILE_BYTES:
        return doc, [Problem(display, 0, 0, "", f"file is larger than {MAX_FILE_BYTES} bytes")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return doc, [Problem(display, 0, 0, "", f"file is not UTF-8 (byte {exc.start})")]
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return doc, [Problem(display, 1, 1, "", "file is empty")]
        walker = _Walker(loader, doc)
        doc.data = walker.walk(node, ())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        return doc, [Problem(display, line, column, "", f"invalid YAML: {exc.problem or exc.context}")]
    except yaml.YAMLError as exc:
        return doc, [Problem(display, 0, 0, "", f"invalid YAML: {exc}")]
    except RecursionError:
        return doc, [Problem(display, 0, 0, "", f"invalid YAML: nested more than {MAX_DEPTH} levels deep")]
    finally:
        loader.dispose()
    if not isinstance(doc.data, dict):
        return doc, [*walker.problems, Problem(display, 1, 1, "", "expected a mapping of fields at the top level")]
    return doc, walker.problems


@dataclass(frozen=True)
class Example:
    """A corpus case read for the diagnosis page: its thread and its log files."""

    source: str
    files: dict[str, bytes]


@dataclass
class Sources:
    """Every content file of a project, parsed but not yet validated."""

    root: Path
    site: Document
    tags: Document
    entries: list[Document]
    hubs: list[Document]
    problems: list[Problem]
    examples: dict[str, Example] = field(default_factory=dict)  # by case folder
    memo: Memo | None = None


def load_sources(root: Path, memo: Memo | None = None, parse_entries: bool = True) -> Sources:
    """Parse site.yaml, tags.yaml, entries/**/*.yaml and hubs/*.yaml under a project root.

    Without parse_entries, entry files are read but left for validation to parse (over many cores).
    """
    problems: list[Problem] = []

    def read(path: Path | str, display: str, parse: bool = True) -> Document:
        doc, found = load_yaml(path, display, parse)
        problems.extend(found)
        return doc

    def read_required(name: str) -> Document:
        path = root / name
        if not path.is_file():
            problems.append(Problem(name, 0, 0, "", "file is missing"))
            return Document(name, None)
        return read(path, name)

    site = read_required("site.yaml")
    tags = read_required("tags.yaml")
    entries = [read(p, d, parse_entries) for p, d in content_files(root, "entries", True, problems)]
    hubs = [read(p, d) for p, d in content_files(root, "hubs", False, problems)]
    if not entries and not any(p.path.startswith("entries") for p in problems):
        # Building nothing would replace a real site with an empty one.
        problems.append(Problem("entries/", 0, 0, "", "no entries found (expected entries/<system>/<id>.yaml)"))
    examples = _examples(root, site, problems)
    return Sources(root, site, tags, entries, hubs, problems, examples, memo)


def _examples(root: Path, site: Document, problems: list[Problem]) -> dict[str, Example]:
    """Read the corpus cases site.yaml offers on the diagnosis page; name the ones that cannot be used."""
    items = site.data.get("examples") if isinstance(site.data, dict) else None
    found: dict[str, Example] = {}
    for i, item in enumerate(items if isinstance(items, list) else []):
        case = item.get("case") if isinstance(item, dict) else None
        if not isinstance(case, str):
            continue  # the schema reports it
        folder = root / case
        where = ("examples", i, "case")
        if not folder.resolve().is_relative_to(root.resolve()):
            problems.append(site.problem(where, "the case folder is outside the project"))
            continue
        meta, meta_problems = load_yaml(folder / "case.yaml", f"{case}/case.yaml")
        if not folder.is_dir() or meta_problems or not isinstance(meta.data, dict):
            problems.append(site.problem(where, f"{case}: not a corpus case folder (no readable case.yaml)"))
            continue
        logs = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != "case.yaml"}
        if not logs or sum(map(len, logs.values())) > MAX_FILE_BYTES:
            problems.append(site.problem(where, f"{case}: an example needs log files, 1 MiB in all at most"))
            continue
        found[case] = Example(str(meta.data.get("source", "")), logs)
    return found


def content_files(root: Path, folder: str, recursive: bool, problems: list[Problem]) -> list[tuple[str, str]]:
    """The YAML files of a content folder with their names under root; report those that cannot be read as content.

    Walked with scandir, whose entries know whether they are links: only a link is resolved to see
    where it leads, since the walk never descends into a linked folder.
    """
    base = root / folder
    inside = root.resolve()
    base_inside = base.resolve().is_relative_to(inside)
    found = []
    for parts, item in sorted(_walk(base, (), recursive)):
        suffix = os.path.splitext(item.name)[1]
        if suffix.lower() not in (".yaml", ".yml"):
            continue
        display = "/".join((folder, *parts))
        if suffix not in (".yaml", ".yml"):
            rename = f"rename it to {os.path.splitext(item.name)[0]}.yaml"
            problems.append(Problem(display, 0, 0, "", f"the extension must be lower case: {rename}"))
        elif item.is_symlink() and not os.path.exists(item.path):
            problems.append(Problem(display, 0, 0, "", "symbolic link to a file that does not exist"))
        elif not (Path(item.path).resolve().is_relative_to(inside) if item.is_symlink() else base_inside):
            # A link out of the tree would publish whatever it points at.
            problems.append(Problem(display, 0, 0, "", "links to a file outside the project"))
        elif item.is_file():
            found.append((item.path, display))  # a string: ten thousand path objects cost a tenth of a second
    return found


def _walk(
    folder: Path | str, parts: tuple[str, ...], recursive: bool
) -> Iterator[tuple[tuple[str, ...], os.DirEntry[str]]]:
    """Everything in folder (and, if recursive, in the folders under it, not following links) with its path parts."""
    try:
        with os.scandir(folder) as items:
            listed = list(items)
    except OSError:
        return
    for item in listed:
        yield (*parts, item.name), item
        if recursive and item.is_dir(follow_symlinks=False):
            yield from _walk(item.path, (*parts, item.name), recursive)
