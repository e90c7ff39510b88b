"""Benchmark every candidate matcher on a log of near misses, against ripgrep.

A near miss is a line that holds a regex signature's required text but does not match its pattern:
every such line is proposed and must be read exactly, so this is where a matcher that proposes a
line for every signature (rather than for the ones that own the text it found) goes quadratic. The
log is generated (deterministic, --size-mib of it); each matcher runs `trainwreck diagnose` in its
own process; ripgrep with the same patterns is the named baseline. Wall time and peak memory are
printed per matcher, with the ratio to ripgrep.

    python benchmarks/near_miss_bench.py [--size-mib 8]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.diagnose.signatures import load_index  # noqa: E402


def near_miss_log(path: Path, size: int, seed: int = 1) -> int:
    """Write lines that carry a regex signature's required text without matching it; return the count."""
    rng = random.Random(seed)
    texts = []
    for sig in load_index():
        r = sig.record
        if r.kind == "regex" and len(r.required) >= 6:
            line = f"[rank{rng.randrange(512)}]: note: saw {r.required!s} in the previous run's notes"
            if not re.search(r.pattern, line, re.ASCII):
                texts.append(r.required)
    lines = 0
    with path.open("w", encoding="utf-8") as out:
        written = 0
        while written < size:
            text = f"[rank{rng.randrange(512)}]: note: saw {rng.choice(texts)} in the previous run's notes\n"
            out.write(text)
            written += len(text)
            lines += 1
    return lines


def run(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one command run to completion (its own, read with wait4)."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, _status, usage = os.wait4(child.pid, 0)
    child.returncode = 0  # reaped above; keep Popen from waiting again
    return time.perf_counter() - started, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mib", type=int, default=8)
    args = parser.parse_args()
    rg = shutil.which("rg")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "near-miss.log"
        lines = near_miss_log(log, args.size_mib << 20)
        patterns = Path(tmp) / "patterns.txt"
        regexes = [s.record.pattern for s in load_index() if s.record.kind == "regex"]
        patterns.write_text("\n".join(regexes) + "\n", encoding="utf-8")
        print(f"{args.size_mib} MiB, {lines:,} lines, each a near miss of one of {len(regexes)} regex signatures")
        base = None
        if rg:
            wall, peak = run([rg, "-c", "-f", str(patterns), str(log)])
            base = wall
            print(f"ripgrep (baseline)   {wall:7.2f} s  {peak:7.0f} MB")
        for matcher in ("hyperscan", "re2", "literal"):
            cmd = [sys.executable, "-m", "generator", "diagnose", "--json", "--engine", matcher, str(log)]
            probe = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if probe.returncode == 2:
                print(f"{matcher:20s} not installed")
                continue
            findings = len(json.loads(probe.stdout)["findings"])
            wall, peak = run(cmd)
            ratio = f"{wall / base:6.2f}x ripgrep" if base else ""
            print(f"{matcher:20s} {wall:7.2f} s  {peak:7.0f} MB  {ratio}  ({findings} findings)")


if __name__ == "__main__":
    main()
