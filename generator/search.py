"""Index the written pages with Pagefind, the last step of a build."""

from __future__ import annotations

import ctypes
import gzip
import hashlib
import json
import signal
import subprocess
import sys
from pathlib import Path

from generator.errors import BuildError

# Error text is full of identifiers like grad_norm, NCCL_DEBUG and ProcessGroupNCCL.cpp:1234.
INCLUDE_CHARACTERS = "_.:"
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """In the Pagefind child: ask the kernel to kill it when the build dies, so no Pagefind outlives a kill -9."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def index_site(out_dir: Path) -> None:
    """Run Pagefind over out_dir, writing out_dir/pagefind/; raise BuildError if it fails."""
    command = [
        sys.executable,
        "-m",
        "pagefind",
        "--site",
        str(out_dir),
        "--output-subdir",
        "pagefind",
        "--include-characters",
        INCLUDE_CHARACTERS,
        "--silent",
    ]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=600, check=False, preexec_fn=_die_with_parent
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"could not run Pagefind: {exc}") from exc
    if result.returncode != 0 or not (out_dir / "pagefind" / "pagefind.js").is_file():
        detail = (result.stderr or result.stdout).strip().splitlines()[-5:]
        raise BuildError("Pagefind failed to index the site:\n  " + "\n  ".join(detail))
    canonicalise_index(out_dir / "pagefind")


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
