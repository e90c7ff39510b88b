"""Where each signature's text comes from: resolve `source` fields and keep the evidence in sources.lock.json."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import sysconfig
import tarfile
import urllib.request
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.errors import TrainwreckError
from generator.patterns import required_literal
from generator.schema import Entry

LOCK = "sources.lock.json"
# Evidence a maintainer recorded from a source this tool cannot read (the stored GitHub index, a page).
BY_HAND = ("github-index", "page")
PYPI_SIMPLE = "https://pypi.org/simple/{name}/"
# Members larger than this are checked for presence only: reading a 1 GB shared library over HTTP
# to find one string costs more than the check is worth.
MAX_SEARCHED = 16 * 1024 * 1024

# Repositories whose released package on PyPI holds the same files under another root, so a
# claim about the repository can be checked in the wheel when no clone is at hand.
RELEASED_AS: dict[str, tuple[str, str, str]] = {
    # repository: (package, folder in the repository, folder in the wheel)
    "pytorch/pytorch": ("torch", "torch/", "torch/"),
    "vllm-project/vllm": ("vllm", "vllm/", "vllm/"),
    "huggingface/transformers": ("transformers", "src/transformers/", "transformers/"),
}


class ProvenanceError(TrainwreckError):
    """A source could not be looked up (network, archive or mirror trouble)."""


@dataclass(frozen=True)
class Claim:
    """One `source` field and the texts the signatures citing it say it prints."""

    source: str
    texts: tuple[tuple[str, str], ...]  # (entry id, fixed text the file must contain)


@dataclass
class Evidence:
    """What a lookup found for one source."""

    exists: bool
    how: str  # "mirror", "wheel", "stdlib", "github-index" or "page"
    at: str  # the commit, wheel file name or URL that was read
    found: list[str] = field(default_factory=list)  # texts in the file verbatim
    words: list[str] = field(default_factory=list)  # texts whose words are all in the file, not in order
    missing: list[str] = field(default_factory=list)  # texts looked for and not seen
    note: str = ""

    def record(self) -> dict[str, Any]:
        """The lock file's form."""
        out: dict[str, Any] = {"exists": self.exists, "how": self.how, "at": self.at}
        out["found"] = sorted(set(self.found))
        if self.words:
            out["words"] = sorted(set(self.words))
        if self.missing:
            out["missing"] = sorted(set(self.missing))
        if self.note:
            out["note"] = self.note
        return out


def literal_core(pattern: str, kind: str) -> str:
    """The longest run of fixed text in a signature: what its source file must contain verbatim."""
    if kind == "regex":
        return required_literal(kind, pattern).strip()
    # A number or a quoted name in a literal was interpolated when it was printed.
    runs = re.split(r"\d+(?:\.\d+)*|'[^']*'|\"[^\"]*\"", pattern)
    return max((r.strip() for r in runs), key=len, default="")


def claims(entries: Iterable[Entry]) -> list[Claim]:
    """Every source the catalog cites, with the texts its signatures expect there."""
    texts: dict[str, list[tuple[str, str]]] = {}
    for entry in entries:
        for sig in entry.signatures:
            texts.setdefault(sig.source, []).append((entry.id, literal_core(sig.pattern, sig.kind)))
        for frames in entry.frames:
            # The frame defined in the cited file; the others may be the caller's or the standard library's.
            here = [c for c in frames.calls if frames.source.endswith(c.path)] or frames.calls[-1:]
            texts.setdefault(frames.source, []).append((entry.id, f"def {here[-1].function}("))
    return [Claim(source, tuple(t)) for source, t in sorted(texts.items())]


def load_lock(root: Path) -> dict[str, dict[str, Any]]:
    """The recorded evidence, keyed by source; empty when there is no lock file yet."""
    path = root / LOCK
    if not path.exists():
        return {}
    try:
        data: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ProvenanceError(f"{LOCK} is not valid JSON: {exc}") from exc
    return data


def write_lock(root: Path, records: dict[str, dict[str, Any]]) -> None:
    """Write the evidence sorted by source, one record per line pair, so diffs stay small."""
    text = json.dumps(dict(sorted(records.items())), indent=1, ensure_ascii=False, sort_keys=True)
    (root / LOCK).write_text(text + "\n", encoding="utf-8")


def unverified(all_claims: list[Claim], lock: dict[str, dict[str, Any]]) -> list[str]:
    """Sources with no recorded evidence that the cited file exists."""
    problems = []
    for claim in all_claims:
        rec = lock.get(claim.source)
        if rec is None:
            problems.append(f"{claim.source}: no evidence recorded (run `trainwreck sources --verify`)")
        elif not rec.get("exists"):
            problems.append(f"{claim.source}: not found at {rec.get('at')}: {rec.get('note', '')}".rstrip(": "))
    return problems


