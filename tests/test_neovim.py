"""End to end in real editors: headless Neovim's built-in LSP client, and the VS Code extension's TypeScript."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SNIPPET = ROOT / "editors" / "neovim" / "trainwreck.lua"
VSCODE = ROOT / "editors" / "vscode"
MULTI_RANK = ROOT / "tests/corpus/real/pytorch-distributed/ms-swift-6301-rank11-oom-then-watchdog/excerpt.log"
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
NVIM = shutil.which("nvim")

# Opens each file, lets the README's snippet attach the server, waits for diagnostics, writes them as JSON.
DRIVER = r"""
local files = vim.fn.json_decode(os.getenv("TRAINWRECK_FILES"))
local cmd = vim.fn.json_decode(os.getenv("TRAINWRECK_CMD"))
dofile(os.getenv("TRAINWRECK_SNIPPET")).setup({ cmd = cmd })
local result = {}
for _, file in ipairs(files) do
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  vim.wait(90000, function() return #vim.diagnostic.get(buf) > 0 end, 50)
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    local lsp = (d.user_data or {}).lsp or {}
    table.insert(found, {
      lnum = d.lnum, col = d.col, severity = d.severity, message = d.message,
      code = d.code or lsp.code or vim.NIL, source = d.source or vim.NIL,
    })
  end
  table.sort(found, function(a, b) return a.lnum < b.lnum or (a.lnum == b.lnum and a.message < b.message) end)
  result[file] = found
end
local out = io.open(os.getenv("TRAINWRECK_OUT"), "w")
out:write(vim.fn.json_encode(result))
out:close()
vim.cmd("qall!")
"""


def run_neovim(files: list[Path], tmp_path: Path) -> dict[str, list[dict[str, Any]]]:
    """Open files in headless Neovim with the snippet and return the diagnostics it holds for each."""
    assert NVIM is not None
    driver = tmp_path / "driver.lua"
    driver.write_text(DRIVER, encoding="utf-8")
    out = tmp_path / "diagnostics.json"
    env = {
        **os.environ,
        "TRAINWRECK_FILES": json.dumps([str(f) for f in files]),
        "TRAINWRECK_CMD": json.dumps([sys.executable, "-m", "generator", "lsp"]),
        "TRAINWRECK_SNIPPET": str(SNIPPET),
        "TRAINWRECK_OUT": str(out),
        "PYTHONPATH": str(ROOT),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    subprocess.run(
        [NVIM, "--headless", "--clean", "-n", "-u", "NONE", "-c", f"luafile {driver}"],
        env=env,
        cwd=ROOT,
        timeout=240,
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    data: dict[str, list[dict[str, Any]]] = json.loads(out.read_text(encoding="utf-8"))
    return data


def test_neovim_shows_log_and_entry_diagnostics(tmp_path: Path) -> None:
    if NVIM is None:
        pytest.fail("nvim is not installed: run tools/install-test-deps.sh (Debian's neovim)")
    project = tmp_path / "project"
    shutil.copytree(CORPUS, project)
    shutil.copytree(ROOT / "tests/invalid/unknown-tag/entries", project / "entries", dirs_exist_ok=True)
    entry = project / "entries/demo/demo-hang.yaml"
    log = tmp_path / "logs" / MULTI_RANK.name
    log.parent.mkdir()
    shutil.copy(MULTI_RANK, log)

    found = run_neovim([log, entry], tmp_path)

    # vim.diagnostic.severity: 1 error, 2 warning, 3 information, 4 hint.
    on_log = {(d["lnum"], d["code"], d["severity"]) for d in found[str(log)]}
    assert on_log == {
        (4, "cuda-oom-fragmentation", 1),
        (5, "torchrun-child-failed", 2),
        (6, "pg-flight-recorder-dump", 3),
        (8, "pg-nccl-watchdog-collective-timeout", 3),
        (9, "pg-nccl-watchdog-collective-timeout", 3),
        (10, "pg-flight-recorder-dump", 3),
    }
    initiating = next(d for d in found[str(log)] if d["severity"] == 1)
    assert "(initiating failure). Fix: " in initiating["message"]
    assert [(d["lnum"], d["col"], d["severity"], d["message"]) for d in found[str(entry)]] == [
        (16, 7, 1, "tags[0]: unknown tag 'hangs' (hint: did you mean 'hang' or 'nan'?)")
    ]


def _npx(tool: str, *args: str) -> None:
    """Run one of the extension's pinned npm tools in editors/vscode and require it to succeed."""
    if not (VSCODE / "node_modules" / ".bin" / tool).exists():
        pytest.fail(f"editors/vscode/node_modules has no {tool}: run tools/install-test-deps.sh")
    result = subprocess.run(
        ["npx", "--no-install", tool, *args],
        cwd=VSCODE,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_vscode_extension_typechecks() -> None:
    _npx("tsc", "--noEmit", "-p", ".")


def test_vscode_extension_packages_to_a_vsix(tmp_path: Path) -> None:
    vsix = tmp_path / "trainwreck.vsix"
    _npx("vsce", "package", "--skip-license", "--allow-missing-repository", "--out", str(vsix))
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
    assert {"extension/out/extension.js", "extension/schemas/entry.schema.json"} <= names
    assert "extension/node_modules/vscode-languageclient/package.json" in names
    assert not any(name.startswith("extension/node_modules/typescript/") for name in names)
    commands = {c["command"]: c["title"] for c in manifest["contributes"]["commands"]}
    assert commands == {
        "trainwreck.diagnoseSelection": "Trainwreck: Diagnose selection",
        "trainwreck.diagnoseTerminal": "Trainwreck: Diagnose terminal output",
    }
    for validation in manifest["contributes"]["yamlValidation"]:
        assert "extension/" + validation["url"].removeprefix("./") in names
    schema = json.loads(archive_read(vsix, "extension/schemas/entry.schema.json"))
    assert schema == json.loads((ROOT / "schema/entry.schema.json").read_text(encoding="utf-8"))


def archive_read(vsix: Path, name: str) -> bytes:
    """One file of a packaged extension."""
    with zipfile.ZipFile(vsix) as archive:
        return archive.read(name)
