"""The public contract under api/v1/: index records, the diagnosis report, their versions and schemas.

The site writes these models and the diagnosis engine reads them; neither imports the other's
internals, so this module is the only thing the two share.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from generator.patterns import regex_problem

API_DIR = "api/v1"
INDEX_VERSION: Literal[2] = 2


def entry_path(entry_id: str) -> str:
    """The site-relative path of an entry's page, the one address every link, feed and index record uses."""
    return f"failures/{entry_id}/"


REPORT_VERSION: Literal[2] = 2
# Onsets kept per finding: the lowest ranks (then hosts) first.
ONSETS_KEPT = 1024

Severity = Literal["low", "medium", "high", "critical"]
# Least to most severe; report ordering and confidence read this order.
SEVERITIES: tuple[Severity, ...] = ("low", "medium", "high", "critical")
SEVERITY_RANK: dict[str, int] = {s: i for i, s in enumerate(SEVERITIES)}

SignatureKind = Literal["literal", "regex", "frames", "metric"]
Condition = Literal["non-finite", "below", "above", "halved", "jump", "rising"]
Role = Literal["initiating", "independent", "wrapper", "collateral", "note"]
Via = Literal["line", "frames", "metric"]


class Contract(BaseModel):
    """Base of the contract models: no unknown fields, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Call(Contract):
    """One frame of a Python traceback, as a frame signature names it."""

    path: str = Field(description="A suffix of the frame's file path, e.g. 'torch/nn/modules/module.py'.")
    function: str = Field(description="The function name the frame shows after 'in'.")


class Detector(Contract):
    """An executable fingerprint: a condition on a metric the log prints."""

    metrics: list[str] = Field(
        description="Normalised metric names it reads (lower case, words joined by '_': 'grad_norm', 'loss_scale')."
    )
    condition: Condition = Field(
        description="'non-finite': NaN or inf; 'below': under `threshold`; 'above': over it; "
        "'halved': halved again and again; "
        "'jump': up by `threshold` orders of magnitude over the run's lowest reading so far; "
        "'rising': a counter that keeps going up."
    )
    count: int = Field(description="Readings in a row the condition must hold for (halvings or rises, for those).")
    threshold: float | None = Field(
        description="The bound for 'below' and 'above', the orders of magnitude for 'jump'."
    )
    within: int | None = Field(
        description="The run must begin within the metric's first `within` readings in the stream; null: anywhere."
    )
    after_finite: bool = Field(description="The run must follow at least one finite reading of the metric.")


class IndexSignature(Contract):
    """One line of signatures.jsonl: how to recognise a failure, and everything needed to act on it."""

    schema_version: Literal[2] = Field(description="Version of this record format.")
    id: str = Field(description="Stable id: '<entry id>/<position of the signature in the entry, from 1>'.")
    entry: str = Field(description="Id of the entry the signature belongs to.")
    title: str = Field(description="Title of the entry.")
    url: str = Field(description="Absolute URL of the entry page.")
    kind: SignatureKind = Field(
        description="'literal': a case-sensitive substring. 'regex': a pattern in the subset shared by "
        "Python (with re.ASCII) and JavaScript (no flags); match it against one line at a time. "
        "'frames': consecutive traceback frames (see `calls`). 'metric': a condition on metric lines "
        "(see `detector`)."
    )
    pattern: str = Field(
        description="The literal text or the regex source; for 'frames' and 'metric' a readable summary."
    )
    required: str = Field(
        description="Text every match of a line signature contains (case-sensitive), so a scanner can skip "
        "lines without it; empty when the pattern has none or the kind reads no single line."
    )
    calls: list[Call] = Field(description="For 'frames': the frames, caller first, that must appear in a row.")
    detector: Detector | None = Field(description="For 'metric': the condition to evaluate.")
    search_key: bool = Field(description="True when the wording is not confirmed upstream: a lead, not proof.")
    lead: bool = Field(
        description="True when healthy runs print this line too (a by-design warning): reported as a note."
    )
    severity: Severity = Field(description="Severity of the entry.")
    category: str = Field(description="Category id of the entry.")
    systems: list[str] = Field(description="System ids of the entry.")
    collateral: bool = Field(description="True when the entry is usually a downstream report of a failure elsewhere.")
    local: bool = Field(
        default=False,
        description="True when that failure is on the rank or host printing the line, which is then where the "
        "job failed first.",
    )
    wraps: list[str] = Field(
        description="Entries whose failures this entry's error carries inside it ('*' for any failure): "
        "when one of them is found too, this finding is the wrapper and that one the cause."
    )
    refines: list[str] = Field(
        description="Entries whose signatures match this signature's lines too, on purpose: this signature "
        "says more about the same line, so on a line both match, this one wins."
    )
    fix: str = Field(description="The fix in one line.")
    verify: str = Field(description="How to prove the fix took, in Markdown.")
    source: str = Field(description="Where upstream prints the text (or names the frames or the metric).")
    examples: list[str] = Field(description="Log lines the signature is known to match.")

    @model_validator(mode="after")
    def _safe_regex(self, info: ValidationInfo) -> IndexSignature:
        # An index from elsewhere is held to the build's rules: a regex outside the safe subset can hang
        # a scan or mean something else in the browser. The copy the build packaged was checked then, and
        # the build checks every entry's regexes before it writes the index.
        trusted = bool(info.context and (info.context.get("packaged") or info.context.get("checked")))
        if self.kind == "regex" and not trusted and (problem := regex_problem(self.pattern)):
            raise ValueError(f"unsafe regex: {problem}")
        return self


class IndexEntry(Contract):
    """One entry in entries.json."""

    id: str = Field(description="Entry id.")
    title: str = Field(description="Entry title.")
    url: str = Field(description="Absolute URL of the entry page.")
    summary: str = Field(description="Two or three sentences on the failure.")
    category: str = Field(description="Category id.")
    severity: Severity = Field(description="Severity.")
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

    schema_version: Literal[2] = Field(description="Version of the index format.")
    site: str = Field(description="Base URL of the site that published this index.")
    entries: list[IndexEntry] = Field(description="Every entry, sorted by id.")


class Evidence(Contract):
    """One log line behind a finding."""

    file: str = Field(description="The log file, as given on the command line ('<stdin>' for standard input).")
    line: int = Field(description="Line number in that file, from 1.")
    rank: int | None = Field(description="Rank that printed the line, from a prefix, the message or the file name.")
    host: str | None = Field(description="Host that printed the line, where the log or the file name says.")
    time: str | None = Field(description="Timestamp as printed on the line.")
    order: list[int] | None = Field(
        description="The timestamp as sortable numbers (month, day, hour, minute, second, microsecond), "
        "where the line or an earlier line of the same file carries a wall-clock time."
    )
    text: str = Field(description="The line (the carriage-return segment holding the match), cut to 400 characters.")
    signature: str = Field(description="Id of the matching signature in signatures.jsonl.")
    via: Via = Field(description="What matched: a log line, traceback frames, or a metric condition.")


class Finding(Contract):
    """One failure the logs show, with its evidence."""

    entry: str = Field(description="Entry id.")
    title: str = Field(description="Entry title.")
    url: str = Field(description="Entry page.")
    severity: Severity = Field(description="Severity of the entry.")
    confidence: Literal["high", "medium", "low"] = Field(
        description="'low' for search keys, by-design warnings and low-severity entries, which are leads "
        "rather than causes; 'medium' for medium severity and for frame or metric evidence alone."
    )
    role: Role = Field(
        description="'initiating': the failure that started it; 'independent': another failure; 'wrapper': "
        "an error that carries another finding inside it; 'collateral': usually a downstream report of "
        "the initiating failure; 'note': a low-confidence lead."
    )
    count: int = Field(
        description="How many lines matched (a line matched by two of the entry's signatures counts once)."
    )
    ranks: list[int] = Field(description="Ranks that printed a matching line, sorted.")
    hosts: list[str] = Field(description="Hosts that printed a matching line, sorted.")
    first: Evidence = Field(description="The earliest matching line.")
    evidence: list[Evidence] = Field(description="Up to five matching lines, the first ones seen.")
    onsets: list[Evidence] = Field(
        default_factory=list,
        description="The earliest matching line of each rank, or of each host for lines that carry no rank "
        "(a line with neither is in none), chosen as `first` is: by wall-clock time across several logs, "
        f"else by position. Sorted by rank, then host; at most {ONSETS_KEPT} (the lowest ranks). Added to "
        "version 2 as a pure addition, so `schema_version` is unchanged; a report written before it has none.",
    )
    fix: str = Field(description="The fix, in one line.")
    verify: str = Field(description="How to prove the fix took.")


class Unknown(Contract):
    """An exception the logs end in that no entry covers yet."""

    exception: str = Field(description="The exception type as printed, e.g. 'ValueError'.")
    message: str = Field(description="Its message, cut to 400 characters; empty when the log gives none.")
    package: str | None = Field(
        description="The package that raised it, read from the innermost traceback frame or the exception's "
        "module; None when the log shows neither."
    )
    frames: list[str] = Field(description="The innermost frames as 'path:line in function', innermost last.")
    evidence: Evidence = Field(description="The line that names the exception.")
    command: str = Field(description="The command that scaffolds an entry from this line.")


class Diagnosis(Contract):
    """The report of `trainwreck diagnose --json`."""

    schema_version: Literal[2] = Field(description="Version of this report format.")
    inputs: list[str] = Field(description="Logs scanned, in order.")
    lines: int = Field(description="Lines scanned, all logs together.")
    bytes: int = Field(description="Bytes scanned, after decompression.")
    initiating: Finding | None = Field(description="The finding judged to have started the failure, if any.")
    initiating_rank: int | None = Field(description="Rank of the initiating finding's first line, if known.")
    initiating_host: str | None = Field(description="Host of the initiating finding's first line, if known.")
    suspects: list[int] = Field(
        description="Ranks whose logs were given (named by file) but show none of the downstream errors the "
        "other ranks show: the collectives were most likely waiting for them."
    )
    findings: list[Finding] = Field(description="Every finding, most likely cause first.")
    unknown: list[Unknown] = Field(
        description="Exceptions no entry covers, when no known failure explains the logs; the earliest first."
    )
    missing: list[str] = Field(description="Facts the logs lack that would settle the diagnosis, each a sentence.")


def contract_schemas() -> dict[str, dict[str, Any]]:
    """Return the JSON Schemas of the contract models, by published file name."""

    def schema(model: type[BaseModel], title: str) -> dict[str, Any]:
        out = model.model_json_schema()
        out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        out["title"] = title
        return out

    return {
        "diagnosis.schema.json": schema(Diagnosis, "Trainwreck diagnosis report (trainwreck diagnose --json)"),
        "entries.schema.json": schema(EntriesIndex, "Trainwreck entries index"),
        "signature.schema.json": schema(IndexSignature, "Trainwreck signature record (one line of signatures.jsonl)"),
    }