def unseen(all_claims: list[Claim], lock: dict[str, dict[str, Any]]) -> list[str]:
    """Signatures whose text was looked for in an existing source file and not seen, not even word by word."""
    out = []
    for claim in all_claims:
        rec = lock.get(claim.source) or {}
        for eid, core in claim.texts:
            if core in rec.get("missing", ()):
                out.append(f"{claim.source}: {eid}: {core!r}")
    return out


def stale(all_claims: list[Claim], lock: dict[str, dict[str, Any]]) -> list[str]:
    """Lock records no signature cites any more."""
    cited = {c.source for c in all_claims}
    return sorted(set(lock) - cited)


# --- looking sources up -------------------------------------------------------------------------


def split_source(source: str) -> tuple[str, str, str, str]:
    """(kind, repository or package, ref or version, path) of a source field."""
    if source.startswith("docs:"):
        return "docs", "", "", source[len("docs:") :]
    if source.startswith("pypi:"):
        package, _, path = source[len("pypi:") :].partition(":")
        name, _, version = package.partition("==")
        return "pypi", name, version, path
    repo, _, path = source.partition(":")
    repo, _, ref = repo.partition("@")
    return "git", repo, ref, path


def _normalised(text: str) -> str:
    # Adjacent string literals across a line break ("...in "\n  "very slow...") read as one string,
    # and so does a Rust or C string continued with a backslash at the end of the line.
    text = re.sub(r"\\\n\s*", "", text)
    return re.sub(r"([\"'])\s*\n\s*[frbu]{0,2}([\"'])", "", text)


def _judge(claim: Claim, text: str | None, evidence: Evidence) -> Evidence:
    if text is None:
        evidence.note = evidence.note or "presence only: the file is too large to search"
        return evidence
    flat = _normalised(text)
    vocabulary = set(re.findall(r"[A-Za-z_]{3,}", text))
    for _eid, core in claim.texts:
        if core and (core in text or core in flat):
            evidence.found.append(core)
        elif core and set(re.findall(r"[A-Za-z_]{3,}", core)) <= vocabulary:
            # Printed text is often assembled: a format string's pieces, a macro's name, strerror's words.
            evidence.words.append(core)
        else:
            evidence.missing.append(core)
    return evidence


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a URL through HTTP range requests, so zipfile reads only what it needs."""

    BLOCK = 1 << 18

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.pos = url, size, 0
        self.blocks: dict[int, bytes] = {}

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset
        return self.pos

    def _block(self, n: int) -> bytes:
        if n not in self.blocks:
            start, end = n * self.BLOCK, min(self.size, (n + 1) * self.BLOCK) - 1
            req = urllib.request.Request(self.url, headers={"Range": f"bytes={start}-{end}"})
            with urllib.request.urlopen(req, timeout=60) as r:
                self.blocks[n] = r.read()
        return self.blocks[n]

    def read(self, n: int = -1) -> bytes:
        end = self.size if n < 0 else min(self.size, self.pos + n)
        out = bytearray()
        while self.pos < end:
            block, offset = divmod(self.pos, self.BLOCK)
            chunk = self._block(block)[offset : offset + end - self.pos]
            if not chunk:
                break
            out += chunk
            self.pos += len(chunk)
        return bytes(out)

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


def _platform(path: str) -> str:
    """The platform tag a wheel must have to hold this file."""
    if path.endswith(".dylib"):
        return "macosx"
    if path.endswith((".dll", ".pyd", ".lib")):
        return "win"
    return "linux"


def _simple(name: str) -> dict[str, Any]:
    """The package's page of PyPI's JSON simple API: its files and versions."""
    req = urllib.request.Request(
        PYPI_SIMPLE.format(name=name), headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        page: dict[str, Any] = json.load(r)
    return page


def _files(name: str) -> list[dict[str, Any]]:
    return list(_simple(name)["files"])


def _release(name: str, version: str, path: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The release's wheels, those most likely to hold the path first, and its source archives."""
    norm = re.sub(r"[-_.]+", "_", name).lower()
    mine = [
        f
        for f in _files(name)
        if re.sub(r"[-_.]+", "_", f["filename"].split("-")[0]).lower() == norm
        and re.match(rf"{re.escape(version)}(?:-|\.tar\.gz$|\.zip$)", f["filename"][len(norm) + 1 :])
    ]
    platform = _platform(path)

    def preference(f: dict[str, Any]) -> tuple[int, int, int]:
        n = f["filename"]
        return (
            0 if platform in n else 1 if "none-any" in n else 2,
            0 if "x86_64" in n else 1,
            0 if "cp311" in n else 1,
        )

    wheels = sorted((f for f in mine if f["filename"].endswith(".whl")), key=preference)
    return wheels, [f for f in mine if f["filename"].endswith((".tar.gz", ".zip"))]


