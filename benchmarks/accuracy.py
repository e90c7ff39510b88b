"""Accuracy of `trainwreck diagnose` on the real-log corpus, beside a naive baseline run on the same cases.

The baseline is what grep would do: every signature's text searched literally (a regex signature by
its required text), the first matching line of the log naming the answer. For each family and overall
it prints detection (an expected entry among the findings), top-1 and top-3 (an expected entry first,
or in the first three findings), false alarms on the negatives (any finding that is not a note), the
initiating rank or host where the case settles it, and for failures no entry covers yet whether the
report names the exception.

    python benchmarks/accuracy.py [--corpus tests/corpus/real] [--json results.json] [--misses] [--from-entries]

--from-entries builds the index from entries/ as they are now instead of reading the packaged copy.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.diagnose.run import Engine  # noqa: E402
from generator.diagnose.signatures import load_index  # noqa: E402
from tests.corpus_cases import Case, load_cases  # noqa: E402


@dataclass
class Tally:
    """Counts for one family (or all of them) and one engine."""

    failures: int = 0
    detected: int = 0
    top1: int = 0
    top3: int = 0
    as_note: int = 0  # right first, but only as a note: the entry's line is one healthy runs print too
    negatives: int = 0
    false_alarms: int = 0
    settled: int = 0
    initiating_right: int = 0
    uncovered: int = 0
    uncovered_named: int = 0
    misses: list[str] = field(default_factory=list)

    def pct(self, part: int, whole: int) -> str:
        return f"{100 * part / whole:5.1f}" if whole else "    -"


def trainwreck_answer(engine: Engine, case: Case) -> dict[str, Any]:
    """The engine's answer: ranked entries, roles, initiating rank and host, unknown exceptions."""
    report, _problems = engine.diagnose([str(p) for p in case.logs])
    return {
        "ranked": [f.entry for f in report.findings],
        "alarms": [f.entry for f in report.findings if f.role != "note"],
        "rank": report.initiating_rank,
        "host": report.initiating_host,
        "unknown": [u.exception for u in report.unknown],
    }


def naive_answer(case: Case, needles: list[tuple[str, str]]) -> dict[str, Any]:
    """grep: the first line holding any signature's text names the entry."""
    for path in case.logs:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            for text, entry in needles:
                if text in line:
                    return {"ranked": [entry], "alarms": [entry], "rank": None, "host": None, "unknown": []}
    return {"ranked": [], "alarms": [], "rank": None, "host": None, "unknown": []}


def score(cases: list[Case], answer: Any) -> dict[str, Tally]:
    """Tally one engine's answers per family and overall ('all')."""
    tallies: dict[str, Tally] = defaultdict(Tally)
    for case in cases:
        got = answer(case)
        for key in (case.family, "all"):
            t = tallies[key]
            if case.kind == "negative":
                t.negatives += 1
                if got["alarms"]:
                    t.false_alarms += 1
                    t.misses.append(f"{case.name}: false alarm {got['alarms'][:2]}")
                continue
            if not case.expected:
                t.uncovered += 1
                named = bool(got["unknown"]) and (case.exception is None or case.exception in got["unknown"])
                t.uncovered_named += named or bool(got["alarms"])
                continue
            t.failures += 1
            ranked = got["ranked"]
            hit = [e for e in ranked if e in case.expected]
            t.detected += bool(hit)
            t.top1 += bool(ranked) and ranked[0] in case.expected
            t.as_note += bool(ranked) and ranked[0] in case.expected and not got["alarms"]
            t.top3 += any(e in case.expected for e in ranked[:3])
            if not ranked or ranked[0] not in case.expected:
                t.misses.append(f"{case.name}: expected {case.expected[0]}, got {ranked[:3]}")
            if case.initiating:
                t.settled += 1
                want_rank, want_host = case.initiating.get("rank"), case.initiating.get("host")
                right = (want_rank is None or got["rank"] == want_rank) and (
                    want_host is None or got["host"] == want_host
                )
                t.initiating_right += right
                if not right:
                    t.misses.append(f"{case.name}: initiating {case.initiating}, got rank {got['rank']} {got['host']}")
    return tallies


