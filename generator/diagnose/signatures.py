"""Load the signature index (the api/v1 contract) that every diagnosis runs on."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from generator.errors import TrainwreckError

SUPPORTED_VERSION = 1
PACKAGED = "signatures.jsonl"
SEVERITY_RANK = {"critical": 3, "high": 2, "medium": 1, "low": 0}


class SignatureIndexError(TrainwreckError):
    """The signature index cannot be read."""


@dataclass(frozen=True)
class Signature:
    """One record of signatures.jsonl, as the engine uses it."""

    id: str
    entry: str
    title: str
    url: str
    kind: str
    pattern: str
    search_key: bool
    severity: str
    collateral: bool
    fix: str
    verify: str
    overlaps: tuple[str, ...]
    required: str
    examples: tuple[str, ...]

    @property
    def regex(self) -> str:
        """The pattern as a regex source (literals escaped)."""
        return re.escape(self.pattern) if self.kind == "literal" else self.pattern

    @property
    def specificity(self) -> int:
        """How much literal text the pattern pins down; longer patterns outrank shorter ones."""
        return len(re.sub(r"\\.|[\[\](){}*+?|^$]", "", self.pattern)) if self.kind == "regex" else len(self.pattern)


def parse_index(text: str, origin: str) -> list[Signature]:
    """Parse JSON Lines text into signatures; raise SignatureIndexError on a malformed or newer index."""
    signatures = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            version = record["schema_version"]
            if version != SUPPORTED_VERSION:
                raise SignatureIndexError(
                    f"{origin}:{number}: index schema_version {version} is not supported (expected 1)"
                )
            signatures.append(
                Signature(
                    id=record["id"],
                    entry=record["entry"],
                    title=record["title"],
                    url=record["url"],
                    kind=record["kind"],
                    pattern=record["pattern"],
                    search_key=bool(record["search_key"]),
                    severity=record["severity"],
                    collateral=bool(record["collateral"]),
                    fix=record["fix"],
                    verify=record["verify"],
                    overlaps=tuple(record["overlaps"]),
                    required=record["required"],
                    examples=tuple(record["examples"]),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise SignatureIndexError(f"{origin}:{number}: not a signature record ({exc})") from exc
    if not signatures:
        raise SignatureIndexError(f"{origin}: the index holds no signatures")
    return signatures


def load_index(path: Path | None = None) -> list[Signature]:
    """Load signatures from a file, or from the copy packaged with the tool."""
    if path is not None:
        try:
            return parse_index(path.read_text(encoding="utf-8"), str(path))
        except OSError as exc:
            raise SignatureIndexError(f"cannot read the index {path}: {exc.strerror}") from exc
    text = resources.files("generator.data").joinpath(PACKAGED).read_text(encoding="utf-8")
    return parse_index(text, f"packaged {PACKAGED}")
