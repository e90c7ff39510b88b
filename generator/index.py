"""The signature index under api/v1/: a versioned public contract, separate from the entry model."""

from __future__ import annotations

import dataclasses
import errno
import io
import json
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from generator.contract import (
    API_DIR,
    INDEX_VERSION,
    Call,
    Detector,
    EntriesIndex,
    IndexEntry,
    IndexSignature,
    contract_schemas,
    entry_path,
)
from generator.link import Catalog
from generator.load import file_status
from generator.patterns import required_literal
from generator.schema import Entry, entry_json_schema, hub_json_schema
from generator.write import clock_passed, partial_file, replace_file, write_files

__all__ = [
    "API_DIR",
    "KeptIndex",
    "build_signature_index",
    "json_schemas",
    "write_signature_index",
]


def _signatures(entry: Entry, catalog: Catalog) -> list[IndexSignature]:
    """Every way the engine can recognise the entry: lines, then frame signatures, then metric detectors."""
    common: dict[str, Any] = {
        "schema_version": INDEX_VERSION,
        "entry": entry.id,
        "title": entry.title,
        "url": catalog.site.url(entry_path(entry.id)),
        "severity": entry.severity,
        "category": entry.category,
        "systems": [r.id for r in entry.systems],
        "collateral": bool(entry.collateral and entry.collateral.usually),
        "local": bool(entry.collateral and entry.collateral.local),
        "wraps": list(entry.wraps),
        "fix": entry.fix.summary,
        "verify": entry.verify.step,
        "required": "",
        "calls": [],
        "detector": None,
        "search_key": False,
        "lead": False,
        "refines": [],
        "examples": [],
    }
    records: list[IndexSignature] = []

    def add(**fields: Any) -> None:
        data = {**common, "id": f"{entry.id}/{len(records) + 1}", **fields}
        records.append(IndexSignature.model_validate(data, context={"checked": True}))

    for s in entry.signatures:
        add(
            kind=s.kind,
            pattern=s.pattern,
            required=required_literal(s.kind, s.pattern),
            search_key=s.search_key,
            lead=s.lead,
            refines=list(s.refines),
            source=s.source,
            examples=list(s.examples),
        )
    for f in entry.frames:
        add(
            kind="frames",
            pattern=" > ".join(f"{c.path} in {c.function}" for c in f.calls),
            calls=[Call(path=c.path, function=c.function) for c in f.calls],
            source=f.source,
            examples=list(f.examples),
        )
    for fp in entry.fingerprint:
        if fp.detect is not None:
            d = fp.detect
            bound = f" {d.threshold:g}" if d.threshold is not None else ""
            start = " after a finite reading" if d.after_finite else ""
            start += f", from within the first {d.within}" if d.within is not None else ""
            add(
                kind="metric",
                pattern=f"{' or '.join(d.metrics)}: {d.condition}{bound} for {d.count} readings{start}",
                detector=Detector(
                    metrics=list(d.metrics),
                    condition=d.condition,
                    count=d.count,
                    threshold=d.threshold,
                    within=d.within,
                    after_finite=d.after_finite,
                ),
                source=f"docs:{catalog.site.url(entry_path(entry.id))}",
            )
    return records


ENTRIES = f"{API_DIR}/entries.json"
SIGNATURES = f"{API_DIR}/signatures.jsonl"


def build_signature_index(catalog: Catalog) -> dict[str, str]:
    """Return the files of api/v1/ (path to text): entries.json, signatures.jsonl and the schemas."""
    entries, lines = io.BytesIO(), io.BytesIO()
    _write_index(entries, lines, catalog, None, {})
    files = {ENTRIES: entries.getvalue(), SIGNATURES: lines.getvalue(), **_schema_files()}
    return {path: data.decode("utf-8") for path, data in files.items()}


# What the index files are kept as beside the cache, and the note of where each entry's records lie in them.
KEPT_FILES = {ENTRIES: "entries.json", SIGNATURES: "signatures.jsonl"}
KEPT_NOTE = "index.pickle"
_HEAD, _NEXT = b"\n    ", b",\n    "  # what comes before an item of entries.json: the first, and any other


