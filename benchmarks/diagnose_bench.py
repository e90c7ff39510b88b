"""Benchmark `trainwreck diagnose` against ripgrep on a deterministic ~1 GiB multi-rank log.

Both tools get the same signature set (the packaged index, or --index). The log is noise shaped
like real training output (rank prefixes, glog headers, progress bars, colour codes) with every
signature's example lines planted at known places. The script checks that ripgrep matches exactly
the planted lines and that the diagnosis counts and locates them, then prints the wall-time ratio
(diagnose / ripgrep, the named baseline) and the peak memory of each.

    python benchmarks/diagnose_bench.py [--size-mib 1024] [--engine auto] [--keep]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.diagnose.signatures import Signature, load_index  # noqa: E402

WORDS = "loss step rank tensor iter grad norm lr batch epoch tokens sec throughput mfu scale warmup eval".split()


def noise_lines(rng: random.Random, count: int, colour_every: int) -> list[str]:
    """Lines a healthy multi-rank run prints: glog, step, progress-bar, logging and NCCL INFO lines."""
    lines = []
    for i in range(count):
        rank = rng.randrange(512)
        # One line in `colour_every` carries colour codes, as a colourising log handler prints it.
        kind = 4 if i % colour_every == colour_every - 1 else (0, 1, 2, 3, 5, 0, 1, 3)[i % 8]
        if kind == 0:
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(6, 18)))
            lines.append(
                f"[rank{rank}]:[I1130 01:{rng.randrange(60):02d}:{rng.randrange(60):02d}.{rng.randrange(10**6):06d} train.py:{rng.randrange(900)}] {words}"
            )
        elif kind == 1:
            lines.append(
                f"[rank{rank}]: step {rng.randrange(10**5)} | loss {rng.uniform(1, 4):.4f} | grad_norm {rng.uniform(0.1, 2):.3f} | lr {rng.uniform(1e-5, 3e-4):.2e}"
            )
        elif kind == 2:
            done = rng.randrange(1000)
            lines.append(
                f"Epoch 1: {done // 10:3d}%|{'#' * (done // 100):10s}| {done}/1000 [00:{rng.randrange(60):02d}<01:{rng.randrange(60):02d}, {rng.uniform(1, 9):.2f}it/s]\rEpoch 1: {done // 10 + 1:3d}%|"
            )
        elif kind == 3:
            lines.append(
                f"2026-11-30 01:{rng.randrange(60):02d}:{rng.randrange(60):02d},{rng.randrange(1000):03d} - INFO - rank {rank} throughput {rng.uniform(100, 400):.1f} TFLOP/s"
            )
        elif kind == 4:
            lines.append(f"\x1b[32m[default{rank % 8}]:\x1b[0m eval {rng.choice(WORDS)} {rng.uniform(0, 1):.5f}")
        else:
            lines.append(
                f"node{rng.randrange(64):02d}:{rng.randrange(10**5)}:{rng.randrange(10**5)} [{rank % 8}] NCCL INFO Channel {rng.randrange(32):02d}/0 : {rank} -> {(rank + 1) % 512} via NET/IB/{rng.randrange(8)}/GDRDMA"
            )
    return lines


def make_log(path: Path, size: int, signatures: list[Signature], colour_every: int) -> list[tuple[int, str]]:
    """Write the log; return (line number, planted line) for every planted line."""
    rng = random.Random(20261130)
    noise = noise_lines(rng, 8192, colour_every)
    examples = [(s, ex) for s in signatures if s.is_line for ex in s.record.examples]
    planted: list[tuple[int, str]] = []
    written, line_no, block = 0, 0, 0
    with path.open("w", encoding="utf-8", newline="\n") as out:
        while written < size:
            shift = (block * 613) % len(noise)
            lines = noise[shift:] + noise[:shift]
            if block % 3 == 0:
                _sig, example = examples[(block // 3) % len(examples)]
                at = rng.randrange(len(lines))
                lines = lines[:at] + [example] + lines[at:]
                planted.append((line_no + at + 1, example))
            text = "\n".join(lines) + "\n"
            out.write(text)
            written += len(text.encode("utf-8"))
            line_no += len(lines)
            block += 1
    return planted


def rust_pattern(sig: Signature) -> str:
    """The same pattern in ripgrep's syntax (it rejects escapes of characters that are not special)."""
    if sig.record.kind == "literal":
        pattern = re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", sig.record.pattern)
    else:
        pattern = re.sub(r"\\([ '\"/:<>=,;!@%&~`#-])", r"\1", sig.record.pattern)
    # With --no-unicode, ripgrep matches bytes: a non-ASCII character is its UTF-8 bytes.
    return "".join(c if ord(c) < 128 else "".join(f"\\x{b:02x}" for b in c.encode()) for c in pattern)