def table(ours: dict[str, Tally], naive: dict[str, Tally]) -> str:
    """Render the per-family table: our figures, the baseline's in brackets."""
    head = (
        "| family | failures | detected % | top-1 % | top-3 % | negatives | false alarms | initiating | "
        "uncovered named |"
    )
    rows = [head, "|" + "---|" * 9]
    families = sorted(k for k in ours if k != "all") + ["all"]
    for fam in families:
        t, n = ours[fam], naive[fam]
        rows.append(
            f"| {fam} | {t.failures} | {t.pct(t.detected, t.failures)} ({n.pct(n.detected, n.failures).strip()}) "
            f"| {t.pct(t.top1, t.failures)} ({n.pct(n.top1, n.failures).strip()}) "
            f"| {t.pct(t.top3, t.failures)} ({n.pct(n.top3, n.failures).strip()}) "
            f"| {t.negatives} | {t.false_alarms} ({n.false_alarms}) "
            f"| {t.initiating_right}/{t.settled} | {t.uncovered_named}/{t.uncovered} |"
        )
    return "\n".join(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default=str(ROOT / "tests" / "corpus" / "real"))
    p.add_argument("--json", help="also write the figures as JSON")
    p.add_argument("--misses", action="store_true", help="list every case the engine gets wrong")
    p.add_argument("--from-entries", action="store_true", help="index the entries as they are now")
    args = p.parse_args()
    cases = load_cases(Path(args.corpus))
    index = None
    if args.from_entries:
        from generator.build import load_catalog
        from generator.index import API_DIR, build_signature_index

        index = Path(tempfile.mkdtemp()) / "signatures.jsonl"
        index.write_text(build_signature_index(load_catalog(ROOT))[f"{API_DIR}/signatures.jsonl"], encoding="utf-8")
    engine = Engine(index)
    needles = []
    for s in load_index(index):
        if s.is_line and s.record.required:
            needles.append((s.record.required, s.entry))
    ours = score(cases, lambda c: trainwreck_answer(engine, c))
    naive = score(cases, lambda c: naive_answer(c, needles))
    a, n = ours["all"], naive["all"]
    multi = sum(1 for c in cases if c.multi_rank)
    print(
        f"{len(cases)} cases: {a.failures} covered failures, {a.uncovered} uncovered, {a.negatives} negatives, "
        f"{multi} multi-rank. Baseline in brackets: every signature grepped literally, first match wins.\n"
    )
    print(table(ours, naive))
    print(
        f"\nOverall: detection {a.pct(a.detected, a.failures).strip()} % (naive {n.pct(n.detected, n.failures).strip()}), "
        f"top-1 {a.pct(a.top1, a.failures).strip()} % (naive {n.pct(n.top1, n.failures).strip()}), "
        f"top-3 {a.pct(a.top3, a.failures).strip()} % (naive {n.pct(n.top3, n.failures).strip()}), "
        f"false alarms {a.false_alarms}/{a.negatives} (naive {n.false_alarms}), "
        f"initiating {a.initiating_right}/{a.settled}, uncovered named {a.uncovered_named}/{a.uncovered}.\n"
        f"Of the top-1 answers, {a.as_note} name the entry only as a note (a lead healthy runs print too: "
        "a performance warning, an early search), with no failure reported."
    )
    held = [c for c in cases if c.held_out]
    if held:
        h = score(held, lambda c: trainwreck_answer(engine, c))["all"]
        hn = score(held, lambda c: naive_answer(c, needles))["all"]
        print(
            f"Held out ({len(held)} cases collected after the entries were last improved against the corpus): "
            f"detection {h.pct(h.detected, h.failures).strip()} % (naive {hn.pct(hn.detected, hn.failures).strip()}), "
            f"top-1 {h.pct(h.top1, h.failures).strip()} % (naive {hn.pct(hn.top1, hn.failures).strip()}), "
            f"top-3 {h.pct(h.top3, h.failures).strip()} %, false alarms {h.false_alarms}/{h.negatives} "
            f"(naive {hn.false_alarms}), uncovered named {h.uncovered_named}/{h.uncovered}."
        )
    if args.misses:
        print("\nMisses:")
        for line in a.misses:
            print(f"  {line}")
    if args.json:
        Path(args.json).write_text(
            json.dumps({k: {**vars(v), "misses": v.misses} for k, v in ours.items()}, indent=2), encoding="utf-8"
        )


if __name__ == "__main__":
    main()