class KeptIndex:
    """The index files the last build wrote, linked into a folder beside the cache, and each entry's place in them.

    An entry's records read only the entry, the site's address and its related entries; a build that
    changed one entry makes that entry's records and copies every other entry's bytes from the last
    build's files, in the kernel (os.copy_file_range), without reading them. A kept file is taken only
    while its status is as noted when it was linked: one written over in place since is not read.
    """

    def __init__(self, folder: Path | None, salt: bytes) -> None:
        self.folder, self.salt = folder, salt

    def _note(self) -> _IndexNote | None:
        if self.folder is None:
            return None
        try:
            with (self.folder / KEPT_NOTE).open("rb") as f:
                note = pickle.load(f)
        except Exception:  # noqa: BLE001 - a missing or damaged note, however it fails to read, is no note
            return None
        return note if isinstance(note, _IndexNote) and note.salt == self.salt else None

    def sources(self, base_url: str) -> tuple[_IndexNote | None, dict[str, BinaryIO]]:
        """The note of the last build's files and those files opened, when they are as noted and for this address."""
        note = self._note()
        opened: dict[str, BinaryIO] = {}
        if note is None or note.base_url != base_url or self.folder is None:
            return None, opened
        try:
            for path, name in KEPT_FILES.items():
                opened[path] = (self.folder / name).open("rb")
                if file_status(opened[path].fileno()) != note.statuses.get(path):
                    raise OSError(f"{name} changed since it was kept")
        except OSError:
            for f in opened.values():
                f.close()
            return None, {}
        return note, opened

    def keep(self, root: Path, note: _IndexNote) -> None:
        """Link the files just written under root into the folder and note them; a cache that cannot costs time."""
        if self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / KEPT_NOTE).unlink(missing_ok=True)  # no note, until the files it describes are kept
            statuses = {}
            for path, name in KEPT_FILES.items():
                partial = partial_file(self.folder / name)
                partial.unlink(missing_ok=True)
                os.link(root / path, partial)
                os.replace(partial, self.folder / name)
                statuses[path] = file_status(self.folder / name)  # now: a link, and a move, change its time
            # A file written over in place within the tick of the clock its status was taken in keeps that
            # status: the note is written once the clock is past, and only if the files are still as noted.
            newest = max(max(status[:2]) for status in statuses.values())  # a status begins with its two times
            if not clock_passed(self.folder, newest):
                return
            if any(file_status(self.folder / name) != statuses[path] for path, name in KEPT_FILES.items()):
                return
            replace_file(self.folder / KEPT_NOTE, pickle.dumps(dataclasses.replace(note, statuses=statuses)))
        except OSError:
            pass


# Where an entry's records lie in the index files, with what they were made from: the card's digest, the
# related ids, and the (offset, length) of its signature lines and of its item of entries.json.
_Place = tuple[str, tuple[str, ...], tuple[int, int], tuple[int, int]]


@dataclass(frozen=True)
class _IndexNote:
    """Where each entry's records lie in the index files a build wrote, by entry id with what they were made from."""

    salt: bytes
    base_url: str
    places: dict[str, _Place]  # by entry id
    first: int  # the offset of the first item of entries.json: the only one not after a comma
    schemas: dict[str, bytes]  # the published JSON Schemas, by path: made from the code alone
    statuses: dict[str, tuple[int, ...]] = field(default_factory=dict)  # of the kept files, by path


class _Composer:
    """A file written from bytes and from ranges of another file, contiguous ranges copied in one call."""

    def __init__(self, target: BinaryIO, source: BinaryIO | None) -> None:
        self.target, self.source = target, source
        self.written = 0  # bytes given so far: the offset of the next piece
        self._bytes: list[bytes] = []
        self._range: tuple[int, int] | None = None  # the pending range of the source: offset, length

    def add(self, data: bytes) -> None:
        self._flush_range()
        self._bytes.append(data)
        self.written += len(data)

    def copy(self, offset: int, length: int) -> None:
        if self._range is not None and self._range[0] + self._range[1] == offset:
            self._range = (self._range[0], self._range[1] + length)
        else:
            self._flush_range()
            self._range = (offset, length)
        self.written += length

    def close(self) -> None:
        self._flush_range()
        self._flush_bytes()

    def _flush_bytes(self) -> None:
        if self._bytes:
            self.target.write(b"".join(self._bytes))
            self._bytes = []

    def _flush_range(self) -> None:
        if self._range is None:
            return
        self._flush_bytes()
        self.target.flush()
        assert self.source is not None
        _copy_range(self.source.fileno(), self.target.fileno(), *self._range)
        self._range = None


def _copy_range(source: int, target: int, offset: int, length: int) -> None:
    """Append length bytes of source from offset to target: in the kernel where the system and file system allow."""
    end = offset + length
    in_kernel = getattr(os, "copy_file_range", None)  # Linux's
    try:
        while in_kernel is not None and offset < end:
            copied = in_kernel(source, target, end - offset, offset)
            if copied == 0:
                raise _SourceChanged
            offset += copied
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
            raise
    while offset < end:  # read and written here, by a system or file system that copies no range
        chunk = os.pread(source, min(end - offset, 1 << 20), offset)
        if not chunk:
            raise _SourceChanged
        offset += os.write(target, chunk)


class _SourceChanged(Exception):
    """A kept file ended short of a range its note gave: it changed under the build, so is not to be read."""


