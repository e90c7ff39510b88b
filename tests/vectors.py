"""Shared test vectors for the diagnosis engine: the CLI and the browser page must give the same answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).parent / "vectors"
CASES = sorted(p for p in VECTORS.iterdir() if p.is_dir())


def logs(case: Path) -> list[Path]:
    return sorted(p for p in (case / "logs").iterdir() if p.is_file())


def project(report: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """Keep what both engines must agree on; file names are compared without their folder."""

    def evidence(e: dict[str, Any]) -> dict[str, Any]:
        return {
            "file": Path(e["file"]).name,
            "line": e["line"],
            "rank": e["rank"],
            "host": e["host"],
            "time": e["time"],
        }

    return {
        "initiating": report["initiating"]["entry"] if report["initiating"] else None,
        "initiating_rank": report["initiating_rank"],
        "initiating_host": report["initiating_host"],
        "suspects": report["suspects"],
        "missing_text": report["missing"],
        "lines": report["lines"],
        "findings": [
            {
                "entry": f["entry"],
                "role": f["role"],
                "confidence": f["confidence"],
                "count": f["count"],
                "ranks": f["ranks"],
                "hosts": f["hosts"],
                "first": evidence(f["first"]),
                "evidence": [evidence(e) | {"text": e["text"]} for e in f["evidence"]],
            }
            for f in report["findings"]
        ],
        "missing": len(report["missing"]),
        "problems": sorted(Path(p.split(":")[0]).name for p in problems),
    }


def expected(case: Path) -> dict[str, Any]:
    return json.loads((case / "expected.json").read_text(encoding="utf-8"))
