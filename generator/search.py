"""Index the written pages with Pagefind, the last step of a build."""

from __future__ import annotations

import base64
import ctypes
import gzip
import hashlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from generator.errors import BuildError
from generator.write import exchange

# Error text is full of identifiers like grad_norm, NCCL_DEBUG and ProcessGroupNCCL.cpp:1234.
INCLUDE_CHARACTERS = "_.:"
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """In the Pagefind child: ask the kernel to kill it when the build dies, so no Pagefind outlives a kill -9."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def index_site(out_dir: Path, pages: Iterable[tuple[str, bytes]]) -> None:
    """Index the rendered pages with Pagefind into out_dir/pagefind/; raise BuildError if it fails.

    The pages are handed over as they are rendered, in sorted order, through Pagefind's service mode
    (`pagefind --service`: base64 JSON messages, each followed by a comma), rather than letting
    Pagefind walk the folder: a folder walk follows the file system's order, so the same site built
    on tmpfs and on ext4 got different index files, and the pages need not be read back.
    """
    try:
        from pagefind.service import get_executable

        binary = get_executable()
        if binary is None:
            raise OSError("the pagefind binary is not installed (pip install pagefind[bin])")
        service = subprocess.Popen(
            [str(binary), "--service"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=out_dir,
            preexec_fn=_die_with_parent,
        )
    except (OSError, ImportError) as exc:
        raise BuildError(f"could not run Pagefind: {exc}") from exc
    try:
        _PagefindSession(service).index(out_dir, pages)
    finally:
        if service.stdin:
            service.stdin.close()
        try:
            service.wait(timeout=60)
        except subprocess.TimeoutExpired:
            service.kill()
    canonicalise_index(out_dir / "pagefind")


def reindex(site: Path) -> None:
    """Index the pages a site folder holds now, and swap the new index in for its old one."""
    skip = ("static/", "pagefind/", "api/", "diagnose/examples/")
    pages = (
        (relative, path.read_bytes())
        for path in sorted(site.rglob("*.html"))
        if not (relative := path.relative_to(site).as_posix()).startswith(skip)
    )
    fresh = Path(tempfile.mkdtemp(prefix=".pagefind-", dir=site))
    try:
        index_site(fresh, pages)
        # One atomic exchange where the system has it, so a search never finds no index.
        if not ((site / "pagefind").exists() and exchange(fresh / "pagefind", site / "pagefind")):
            shutil.rmtree(site / "pagefind", ignore_errors=True)
            os.replace(fresh / "pagefind", site / "pagefind")
    except OSError as exc:
        raise BuildError(f"could not replace the search index in {site}: {exc}") from exc
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


class _PagefindSession:
    """One conversation with `pagefind --service`: requests written ahead, answers read by a thread."""

    def __init__(self, service: subprocess.Popen[bytes]) -> None:
        assert service.stdin is not None and service.stdout is not None
        self.stdin = service.stdin
        self.answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.sent = 0
        # A thread drains the answers so that writing every request first can never fill both pipes.
        threading.Thread(target=self._read, args=(service.stdout,), daemon=True).start()

    def _read(self, stdout: IO[bytes]) -> None:
        pending: list[bytes] = []  # the pieces of an unfinished message: the bundle's runs to many megabytes
        while chunk := stdout.read1(1 << 20):  # type: ignore[attr-defined]
            *ends, rest = chunk.split(b",")  # base64 never holds a comma
            for end in ends:
                message = b"".join([*pending, end])
                pending = []
                try:
                    self.answers.put(json.loads(base64.b64decode(message)))
                except ValueError:
                    self.answers.put({"payload": {"type": "Error", "message": message.decode("utf-8", "replace")}})
            if rest:
                pending.append(rest)
        self.answers.put(None)

    def _send(self, payload: dict[str, Any]) -> None:
        self.sent += 1
        message = {"message_id": self.sent, "payload": payload}
        self.stdin.write(base64.b64encode(json.dumps(message).encode("utf-8")) + b",")

    def _answer(self) -> dict[str, Any]:
        try:
            answer = self.answers.get(timeout=600)
        except queue.Empty as exc:
            raise BuildError("Pagefind did not answer within 10 minutes") from exc
        if answer is None:
            raise BuildError("Pagefind stopped before it had indexed the site")
        payload: dict[str, Any] = answer.get("payload") or {}
        if payload.get("type") == "Error":
            raise BuildError(f"Pagefind failed to index the site: {payload.get('message')}")
        return payload

    def index(self, out_dir: Path, pages: Iterable[tuple[str, bytes]]) -> None:
        """Create an index, add every page in the order given, and write the bundle it returns."""
        added = 0
        try:
            self._send({"type": "NewIndex", "config": {"include_characters": INCLUDE_CHARACTERS}})
            self.stdin.flush()
            index_id = self._answer()["index_id"]
            for path, html in pages:
                if not path.endswith(".html"):
                    continue
                contents = html.decode("utf-8")
                self._send({"type": "AddFile", "index_id": index_id, "file_path": path, "file_contents": contents})
                added += 1
            # The bundle comes back in the answer and is written here: Pagefind's own WriteFiles can
            # answer before its last file is flushed, and the service exits when its input closes.
            self._send({"type": "GetFiles", "index_id": index_id})
            self.stdin.flush()
        except OSError as exc:
            raise BuildError(f"Pagefind stopped while indexing the site: {exc}") from exc
        for _ in range(added):
            self._answer()
        bundle = out_dir / "pagefind"
        for item in self._answer()["files"]:
            target = bundle / item["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(base64.b64decode(item["content"]))


# Pagefind writes filter values and the filter list in hash-map order, which changes from run to
# run. The functions below rewrite those files in sorted order so that identical input gives a
# byte-identical site. The files are gzip'd CBOR behind a "pagefind_dcd" signature.
_SIGNATURE = b"pagefind_dcd"


def _cbor_head(major: int, value: int) -> bytes:
    if value < 24:
        return bytes([major << 5 | value])
    for extra, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if value < 1 << (8 * size):
            return bytes([major << 5 | extra]) + value.to_bytes(size, "big")
    raise ValueError("integer too large for CBOR")


def _cbor_encode(item: object) -> bytes:
    if isinstance(item, bool) or item is None:
        raise ValueError("unexpected CBOR simple value")
    if isinstance(item, int):
        return _cbor_head(0, item) if item >= 0 else _cbor_head(1, -1 - item)
    if isinstance(item, bytes):
        return _cbor_head(2, len(item)) + item
    if isinstance(item, str):
        data = item.encode("utf-8")
        return _cbor_head(3, len(data)) + data
    if isinstance(item, list):
        return _cbor_head(4, len(item)) + b"".join(_cbor_encode(x) for x in item)
    raise ValueError(f"cannot encode {type(item).__name__}")


def _cbor_decode(data: bytes, pos: int = 0) -> tuple[object, int]:
    major, info = data[pos] >> 5, data[pos] & 31
    pos += 1
    if info < 24:
        value = info
    elif info <= 27:
        size = 1 << (info - 24)
        value = int.from_bytes(data[pos : pos + size], "big")
        pos += size
    else:
        raise ValueError("indefinite-length CBOR is not expected in a Pagefind file")
    if major == 0:
        return value, pos
    if major == 1:
        return -1 - value, pos
    if major == 2:
        return data[pos : pos + value], pos + value
    if major == 3:
        return data[pos : pos + value].decode("utf-8"), pos + value
    if major == 4:
        items = []
        for _ in range(value):
            item, pos = _cbor_decode(data, pos)
            items.append(item)
        return items, pos
    raise ValueError(f"unexpected CBOR major type {major}")


def _read(path: Path) -> object:
    raw = gzip.decompress(path.read_bytes())
    if not raw.startswith(_SIGNATURE):
        raise BuildError(f"unexpected Pagefind file format: {path.name}")
    item, _ = _cbor_decode(raw, len(_SIGNATURE))
    return item


def _write(folder: Path, prefix: str, suffix: str, item: object, digits: int) -> str:
    raw = _SIGNATURE + _cbor_encode(item)
    name = f"{prefix}{hashlib.sha256(raw).hexdigest()[:digits]}"
    (folder / f"{name}{suffix}").write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
    return name


def canonicalise_index(bundle: Path) -> None:
    """Rewrite Pagefind's filter and meta files in sorted order, under content-derived names."""
    entry_path = bundle / "pagefind-entry.json"
    entry = json.loads(entry_path.read_text(encoding="utf-8"))
    for language, info in sorted(entry["languages"].items()):
        meta_path = bundle / f"pagefind.{info['hash']}.pf_meta"
        meta = _read(meta_path)
        assert isinstance(meta, list)
        filters = meta[3]
        assert isinstance(filters, list)
        renamed = []
        for name, old_hash in filters:
            old = bundle / "filter" / f"{old_hash}.pf_filter"
            data = _read(old)
            assert isinstance(data, list)
            data[1] = sorted(data[1], key=lambda value: value[0])
            old.unlink()
            renamed.append([name, _write(bundle / "filter", f"{language}_", ".pf_filter", data, 7)])
        meta[3] = sorted(renamed)
        meta_path.unlink()
        info["hash"] = _write(bundle, f"pagefind.{language}_", ".pf_meta", meta, 10).removeprefix("pagefind.")
    entry_path.write_text(json.dumps(entry, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
