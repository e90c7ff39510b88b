"""Hostile logs in the browser engine: an endless line does not take the page's memory or its findings."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.vectors import project

pytestmark = pytest.mark.browser

FIRST = "[rank3]:[E1130 01:02:03.000000 ProcessGroupNCCL.cpp:1484] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.\n"  # noqa: E501
LAST = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.14 GiB of which 3.75 MiB is free.\n"  # noqa: E501
ENDLESS = 300 << 20  # the size that took the page to 2.9 GB and no lines before lines were bounded


def _renderer_peak_mb(stop: threading.Event, peak: list[int]) -> None:
    # The worker runs in a renderer process; sample every Chromium renderer's resident memory.
    while not stop.wait(0.2):
        out = subprocess.run(["ps", "-C", "chromium", "-o", "rss=,args="], capture_output=True, text=True).stdout
        sizes = [int(line.split(None, 1)[0]) for line in out.splitlines() if "--type=renderer" in line]
        if sizes:
            peak[0] = max(peak[0], max(sizes) // 1024)


def test_a_300_mb_line_without_a_newline_is_cut_not_held(browser, real_url: str, tmp_path: Path) -> None:
    log = tmp_path / "endless.log"
    with log.open("w") as out:
        out.write(FIRST)
        block = "x" * (1 << 20)
        for _ in range(ENDLESS >> 20):
            out.write(block)
        out.write("\n" + LAST)
    cli = subprocess.run(
        [sys.executable, "-m", "generator", "diagnose", "--json", str(log)], capture_output=True, timeout=300
    )
    expected = json.loads(cli.stdout)
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(real_url + "diagnose/")
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=_renderer_peak_mb, args=(stop, peak), daemon=True)
    sampler.start()
    page.set_input_files("#log-files", str(log))
    expect(page.locator("#diagnosis-result")).to_be_visible(timeout=240_000)
    stop.set()
    sampler.join()
    data = json.loads(page.locator("#diagnosis-json").text_content())
    assert data["report"]["lines"] == expected["lines"] == 3
    assert {f["entry"] for f in data["report"]["findings"]} >= {"pg-nccl-watchdog-collective-timeout"}
    assert project(data["report"], data["problems"]) == project(expected, [])
    assert peak[0] < 1024, f"the page held {peak[0]} MB for a {ENDLESS >> 20} MB line"
    ctx.close()