def in_wheel(claim: Claim, name: str, version: str, path: str) -> Evidence:
    """Look for the path in the release's wheels on PyPI, reading only the zip directory and the member."""
    wheels, sdists = _release(name, version, path)
    if not wheels and sdists:
        return in_sdist(claim, sdists[0], path)
    if not wheels:
        return Evidence(False, "wheel", f"{name}=={version}", note="no file of that release on PyPI")
    tried = []
    for wheel in wheels[:4]:
        archive = zipfile.ZipFile(RangeFile(wheel["url"], int(wheel["size"])))
        names = {i.filename: i for i in archive.infolist()}
        tried.append(wheel["filename"])
        if path in names:
            info = names[path]
            ev = Evidence(True, "wheel", wheel["filename"])
            text = None
            if info.file_size <= MAX_SEARCHED:
                text = archive.read(info).decode("utf-8", errors="replace")
            return _judge(claim, text, ev)
    return Evidence(False, "wheel", ", ".join(tried), note=f"{path} is in none of these wheels")


def in_sdist(claim: Claim, sdist: dict[str, Any], path: str) -> Evidence:
    """Look for the path in a source archive, which has to be read whole."""
    if int(sdist["size"]) > 64 * 1024 * 1024:
        return Evidence(False, "sdist", sdist["filename"], note="source archive too large to read here")
    with urllib.request.urlopen(sdist["url"], timeout=120) as r:
        data = r.read()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            # Members are prefixed with the archive's own top folder: name-version/.
            if member.isfile() and member.name.split("/", 1)[-1] == path:
                raw = tar.extractfile(member)
                text = raw.read().decode("utf-8", errors="replace") if raw else None
                return _judge(claim, text, Evidence(True, "sdist", sdist["filename"]))
    return Evidence(False, "sdist", sdist["filename"], note=f"{path} is not in the source archive")


def in_mirror(claim: Claim, mirror: Path, ref: str, path: str) -> Evidence:
    """Look for the path at the ref in a local clone."""
    rev = ref or "HEAD"
    got = subprocess.run(
        ["git", "-C", str(mirror), "rev-parse", "--verify", "-q", f"{rev}^{{commit}}"], capture_output=True, text=True
    )
    if got.returncode:
        return Evidence(False, "mirror", rev, note=f"{rev} is not in the clone at {mirror}")
    commit = got.stdout.strip()
    show = subprocess.run(["git", "-C", str(mirror), "show", f"{commit}:{path}"], capture_output=True)
    if show.returncode:
        return Evidence(False, "mirror", commit, note=f"{path} does not exist at {commit}")
    return _judge(claim, show.stdout.decode("utf-8", errors="replace"), Evidence(True, "mirror", commit))


def in_stdlib(claim: Claim, path: str) -> Evidence | None:
    """Look for a CPython `Lib/` file in this interpreter's standard library."""
    local = Path(sysconfig.get_paths()["stdlib"]) / path[len("Lib/") :]
    if not local.is_file():
        return None
    version = ".".join(map(str, sys.version_info[:3]))
    return _judge(
        claim, local.read_text(encoding="utf-8", errors="replace"), Evidence(True, "stdlib", f"CPython {version}")
    )


def _latest(name: str) -> str:
    versions: list[str] = _simple(name)["versions"]
    final = [v for v in versions if re.fullmatch(r"\d+(?:\.\d+)*", v)]
    return max(final, key=lambda v: tuple(int(p) for p in v.split(".")))


def resolve(claim: Claim, mirrors: Path | None) -> Evidence | None:
    """Find the evidence for one source, or None when nothing here can look it up."""
    kind, repo, ref, path = split_source(claim.source)
    try:
        if kind == "pypi":
            return in_wheel(claim, repo, ref, path)
        if kind == "docs":
            return None
        if mirrors and (mirror := mirrors / repo.replace("/", "+") / "repo").is_dir():
            return in_mirror(claim, mirror, ref, path)
        if repo == "python/cpython" and path.startswith("Lib/") and not ref:
            return in_stdlib(claim, path)
        if repo in RELEASED_AS and (not ref or re.fullmatch(r"v\d+(?:\.\d+)*", ref)):
            package, folder, root = RELEASED_AS[repo]
            # A wheel holds the Python files, not the C++ sources compiled into its libraries.
            if path.startswith(folder) and path.endswith(".py"):
                version = ref[1:] if ref else _latest(package)
                return in_wheel(claim, package, version, root + path[len(folder) :])
    except (OSError, zipfile.BadZipFile, ValueError, KeyError) as exc:
        raise ProvenanceError(f"{claim.source}: could not be looked up: {exc}") from exc
    return None


def verify(
    all_claims: list[Claim], lock: dict[str, dict[str, Any]], mirrors: Path | None, recheck: bool = False
) -> Iterator[tuple[Claim, Evidence | None]]:
    """Resolve each claim the lock has no complete evidence for (or all with recheck)."""
    for claim in all_claims:
        rec = lock.get(claim.source)
        if rec and not recheck and rec.get("exists") and not unverified([claim], lock):
            continue
        yield claim, resolve(claim, mirrors)
