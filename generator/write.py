"""Write a site into a fresh folder and swap it into place, so a failed build changes nothing."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from generator.errors import BuildError

MARKER = ".trainwreck-site"


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    """Write path-to-content pairs under root, creating folders as needed."""
    for relative, content in sorted(files.items()):
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        target.write_bytes(data)


def copy_static(source: Path, root: Path) -> None:
    """Copy the static assets into root/static/."""
    shutil.copytree(source, root / "static", dirs_exist_ok=True)


def _check_replaceable(out_dir: Path) -> None:
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise BuildError(f"{out_dir} exists and is not a folder; choose another --out")
    if any(out_dir.iterdir()) and not (out_dir / MARKER).is_file():
        raise BuildError(
            f"refusing to replace {out_dir}: it was not written by trainwreck (no {MARKER} file in it); "
            "empty or remove it yourself, or choose another --out"
        )


@contextmanager
def staging(out_dir: Path) -> Iterator[Path]:
    """Yield a temporary folder beside out_dir; on success swap it in, on failure remove it."""
    out_dir = out_dir.resolve()
    _check_replaceable(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    # Same parent, so the final rename is atomic and never crosses file systems.
    stage = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        yield stage
        (stage / MARKER).write_text("This folder is written by `trainwreck build`; it replaces it whole.\n")
        os.chmod(stage, 0o755)
        _swap(stage, out_dir)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def _swap(stage: Path, out_dir: Path, rename: Callable[[Path, Path], object] = os.replace) -> None:
    if not out_dir.exists():
        rename(stage, out_dir)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    old.rmdir()
    rename(out_dir, old)
    try:
        rename(stage, out_dir)
    except OSError:
        rename(old, out_dir)
        raise
    shutil.rmtree(old, ignore_errors=True)
