"""Load the signature index (the api/v1 contract) that every diagnosis runs on."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from generator.contract import INDEX_VERSION, IndexSignature
from generator.diagnose.errors import SignatureIndexError

PACKAGED = "signatures.jsonl"


@dataclass(frozen=True)
class Signature:
    """One record of signatures.jsonl, with what the engine derives from it once."""

    record: IndexSignature
    position: int  # index in the list, the engine's handle for the signature

    @property
    def entry(self) -> str:
        """Id of the entry."""
        return self.record.entry

    @property
    def is_line(self) -> bool:
        """Whether the signature matches single log lines (literal or regex)."""
        return self.record.kind in ("literal", "regex")

    @property
    def regex(self) -> str:
        """The pattern as a regex source (literals escaped); empty for frames and metrics."""
        if self.record.kind == "literal":
            return re.escape(self.record.pattern)
        return self.record.pattern if self.record.kind == "regex" else ""

    @property
    def strength(self) -> tuple[int, int]:
        """Which of an entry's signatures speaks for its finding: proof over a lead, then the more specific."""
        return (0 if self.record.lead or self.record.search_key else 1, self.specificity)

    @property
    def specificity(self) -> int:
        """How much literal text the pattern pins down; longer patterns outrank shorter ones."""
        r = self.record
        if r.kind == "regex":
            return len(re.sub(r"\\.|[\[\](){}*+?|^$]", "", r.pattern))
        return len(r.pattern) if r.kind == "literal" else 0


def parse_index(text: str, origin: str, packaged: bool = False) -> list[Signature]:
    """Parse JSON Lines text into signatures; raise SignatureIndexError on a malformed or other-version index."""
    signatures: list[Signature] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise SignatureIndexError(f"{origin}:{number}: not JSON ({exc})") from exc
        version = data.get("schema_version") if isinstance(data, dict) else None
        if version != INDEX_VERSION:
            raise SignatureIndexError(
                f"{origin}:{number}: index schema_version {version!r} is not supported (expected {INDEX_VERSION})"
            )
        try:
            record = IndexSignature.model_validate(data, context={"packaged": packaged})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "record"
            message = first["msg"].removeprefix("Value error, ")
            raise SignatureIndexError(f"{origin}:{number}: {where}: {message}") from exc
        if record.kind == "regex":
            try:
                re.compile(record.pattern, re.ASCII)
            except re.error as exc:
                raise SignatureIndexError(f"{origin}:{number}: pattern does not compile ({exc})") from exc
        signatures.append(Signature(record, len(signatures)))
    if not signatures:
        raise SignatureIndexError(f"{origin}: the index holds no signatures")
    return signatures


def load_index(path: Path | None = None) -> list[Signature]:
    """Load signatures from a file, or from the copy packaged with the tool."""
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise SignatureIndexError(f"cannot read the index {path}: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise SignatureIndexError(f"{path}: the index is not UTF-8 text") from exc
        return parse_index(text, str(path))
    text = resources.files("generator.data").joinpath(PACKAGED).read_text(encoding="utf-8")
    return parse_index(text, f"packaged {PACKAGED}", packaged=True)
