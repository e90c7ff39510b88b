"""Write a site into a fresh folder and swap it into place, so a failed build changes nothing."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from generator.errors import BuildError

MARKER = ".trainwreck-site"
RENAME_EXCHANGE = 2  # linux/fs.h: swap two paths in one step
AT_FDCWD = -100


def write_files(root: Path, files: dict[str, str | bytes], *, atomic: bool = False) -> None:
    """Write path-to-content pairs under root, creating folders as needed."""
    for relative, content in sorted(files.items()):
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        _write(target, data, atomic)


def write_pages(root: Path, pages: Iterable[tuple[str, bytes | Path]], *, atomic: bool = False) -> None:
    """Write each page under root as it comes (HTML, or a file to link): no build holds the site in memory."""
    made: set[Path] = set()
    for relative, page in pages:
        target = root / relative
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        if isinstance(page, Path):
            try:
                _link(page, target, atomic)
            except FileNotFoundError as exc:
                if exc.filename != os.fspath(page):
                    raise
                # Pruned by another build into the same folder since this one found it.
                raise BuildError(f"the page cache lost {page.name} during the build; build again") from exc
        else:
            _write(target, page, atomic)


def replace_file(target: Path, data: bytes | Callable[[BinaryIO], object]) -> None:
    """Write target (data, or what data writes to a file) whole or not at all: readers see the old file or the new."""
    partial = partial_file(target)
    try:
        with partial.open("wb") as f:
            if isinstance(data, bytes):
                f.write(data)
            else:
                data(f)
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def partial_file(target: Path) -> Path:
    """Where target is written before it replaces the file there: beside it, named for this process and thread."""
    # Named for the thread too: serve writes from two threads.
    return target.with_name(f".{target.name}.{os.getpid()}-{threading.get_ident()}.part")


def _write(target: Path, data: bytes, atomic: bool) -> None:
    if atomic:
        replace_file(target, data)
    else:
        target.write_bytes(data)


def _link(source: Path, target: Path, atomic: bool) -> None:
    if not atomic:
        link_file(source, target)
        return
    partial = partial_file(target)
    partial.unlink(missing_ok=True)
    link_file(source, partial)
    os.replace(partial, target)


def link_tree(source: Path, target: Path, skip: Iterable[str] = ()) -> None:
    """Make target hold source's files but those skip names at its top: hard-linked where it can be, else copied."""
    skip = set(skip)
    if not target.exists():
        target.mkdir(parents=True)  # as any folder of the site is made, whatever source's mode
        if _link_all(source, target):
            for name in skip:
                (target / name).unlink(missing_ok=True)
            return
    target.mkdir(parents=True, exist_ok=True)
    # Paths as strings and one scandir per folder: a search bundle is thousands of small files.
    top = os.fspath(source)
    folders = [(top, os.fspath(target))]
    while folders:
        here, there = folders.pop()
        with os.scandir(here) as found:
            for item in found:
                if item.is_dir(follow_symlinks=False):
                    os.makedirs(os.path.join(there, item.name), exist_ok=True)
                    folders.append((item.path, os.path.join(there, item.name)))
                elif here != top or item.name not in skip:
                    link_file(item.path, os.path.join(there, item.name))


def _link_all(source: Path, target: Path) -> bool:
    """Hard-link what source holds into the empty folder target with `cp -Rl`; False (target left empty) if it cannot.

    A search bundle is thousands of files: one system call each, but not a Python loop iteration each, and
    outside this process's interpreter lock.
    """
    if not sys.platform.startswith("linux"):
        return False  # GNU and BusyBox cp link with -l; others may not
    try:
        done = subprocess.run(["cp", "-Rl", "--", f"{source}/.", os.fspath(target)], capture_output=True)
    except OSError:
        return False
    if done.returncode != 0:
        # Another file system, say: linked file by file, or copied, from an empty folder again.
        for item in target.iterdir():
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item)
            else:
                item.unlink()
        return False
    return True


def link_file(source: str | Path, target: str | Path) -> None:
    """Hard-link source at target, or copy it where links cannot be made; files are never changed in place."""
    try:
        os.link(source, target)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        shutil.copyfile(source, target)