def _tree_pss_kib(pid: int) -> int:
    """Proportional memory (PSS: shared pages split between sharers) of a process tree, from /proc."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            rollup = Path(f"/proc/{current}/smaps_rollup").read_text()
            total += int(re.search(r"Pss:\s+(\d+)", rollup).group(1))  # type: ignore[union-attr]
            for task in Path(f"/proc/{current}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, AttributeError):
            continue
    return total


def timed(command: list[str], stdout: Path) -> tuple[float, int]:
    """Run a command once; return its wall time and exit code, without watching it."""
    start = time.perf_counter()
    with stdout.open("wb") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.DEVNULL, check=False).returncode
    return time.perf_counter() - start, code


def peak_memory(command: list[str]) -> int:
    """Run a command once more while sampling its process tree; return the peak PSS in KiB."""
    peak = 0
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None:
        peak = max(peak, _tree_pss_kib(proc.pid))
        time.sleep(0.02)
    return peak


def compare_candidates(log: Path, signatures: list[Signature], rg_rate: float) -> None:
    """Time each candidate matcher alone, in this process, on the first 64 MiB of the log."""
    from generator.diagnose.match import HyperscanMatcher, LiteralMatcher, Re2Matcher

    with log.open("rb") as f:
        data = f.read(64 << 20)
    data = data[: data.rfind(b"\n") + 1]
    candidates: list[tuple[str, object]] = []
    try:
        candidates.append(("hyperscan (all patterns, one pass)", HyperscanMatcher(signatures)))
    except ImportError:
        pass
    candidates.append(("python re, alternation of required literals", LiteralMatcher(signatures)))
    try:
        candidates.append(("google-re2 DFA, alternation of required texts", Re2Matcher(signatures)))
    except ImportError:
        print("  (google-re2 not installed: pip install google-re2 to include it)")
    full = re.compile("|".join(f"(?:{s.regex})" for s in signatures if s.is_line).encode())
    candidates.append(("python re, alternation of all patterns (8 MiB)", full))
    print(
        f"candidate matchers on {len(data) / (1 << 20):.0f} MiB, against ripgrep's {rg_rate:.0f} MB/s over the whole log:"
    )
    for name, matcher in candidates:
        sample = data[: 8 << 20] if "8 MiB" in name else data
        start = time.perf_counter()
        if hasattr(matcher, "candidates"):
            hits = len(list(matcher.candidates(sample)))  # type: ignore[attr-defined]
        else:
            hits = sum(1 for _ in matcher.finditer(sample))  # type: ignore[attr-defined]
        rate = len(sample) / (time.perf_counter() - start) / 1e6
        print(f"  {name:<48} {rate:8.1f} MB/s  {rate / rg_rate:5.2f} x ripgrep  ({hits} candidates)")


def browser_rate(log: Path, limit: int) -> tuple[float, int]:
    """Scan the first `limit` bytes of the log in headless Chromium's /diagnose/ worker; return (MB/s, bytes)."""
    import functools
    import http.server
    import threading

    from playwright.sync_api import sync_playwright

    from generator.build import build

    work = Path(tempfile.mkdtemp())
    site = work / "site"
    build(ROOT, site, search=False)
    sample = work / "sample.log"
    with log.open("rb") as src, sample.open("wb") as dst:
        data = src.read(limit)
        dst.write(data[: data.rfind(b"\n") + 1])

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    from tests.conftest import CHROMIUM, CHROMIUM_ARGS

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/diagnose/")
            start = time.perf_counter()
            page.set_input_files("#log-files", str(sample))
            page.wait_for_selector("#diagnosis-result:not([hidden])", timeout=600_000)
            seconds = time.perf_counter() - start
            browser.close()
    finally:
        server.shutdown()
        size = sample.stat().st_size
        shutil.rmtree(work)
    return size / seconds / 1e6, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--engine", default="auto", choices=["auto", "hyperscan", "re2", "literal"])
    parser.add_argument("--index", help="signatures.jsonl (default: the packaged index)")
    parser.add_argument("--keep", action="store_true", help="keep the generated log in benchmarks/out/")
    parser.add_argument("--candidates", action="store_true", help="also time each candidate matcher alone")
    parser.add_argument(
        "--browser-mib", type=int, default=0, help="also scan this many MiB of the log in Chromium's /diagnose/ page"
    )
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each tool, alternating; medians compared")
    parser.add_argument("--colour-every", type=int, default=200, help="one noise line in N carries ANSI colour codes")
    args = parser.parse_args()
    if shutil.which("rg") is None:
        sys.exit("ripgrep (rg) is needed: apt-get install ripgrep")

    index = Path(args.index) if args.index else None
    signatures = load_index(index)

    work = ROOT / "benchmarks" / "out" if args.keep else Path(tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    log = work / "multi-rank.log"
    started = time.perf_counter()
    planted = make_log(log, args.size_mib << 20, signatures, args.colour_every)
    size = log.stat().st_size
    print(
        f"generated {size / (1 << 20):,.0f} MiB (one line in {args.colour_every} coloured), "
        f"{len(planted):,} planted lines, {len(signatures)} signatures "
        f"in {time.perf_counter() - started:.1f}s"
    )

    patterns = work / "patterns.txt"
    patterns.write_text("".join(rust_pattern(s) + "\n" for s in signatures if s.is_line), encoding="utf-8")
    for _ in range(2):  # warm the page cache for both tools alike
        subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)

    rg_cmd = ["rg", "--no-unicode", "-n", "-f", str(patterns), str(log)]
    tw_cmd = [sys.executable, "-m", "generator", "diagnose", "--json", "--engine", args.engine, str(log)]
    if index:
        tw_cmd[-1:-1] = ["--index", str(index)]
    # Alternate the two tools so that neither gets a warmer machine; compare the medians.
    rg_times, tw_times = [], []
    for _ in range(args.runs):
        t, rg_code = timed(rg_cmd, work / "rg.out")
        rg_times.append(t)
        t, tw_code = timed(tw_cmd, work / "diagnose.json")
        tw_times.append(t)
    rg_time, tw_time = statistics.median(rg_times), statistics.median(tw_times)
    # Memory is sampled in separate runs: reading /proc while timing would slow the timed process.
    rg_rss, tw_rss = peak_memory(rg_cmd), peak_memory(tw_cmd)

    # Ground truth: which entries each planted line belongs to, by the index's own semantics.
    confirm = [(s, re.compile(s.regex, re.ASCII)) for s in signatures if s.is_line]
    truth: Counter[str] = Counter()
    for _line_no, text in planted:
        clean = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace('\\"', '"')
        hits = [s for s, rx in confirm if rx.search(clean)]
        # On a line two entries match, a signature that refines the other speaks alone.
        refined = {e for s in hits for e in s.record.refines}
        for entry in {s.entry for s in hits} - refined:
            truth[entry] += 1
    rg_lines = {int(line.split(b":", 1)[0]) for line in (work / "rg.out").read_bytes().splitlines()}
    report = json.loads((work / "diagnose.json").read_text())
    counts = {f["entry"]: f["count"] for f in report["findings"]}
    evidence = {e["line"] for f in report["findings"] for e in f["evidence"]}
    planted_lines = {n for n, _ in planted}
    rg_same = rg_lines == planted_lines
    tw_same = all(counts.get(e) == c for e, c in truth.items() if e in counts) and evidence <= planted_lines
    missing = sorted(set(truth) - set(counts))
    wrong = sorted(e for e, c in truth.items() if e in counts and counts[e] != c)

    print(
        f"ripgrep (baseline): {rg_time:6.2f}s  {size / rg_time / 1e6:7.1f} MB/s  peak PSS {rg_rss / 1024:6.1f} MiB  exit {rg_code}  "
        f"{len(rg_lines):,} lines"
    )
    print(
        f"trainwreck diagnose: {tw_time:6.2f}s  {size / tw_time / 1e6:7.1f} MB/s  peak PSS {tw_rss / 1024:6.1f} MiB  exit {tw_code}  "
        f"{sum(counts.values()):,} hits in {len(counts)} entries  engine {args.engine}"
    )
    print(
        f"runs: ripgrep {', '.join(f'{t:.2f}' for t in rg_times)}; diagnose {', '.join(f'{t:.2f}' for t in tw_times)}"
    )
    print(f"ratio diagnose/ripgrep (medians of {args.runs}): {tw_time / rg_time:.2f}   (target <= 1.0)")
    print(
        f"same lines: ripgrep={'yes' if rg_same else 'NO'}  diagnose={'yes' if tw_same and not missing else 'NO'}"
        + (f"  (entries without a finding: {', '.join(missing)})" if missing else "")
        + (f"  (other counts: {', '.join(f'{e} {counts[e]}/{truth[e]}' for e in wrong)})" if wrong else "")
    )
    if args.candidates:
        compare_candidates(log, signatures, size / rg_time / 1e6)
    if args.browser_mib:
        rate, scanned = browser_rate(log, args.browser_mib << 20)
        print(f"browser (Chromium worker): {scanned / 1e6:,.0f} MB at {rate:.1f} MB/s   (target >= 40)")
    if not args.keep:
        shutil.rmtree(work)
    if not (rg_same and tw_same and not missing):
        sys.exit(1)


if __name__ == "__main__":
    main()