def _records(entry: Entry, catalog: Catalog) -> tuple[bytes, bytes]:
    """An entry's lines of signatures.jsonl and its item of entries.json, as UTF-8."""
    own = _signatures(entry, catalog)
    # One compact object per line, so that grep finds a signature and prints everything about it.
    lines = "".join(json.dumps(s.model_dump(), ensure_ascii=False, sort_keys=True) + "\n" for s in own)
    item = IndexEntry(
        id=entry.id,
        title=entry.title,
        url=catalog.site.url(entry_path(entry.id)),
        summary=entry.summary,
        category=entry.category,
        severity=entry.severity,
        layer=entry.layer,
        phase=entry.phase,
        systems=[r.id for r in entry.systems],
        tags=list(entry.tags),
        collateral=bool(entry.collateral and entry.collateral.usually),
        fix=entry.fix.summary,
        verify=entry.verify.step,
        related=catalog.related.get(entry.id, []),
        signatures=[s.id for s in own],
        fingerprint=[f.metric for f in entry.fingerprint],
        updated=entry.updated.isoformat(),
    )
    # As json.dumps(indent=2) nests it in the whole file: two levels in.
    return lines.encode(), _dump(item.model_dump()).rstrip("\n").replace("\n", "\n    ").encode()


def write_signature_index(root: Path, catalog: Catalog, kept: KeptIndex | None) -> None:
    """Write the files of api/v1/ under root; with kept, copy unchanged entries' records from the last build's files.

    Each file is written beside its place and then moved there, whole: a new file, never the kept one.
    """
    note, sources = kept.sources(catalog.site.base_url) if kept else (None, {})
    targets = {path: root / path for path in KEPT_FILES}
    partials = {path: partial_file(target) for path, target in targets.items()}
    targets[ENTRIES].parent.mkdir(parents=True, exist_ok=True)
    try:
        try:
            with partials[ENTRIES].open("wb") as e, partials[SIGNATURES].open("wb") as s:
                places, first = _write_index(e, s, catalog, note, sources)
        except _SourceChanged:
            note = None
            with partials[ENTRIES].open("wb") as e, partials[SIGNATURES].open("wb") as s:
                places, first = _write_index(e, s, catalog, None, {})
        for path, target in targets.items():
            os.replace(partials[path], target)
    finally:
        for f in sources.values():
            f.close()
        for partial in partials.values():
            partial.unlink(missing_ok=True)
    schemas = note.schemas if note is not None else _schema_files()
    write_files(root, dict(schemas), atomic=True)
    if kept:
        kept.keep(root, _IndexNote(kept.salt, catalog.site.base_url, places, first, schemas))


def _write_index(
    entries_file: BinaryIO,
    lines_file: BinaryIO,
    catalog: Catalog,
    note: _IndexNote | None,
    sources: dict[str, BinaryIO],
) -> tuple[dict[str, _Place], int]:
    """Write entries.json and signatures.jsonl entry by entry, copied where note has the entry as it is, else made.

    Each entry's records are checked against the contract and written before the next entry is read, so
    a large site's index is never held whole, as models or as text. Return each entry's place in the
    files, and where the first item of entries.json begins.
    """
    places: dict[str, _Place] = {}
    head = _dump(EntriesIndex(schema_version=INDEX_VERSION, site=catalog.site.base_url, entries=[]).model_dump())
    before, after = head.split('"entries": []', 1)
    opening = (before + '"entries": [').encode()
    known = note.places if note is not None else {}
    entries, lines = _Composer(entries_file, sources.get(ENTRIES)), _Composer(lines_file, sources.get(SIGNATURES))
    entries.add(opening)
    for card in catalog.entries.values():
        related = tuple(catalog.related.get(card.id, ()))
        place = known.get(card.id)
        sep = _NEXT if places else _HEAD
        at, start = lines.written, entries.written + len(sep)
        if note is not None and place is not None and place[0] == card.digest and place[1] == related:
            (line_at, line_length), (item_at, item_length) = place[2], place[3]
            lines.copy(line_at, line_length)
            if sep == _NEXT and item_at != note.first:  # the kept item has this very comma before it
                entries.copy(item_at - len(_NEXT), len(_NEXT) + item_length)
            else:
                entries.add(sep)
                entries.copy(item_at, item_length)
        else:
            made_lines, item = _records(card.entry(), catalog)
            line_length, item_length = len(made_lines), len(item)
            lines.add(made_lines)
            entries.add(sep + item)
        places[card.id] = (card.digest, related, (at, line_length), (start, item_length))
    entries.add((b"\n  ]" if places else b"]") + after.encode())
    entries.close()
    lines.close()
    return places, len(opening) + len(_HEAD)


def json_schemas() -> dict[str, dict[str, Any]]:
    """Return every published JSON Schema by file name: the contract's and the authoring formats'."""
    return {
        **contract_schemas(),
        "entry.schema.json": entry_json_schema(),
        "hub.schema.json": hub_json_schema(),
    }


def _schema_files() -> dict[str, bytes]:
    """The published JSON Schemas' files, by path under the site."""
    return {f"{API_DIR}/schema/{name}": _dump(schema).encode() for name, schema in json_schemas().items()}


def _dump(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, indent=2) + "\n"