def is_site(out_dir: Path) -> bool:
    """Whether out_dir holds a site a build wrote."""
    return (out_dir / MARKER).is_file()


def remove_pages_except(out_dir: Path, keep: set[str]) -> None:
    """Remove the pages of out_dir that are not in keep: those of deleted entries, tags and hubs."""
    for page in out_dir.rglob("*.html"):
        relative = page.relative_to(out_dir).as_posix()
        if relative not in keep and not relative.startswith(("static/", "pagefind/", "api/", "diagnose/examples/")):
            page.unlink()


def remove_files(root: Path, files: Iterable[str]) -> None:
    """Remove the files named under root (those of deleted entries, tags and hubs), and folders left empty."""
    for relative in sorted(files):
        target = root / relative
        target.unlink(missing_ok=True)
        for folder in target.parents:
            if folder == root or not folder.is_relative_to(root):
                break
            try:
                folder.rmdir()
            except OSError:
                break  # not empty


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
def _locked(out_dir: Path) -> Iterator[None]:
    """Hold a lock on the output's parent folder: two builds into one place take turns instead of racing."""
    # The folder itself is locked, not a lock file beside it, so nothing is left behind.
    fd = os.open(out_dir.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _remove_leftovers(out_dir: Path) -> None:
    """Remove staging and old folders a killed build left beside out_dir; only a build holding the lock calls this.

    By a process of their own: a leftover can be a whole site, or the old site whose removal the last
    build began a moment ago, and the build need not wait for either.
    """
    for pattern in (f".{out_dir.name}.tmp-*", f".{out_dir.name}.old-*"):
        for leftover in out_dir.parent.glob(pattern):
            if leftover.is_dir() and not leftover.is_symlink():
                _remove_later(leftover)


@contextmanager
def staging(out_dir: Path, pages: int = 0, spare: Path | None = None, reuse: bool = False) -> Iterator[Path]:
    """Yield a folder beside out_dir to write the site into; on success swap it in, on failure drop it.

    Given spare (a folder on out_dir's file system), the site replaced is kept there for the next build,
    and with reuse the folder kept there is the one yielded, for the build to bring up to date rather than
    write whole. Without spare, the previous site is removed, by a process of its own after the new one is
    in place when it holds pages or more.
    """
    out_dir = out_dir.resolve()
    _check_replaceable(out_dir)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        with _locked(out_dir):
            _remove_leftovers(out_dir)
            reused = reuse and spare is not None and spare.is_dir()
            if spare is not None and not reused and spare.exists():
                _discard([spare], out_dir, pages)  # what no record describes cannot be brought up to date
            # Same parent, so the final rename is atomic and never crosses file systems.
            stage = (
                spare
                if reused and spare
                else Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
            )
            try:
                yield stage
                (stage / MARKER).write_text("This folder is written by `trainwreck build`; it replaces it whole.\n")
                os.chmod(stage, 0o755)
                old = _swap(stage, out_dir)
            except BaseException:
                if not reused:
                    shutil.rmtree(stage, ignore_errors=True)
                raise
            if old is not None and spare is not None and _keep(old, spare):
                return
            if old is not None:
                (_remove_later if pages >= REMOVE_LATER else _remove_now)(old)
    except OSError as exc:
        # A read-only or full disk: say so; the previous site is untouched.
        where = exc.filename or out_dir
        raise BuildError(f"cannot write the site to {out_dir}: {exc.strerror or exc} ({where})") from exc


def _keep(old: Path, spare: Path) -> bool:
    """Move the site just replaced to spare; False when it cannot be moved there."""
    if old == spare:
        return True
    try:
        spare.parent.mkdir(parents=True, exist_ok=True)
        os.rename(old, spare)
    except OSError:
        return False
    return True


def _discard(folders: Iterable[Path], out_dir: Path, pages: int) -> None:
    """Remove folders the build no longer wants: moved beside out_dir as a leftover at once, then removed."""
    remove_folder(_set_aside(folders, out_dir), pages)


def _set_aside(folders: Iterable[Path], out_dir: Path) -> Path | None:
    """Move folders beside out_dir, into one leftover folder, which is returned (None when there were none)."""
    folders = [folder for folder in folders if folder.exists()]
    if not folders:
        return None
    old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    for k, folder in enumerate(folders):
        try:
            os.replace(folder, old / str(k))
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
    return old


def remove_folder(folder: Path | None, pages: int) -> None:
    """Remove a leftover folder of a site of about pages pages: by a process of its own when it is large.

    A leftover a killed build did not remove, the next build into the same place removes.
    """
    if folder is not None:
        (_remove_later if pages >= REMOVE_LATER else _remove_now)(folder)


def clear_folders(stage: Path, names: Iterable[str], out_dir: Path) -> Path | None:
    """Take the folders named out of a kept site (they are written whole again); return where they were set aside.

    They are for the caller to remove (remove_folder) once the build no longer needs the disk to itself.
    """
    return _set_aside([stage / name for name in names], out_dir.resolve())


# A folder's inode, modification and change times: while they are as recorded, nothing was added to the
# folder, removed from it or renamed in it.
Stamp = tuple[int, int, int]
# A folder changed this close to when its stamp is taken could change again within the same tick of the file
# system's clock (a second on some) and keep its stamp: it is recorded as unknown, to be looked at.
RACY_NS = 2_000_000_000


def folder_stamps(
    root: Path,
    paths: Iterable[str],
    skip: Iterable[str] = (),
    known: Mapping[str, Stamp] | None = None,
    written: Iterable[str] = (),
) -> dict[str, Stamp | None]:
    """The stamp of every folder under root that holds one of paths (and their parents), but those skip names.

    A folder changed in the last RACY_NS by the file system's clock is given None: unknown. known gives
    the stamps of folders found unchanged since they were taken: not taken again, but for the folders
    that hold a path written since (or were made for one), whose stamps changed.
    """
    known = dict(known or {})
    for folder in _holding(written):
        known.pop(folder, None)
    folders = _holding(paths)
    skipped = tuple(f"{name}/" for name in skip)
    now = fs_clock(root)
    stamps: dict[str, Stamp | None] = {}
    for folder in sorted(folders):
        if folder.startswith(skipped):
            continue
        if (stamp := known.get(folder)) is not None:
            stamps[folder] = stamp
            continue
        try:
            found = os.stat(os.path.join(root, folder))
        except OSError:
            stamps[folder] = None
            continue
        settled = found.st_ctime_ns < now - RACY_NS
        stamps[folder] = (found.st_ino, found.st_mtime_ns, found.st_ctime_ns) if settled else None
    return stamps


def _holding(paths: Iterable[str]) -> set[str]:
    """The folders that hold one of paths, and their parents, each as "a/b/"."""
    folders: set[str] = set()
    for path in paths:
        cut = path.rfind("/")
        while cut > 0 and path[: cut + 1] not in folders:  # a folder's parents were added with it
            folders.add(path[: cut + 1])
            cut = path.rfind("/", 0, cut)
    return folders


def fs_clock(folder: Path) -> int:
    """The time now by the clock of the file system that holds folder (which may not be this machine's), in ns."""
    folder.mkdir(parents=True, exist_ok=True)
    handle, probe = tempfile.mkstemp(prefix=".clock-", dir=folder)
    try:
        return os.fstat(handle).st_ctime_ns
    finally:
        os.close(handle)
        os.unlink(probe)


def clock_passed(folder: Path, ns: int, limit: float = 0.2) -> bool:
    """Wait until the clock of the file system that holds folder is past ns; False if it is not within limit seconds."""
    deadline = time.monotonic() + limit
    while fs_clock(folder) <= ns:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def _stamp(path: str) -> Stamp | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns, found.st_ctime_ns


def sweep_folder(
    stage: Path,
    keep: dict[str, int | None],
    skip: Iterable[str] = (),
    stamps: dict[str, Stamp | None] | None = None,
    listed: Iterable[str] = (),
    settled: int | None = None,
    verified: set[str] | None = None,
) -> set[str]:
    """Remove every file of a kept site but those keep names, and folders left empty; the folders skip names stay.

    keep maps a path to the inode its file must have (a page is a link to its cache file), or None for
    any; given settled, such a file must also be unchanged since then by the file system's clock. Return
    the paths keep names that the folder does not hold as named: a page replaced or written over by
    hand, or removed, must be written again. What a build writes into a folder it reuses must leave it
    as a fresh folder would be: a file no record names (an entry since deleted, one written by hand)
    must not survive into the next site.

    Given the stamps of its folders and the files listed in it when they were taken, a folder whose
    stamp is unchanged is known to hold what was listed, and is not read: at 10,000 pages, reading them
    all cost ten times more than taking their stamps. Such a folder, left as it was, is added to verified.
    """
    keep = {**keep, MARKER: None}
    skipped = {f"{name}/" for name in skip}
    stamps = stamps or {}
    files_in: dict[str, list[str]] = {}
    folders_in: dict[str, list[str]] = {}
    for path in listed:
        cut = path.rfind("/") + 1
        files_in.setdefault(path[:cut], []).append(path[cut:])
    for folder in stamps:
        cut = folder.rfind("/", 0, -1) + 1
        folders_in.setdefault(folder[:cut], []).append(folder[cut:-1])
    held: set[str] = set()
    root = os.fspath(stage)

    def sweep(prefix: str) -> bool:
        """Remove what keep does not name under the folder prefix; return whether it is left empty."""
        path = f"{root}/{prefix}"
        known = stamps.get(prefix)
        items: list[tuple[str, bool, os.DirEntry[str] | None]]
        same = known is not None and _stamp(path) == known
        empty = True
        untouched = same
        if same:
            # As listed: the files checked here, in one loop (a page's folder holds one file, and there are
            # ten thousand), the folders below.
            for name in files_in.get(prefix, ()):
                relative = prefix + name
                if relative in keep and _holds(path + name, None, keep[relative], settled):
                    held.add(relative)
                    empty = False
                else:
                    with suppress(FileNotFoundError):
                        os.unlink(path + name)
                    untouched = False
            items = [(name, True, None) for name in folders_in.get(prefix, ())]
        else:
            with os.scandir(path) as found:
                items = [(item.name, item.is_dir(follow_symlinks=False), item) for item in found]
        for name, is_folder, item in items:
            relative = prefix + name
            if is_folder:
                if relative + "/" in skipped:
                    empty = False
                elif sweep(relative + "/"):
                    os.rmdir(os.path.join(root, relative))
                    untouched = False
                else:
                    empty = False
            elif relative in keep and _holds(os.path.join(root, relative), item, keep[relative], settled):
                held.add(relative)
                empty = False
            else:
                with suppress(FileNotFoundError):
                    os.unlink(os.path.join(root, relative))
                untouched = False
        if untouched and verified is not None:
            verified.add(prefix)
        return empty

    sweep("")
    return set(keep) - held


def _holds(path: str, item: os.DirEntry[str] | None, inode: int | None, settled: int | None) -> bool:
    """Whether the file at path is the one wanted: any, or the file of that inode, unchanged since settled if given."""
    if inode is None:
        return True
    try:
        found = item.stat(follow_symlinks=False) if item is not None else os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    # A page is a link to its cache file: one written over in place keeps the inode and changes the time.
    return found.st_ino == inode and (settled is None or found.st_mtime_ns < settled)


def exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically with renameat2; False where the system or file system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


# A site of this many pages takes seconds to remove (a folder per page); removing it does not hold up the build.
REMOVE_LATER = 2000


def _remove_now(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _remove_later(path: Path) -> None:
    """Remove a folder in a process of its own that outlives this one; what it leaves, the next build removes."""
    try:
        subprocess.Popen(
            ["rm", "-rf", "--", os.fspath(path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        _remove_now(path)


def _swap(stage: Path, out_dir: Path, rename: Callable[[Path, Path], object] = os.replace) -> Path | None:
    """Put stage in out_dir's place; return where the site it replaced now is, or None when there was none."""
    if not out_dir.exists():
        rename(stage, out_dir)
        return None
    if rename is os.replace and exchange(stage, out_dir):
        # One step: out_dir is the new site at every instant after it, and stage holds the old one.
        return stage
    old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    old.rmdir()
    rename(out_dir, old)
    try:
        rename(stage, out_dir)
    except OSError:
        rename(old, out_dir)
        raise
    return old
