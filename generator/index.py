"""The signature index under api/v1/: a versioned public contract, separate from the entry model."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from generator.link import Catalog
from generator.patterns import required_literal
from generator.schema import Entry, entry_json_schema, hub_json_schema

SCHEMA_VERSION: Literal[1] = 1
API_DIR = "api/v1"


class Contract(BaseModel):
    """Base of the index models: the index never carries unknown fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class IndexSignature(Contract):
    """One line of signatures.jsonl: a signature with everything needed to act on a match."""

    schema_version: Literal[1] = Field(description="Version of this record format.")
    id: str = Field(description="Stable id: '<entry id>/<position of the signature in the entry, from 1>'.")
    entry: str = Field(description="Id of the entry the signature belongs to.")
    title: str = Field(description="Title of the entry.")
    url: str = Field(description="Absolute URL of the entry page.")
    kind: Literal["literal", "regex"] = Field(
        description="'literal': a case-sensitive substring. 'regex': a pattern in the subset shared by "
        "Python (with re.ASCII) and JavaScript (no flags); match it against one line at a time."
    )
    pattern: str = Field(description="The literal text or the regex source.")
    search_key: bool = Field(description="True when the wording is not confirmed upstream: a lead, not proof.")
    severity: Literal["low", "medium", "high", "critical"] = Field(description="Severity of the entry.")
    category: str = Field(description="Category id of the entry.")
    systems: list[str] = Field(description="System ids of the entry.")
    collateral: bool = Field(description="True when the entry is usually a downstream report of a failure elsewhere.")
    fix: str = Field(description="The fix in one line.")
    verify: str = Field(description="How to prove the fix took, in Markdown.")
    source: str = Field(description="Where upstream prints the text.")
    examples: list[str] = Field(description="Log lines the signature is known to match.")
    required: str = Field(
        description="Text every match contains (case-sensitive), so a scanner can skip lines without it; "
        "empty when the pattern has none."
    )
    overlaps: list[str] = Field(
        description="Entries whose signatures also match this signature's examples on purpose; "
        "when both match a line, the more specific (longer) pattern should rank first."
    )


class IndexEntry(Contract):
    """One entry in entries.json."""

    id: str = Field(description="Entry id.")
    title: str = Field(description="Entry title.")
    url: str = Field(description="Absolute URL of the entry page.")
    summary: str = Field(description="Two or three sentences on the failure.")
    category: str = Field(description="Category id.")
    severity: Literal["low", "medium", "high", "critical"] = Field(description="Severity.")
    layer: Literal["hardware", "software", "configuration", "mixed"] = Field(
        description="Hardware, software, configuration or mixed."
    )
    phase: Literal["training", "inference", "both"] = Field(description="Training, inference or both.")
    systems: list[str] = Field(description="System ids.")
    tags: list[str] = Field(description="Tag ids.")
    collateral: bool = Field(description="True when usually a downstream report.")
    fix: str = Field(description="The fix in one line.")
    verify: str = Field(description="How to prove the fix took, in Markdown.")
    related: list[str] = Field(description="Ids of related entries, most relevant first.")
    signatures: list[str] = Field(description="Ids of this entry's signatures in signatures.jsonl.")
    fingerprint: list[str] = Field(description="Metrics to watch for silent failures.")
    updated: str = Field(description="Date of the last substantive change, YYYY-MM-DD.")


class EntriesIndex(Contract):
    """entries.json: every entry, with the version of the index format."""

    schema_version: Literal[1] = Field(description="Version of the index format.")
    site: str = Field(description="Base URL of the site that published this index.")
    entries: list[IndexEntry] = Field(description="Every entry, sorted by id.")


def _signatures(entry: Entry, catalog: Catalog) -> list[IndexSignature]:
    url = catalog.site.url(f"failures/{entry.id}/")
    return [
        IndexSignature(
            schema_version=SCHEMA_VERSION,
            id=f"{entry.id}/{n}",
            entry=entry.id,
            title=entry.title,
            url=url,
            kind=s.kind,
            pattern=s.pattern,
            search_key=s.search_key,
            severity=entry.severity,
            category=entry.category,
            systems=[r.id for r in entry.systems],
            collateral=bool(entry.collateral and entry.collateral.usually),
            fix=entry.fix.summary,
            verify=entry.verify.step,
            source=s.source,
            examples=list(s.examples),
            overlaps=list(s.overlaps),
            required=required_literal(s.kind, s.pattern),
        )
        for n, s in enumerate(entry.signatures, start=1)
    ]


def build_signature_index(catalog: Catalog) -> dict[str, str]:
    """Return the files of api/v1/ (path to text): entries.json, signatures.jsonl and the schemas."""
    signatures: list[IndexSignature] = []
    entries: list[IndexEntry] = []
    for entry in catalog.entries.values():
        own = _signatures(entry, catalog)
        signatures.extend(own)
        entries.append(
            IndexEntry(
                id=entry.id,
                title=entry.title,
                url=catalog.site.url(f"failures/{entry.id}/"),
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
        )
    index = EntriesIndex(schema_version=SCHEMA_VERSION, site=catalog.site.base_url, entries=entries)
    # One compact object per line, so that grep finds a signature and prints everything about it.
    jsonl = "".join(json.dumps(s.model_dump(), ensure_ascii=False, sort_keys=True) + "\n" for s in signatures)
    return {
        f"{API_DIR}/entries.json": _dump(index.model_dump()),
        f"{API_DIR}/signatures.jsonl": jsonl,
        **{f"{API_DIR}/schema/{name}": _dump(schema) for name, schema in json_schemas().items()},
    }


def json_schemas() -> dict[str, dict[str, Any]]:
    """Return every published JSON Schema by file name."""

    def contract(model: type[BaseModel], title: str) -> dict[str, Any]:
        schema = model.model_json_schema()
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["title"] = title
        return schema

    from generator.diagnose.report import Diagnosis

    return {
        "diagnosis.schema.json": contract(Diagnosis, "Trainwreck diagnosis report (trainwreck diagnose --json)"),
        "entry.schema.json": entry_json_schema(),
        "hub.schema.json": hub_json_schema(),
        "entries.schema.json": contract(EntriesIndex, "Trainwreck entries index"),
        "signature.schema.json": contract(IndexSignature, "Trainwreck signature record (one line of signatures.jsonl)"),
    }


def _dump(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, indent=2) + "\n"
