"""The signature index under api/v1/: a versioned public contract, separate from the entry model."""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Iterator
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
from generator.patterns import required_literal
from generator.schema import Entry, entry_json_schema, hub_json_schema
from generator.validate import EntryCard
from generator.write import replace_file, write_pieces

__all__ = [
    "API_DIR",
    "KeptRecords",
    "build_signature_index",
    "json_schemas",
    "signature_index",
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
    files: dict[str, list[bytes]] = {}
    for path, data in signature_index(catalog):
        files.setdefault(path, []).append(data)
    return {path: b"".join(parts).decode("utf-8") for path, parts in files.items()}


class KeptRecords:
    """Each entry's index text from the last build, by a digest of all it is made from, kept in one file.

    An entry's records read only the entry, the site's address and its related entries; a build that
    changed one entry makes one entry's records and reads the rest back. The file is read in the process
    that writes the index, on first use.

    Kept as the bytes written, not compressed: at 10,000 entries, decompressing and encoding them again
    cost four times more than reading the larger file. A build that changed a few entries appends their
    records (and the keys no longer used) to the file, rather than writing sixty megabytes again; once
    the appended changes outgrow a quarter of the whole, the next save writes it whole.
    """

    def __init__(self, file: Path | None, salt: bytes) -> None:
        self.file, self.salt = file, salt
        self.used: dict[bytes, tuple[bytes, bytes]] = {}
        self._kept: dict[bytes, tuple[bytes, bytes]] | None = None
        self._whole = True  # whether the next save writes the whole file rather than appending its changes

    @property
    def kept(self) -> dict[bytes, tuple[bytes, bytes]]:
        """The records kept by the last build, by key."""
        if self._kept is None:
            self._kept = self._read()
        return self._kept

    def _read(self) -> dict[bytes, tuple[bytes, bytes]]:
        kept: dict[bytes, tuple[bytes, bytes]] = {}
        if self.file is None:
            return kept
        try:
            with self.file.open("rb") as f:
                found = pickle.load(f)
                if not (isinstance(found, tuple) and len(found) == 2 and found[0] == self.salt):
                    return kept  # another generator's: every entry's records are made afresh
                kept = found[1]
                whole = f.tell()
                self._whole = False
                while f.peek(1):
                    added, dropped = pickle.load(f)
                    kept.update(added)
                    for key in dropped:
                        kept.pop(key, None)
                self._whole = f.tell() - whole > whole // 4
        except Exception:  # noqa: BLE001 - a missing or damaged file, however it fails to read, is as far as it reads
            self._whole = True
        return kept

    def records(self, card: EntryCard, catalog: Catalog) -> tuple[bytes, bytes]:
        """An entry's (signature lines, entries.json item) as UTF-8: read back when kept, else made and kept."""
        made_from = [card.digest, catalog.site.base_url, *catalog.related.get(card.id, [])]
        key = hashlib.sha256("\0".join(made_from).encode()).digest()
        found = self.kept.get(key)
        if found is None:
            found = _records(card.entry(), catalog)
        self.used[key] = found
        return found

    def _write_whole(self, f: BinaryIO) -> None:
        pickle.dump((self.salt, self.used), f, protocol=pickle.HIGHEST_PROTOCOL)

    def save(self) -> None:
        """Keep the records this build used, and only those; a cache that cannot be written costs time only."""
        if self.file is None:
            return
        kept = self.kept
        added = {key: found for key, found in self.used.items() if key not in kept}
        dropped = [key for key in kept if key not in self.used]
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            if self._whole:
                # Streamed: at 10,000 entries the records are sixty megabytes, not to be held twice.
                replace_file(self.file, self._write_whole)
            elif added or dropped:
                with self.file.open("ab", buffering=0) as f:
                    f.write(pickle.dumps((added, dropped), pickle.HIGHEST_PROTOCOL))  # in one write: never interleaved
        except OSError:
            pass


def signature_index(catalog: Catalog, kept: KeptRecords | None = None) -> Iterator[tuple[str, bytes]]:
    """The files of api/v1/ as (path, UTF-8) pieces, to be written one after another, entry by entry.

    Each entry's records are checked against the contract and given out before the next entry is read,
    so a large site's index is never held whole, as models or as text. Given kept, the records of an
    entry unchanged since the build that kept them are read back instead of made.
    """
    head = _dump(EntriesIndex(schema_version=INDEX_VERSION, site=catalog.site.base_url, entries=[]).model_dump())
    before, after = head.split('"entries": []', 1)
    yield ENTRIES, (before + '"entries": [').encode()
    first = True
    yield SIGNATURES, b""
    for card in catalog.entries.values():
        lines, item = kept.records(card, catalog) if kept else _records(card.entry(), catalog)
        yield SIGNATURES, lines
        yield ENTRIES, (b"\n    " if first else b",\n    ") + item
        first = False
    yield ENTRIES, (("]" if first else "\n  ]") + after).encode()
    for name, schema in json_schemas().items():
        yield f"{API_DIR}/schema/{name}", _dump(schema).encode()


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


def write_signature_index(root: Path, catalog: Catalog, kept: KeptRecords | None, *, atomic: bool = False) -> None:
    """Write the files of api/v1/ under root, and keep each entry's records for the next build."""
    write_pieces(root, signature_index(catalog, kept), atomic=atomic)
    if kept:
        kept.save()


def json_schemas() -> dict[str, dict[str, Any]]:
    """Return every published JSON Schema by file name: the contract's and the authoring formats'."""
    return {
        **contract_schemas(),
        "entry.schema.json": entry_json_schema(),
        "hub.schema.json": hub_json_schema(),
    }


def _dump(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, indent=2) + "\n"
