"""The language server of `trainwreck lsp`: diagnoses logs and checks entries while they are edited."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import tempfile
import threading
import time
import typing
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types
from pydantic import BaseModel
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from generator import __version__
from generator.contract import Diagnosis, Evidence, Finding, Unknown
from generator.errors import ContentError, Problem, TrainwreckError
from generator.load import Document, Sources, load_sources, load_yaml
from generator.schema import Entry, Hub, Tags
from generator.validate import item_type

if typing.TYPE_CHECKING:
    from generator.diagnose.run import Engine

LOG_SUFFIXES = frozenset({".log", ".out", ".err", ".txt"})
# Above this a scan takes long enough to show progress for (the engine reads ~100 MB/s).
LARGE_BYTES = 4 << 20
# How often a long scan reports that it is still running.
PROGRESS_SECONDS = 0.5
# Keystrokes closer together than this are validated once, after the last one.
DEBOUNCE_SECONDS = 0.25
SOURCE = "trainwreck"
SEVERITY = {
    "initiating": types.DiagnosticSeverity.Error,
    "collateral": types.DiagnosticSeverity.Information,
    "note": types.DiagnosticSeverity.Hint,
}
ROLE_NAMES = {
    "initiating": "initiating failure",
    "independent": "another failure",
    "wrapper": "wrapper of another failure",
    "collateral": "collateral",
    "note": "note",
}
ID_FIELDS = {"tags": "tag", "related": "entry", "wraps": "entry", "hub": "hub"}
_KEY = re.compile(r"^(\s*)(?:-\s+)?([A-Za-z_][\w-]*):(?:\s|$)")
_ITEM = re.compile(r"^(\s*)-\s*[\w*-]*$")
_WORD = re.compile(r"[\w*-]*$")


@dataclasses.dataclass
class LogState:
    """What the last scan of a log found, kept for hover and code actions."""

    report: Diagnosis
    lines: dict[int, list[Finding]]  # 0-based line to the findings it carries
    unknown: dict[int, Unknown]


class TrainwreckServer(LanguageServer):
    """A language server for logs (diagnosis) and for entries, hubs and tags.yaml (validation)."""

    def __init__(self) -> None:
        super().__init__("trainwreck", __version__)
        self._engine: Engine | None = None
        self._engine_lock = threading.Lock()
        self._projects: dict[Path, Sources] = {}
        self._project_lock = threading.Lock()
        self._summaries: dict[str, str] = {}
        self.logs: dict[str, LogState] = {}
        self.asked: set[str] = set()
        self._generation: dict[str, int] = {}
        self.scans: dict[str, int] = {}
        self.checking: dict[Path, asyncio.Lock] = {}

    def engine(self) -> Engine:
        """The diagnosis engine, loaded once: its index and compiled matcher are reused for every scan."""
        with self._engine_lock:
            if self._engine is None:
                from generator.diagnose.run import Engine

                self._engine = Engine()
            return self._engine

    def sources(self, root: Path) -> Sources:
        """The project's parsed content as it is on disk, read once until a file is saved."""
        with self._project_lock:
            if root not in self._projects:
                self._projects[root] = load_sources(root)
            return self._projects[root]

    def forget(self, root: Path) -> None:
        """Read the project from disk again next time."""
        with self._project_lock:
            self._projects.pop(root, None)

    def summary(self, entry: str) -> str:
        """An entry's summary, from the projects open here (the report carries only the fix and the check)."""
        if not self._summaries:
            if not self._projects:
                for start in (self.workspace.root_path, str(Path.cwd())):
                    root = _root_at(Path(start)) if start else None
                    if root is not None:
                        self.sources(root)
                        break
            for sources in list(self._projects.values()):
                for doc in sources.entries:
                    if isinstance(doc.data, dict) and isinstance(doc.data.get("summary"), str):
                        self._summaries[str(doc.data.get("id"))] = doc.data["summary"].strip()
        return self._summaries.get(entry, "")


server = TrainwreckServer()


# ---------------------------------------------------------------------------- which document is what


def _root_at(start: Path) -> Path | None:
    """The nearest folder at or above start that holds site.yaml and entries/."""
    for folder in [start, *start.parents]:
        if (folder / "site.yaml").is_file() and (folder / "entries").is_dir():
            return folder
    return None


def project_of(path: Path) -> tuple[Path, str] | None:
    """The project root of a content file and its path inside it, or None when it is not content."""
    for folder in path.parents:
        if (folder / "site.yaml").is_file() and (folder / "entries").is_dir():
            rel = path.relative_to(folder).as_posix()
            parts = rel.split("/")
            is_yaml = path.suffix in (".yaml", ".yml")
            if rel == "tags.yaml" or (is_yaml and parts[0] == "entries") or (is_yaml and parts[:1] == ["hubs"]):
                return folder, rel
            return None
    return None


def is_log(uri: str, language: str = "") -> bool:
    """Whether a document is diagnosed as a log: by its extension or its language id."""
    path = to_fs_path(uri) or uri
    return Path(path).suffix.lower() in LOG_SUFFIXES or language == "log"


# ---------------------------------------------------------------------------- logs


def scan_text(engine: Engine, text: str, name: str) -> Diagnosis:
    """Diagnose a buffer's text as the file `name` (the engine reads ranks from file names)."""
    with tempfile.TemporaryDirectory(prefix="trainwreck-lsp-") as folder:
        path = Path(folder) / (Path(name).name or "buffer.log")
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        report, problems = engine.diagnose([str(path)])
    if problems and not report.inputs:
        raise TrainwreckError("; ".join(p.replace(str(path), name) for p in problems))
    # The report names the file it read; the reader knows the buffer by its own name.
    scanned, real = json.dumps(str(path))[1:-1], json.dumps(name)[1:-1]
    return Diagnosis.model_validate_json(report.model_dump_json().replace(scanned, real))


def _lines_of(finding: Finding) -> list[Evidence]:
    """Every line of a finding the report names: the first, the evidence, each rank's onset."""
    seen: dict[int, Evidence] = {}
    for e in [finding.first, *finding.evidence, *finding.onsets]:
        seen.setdefault(e.line, e)
    return list(seen.values())


def log_state(report: Diagnosis) -> LogState:
    """Index a report by the lines it names."""
    lines: dict[int, list[Finding]] = {}
    for finding in report.findings:
        for e in _lines_of(finding):
            lines.setdefault(e.line - 1, []).append(finding)
    unknown = {u.evidence.line - 1: u for u in report.unknown}
    return LogState(report, lines, unknown)


def split_lines(text: str) -> list[str]:
    """A document's lines as the engine and the validator count them: ended by '\\n', without '\\r'."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def _range(lines: list[str], line: int, column: int = 0, offset: int = 0) -> types.Range:
    text = lines[line] if 0 <= line < len(lines) else ""
    return types.Range(
        start=types.Position(line=line + offset, character=min(column, len(text))),
        end=types.Position(line=line + offset, character=max(len(text), column)),
    )


def log_diagnostics(state: LogState, text: str, offset: int = 0) -> list[types.Diagnostic]:
    """One diagnostic per finding on each line it names, and one per exception no entry covers."""
    lines = split_lines(text)
    out = []
    for line, findings in sorted(state.lines.items()):
        for f in findings:
            out.append(
                types.Diagnostic(
                    range=_range(lines, line, offset=offset),
                    severity=SEVERITY.get(f.role, types.DiagnosticSeverity.Warning),
                    source=SOURCE,
                    code=f.entry,
                    code_description=types.CodeDescription(href=f.url),
                    message=f"{f.title} ({ROLE_NAMES[f.role]}). Fix: {f.fix}",
                    data={"entry": f.entry, "url": f.url, "title": f.title},
                )
            )
    for line, u in sorted(state.unknown.items()):
        said = f"{u.exception}: {u.message}" if u.message else u.exception
        out.append(
            types.Diagnostic(
                range=_range(lines, line, offset=offset),
                severity=types.DiagnosticSeverity.Warning,
                source=SOURCE,
                code="unknown",
                message=f"Unknown failure, no entry covers it yet: {said}. Scaffold one: {u.command}",
                data={"command": u.command},
            )
        )
    return out


def hover_markdown(ls: TrainwreckServer, findings: list[Finding], unknown: Unknown | None) -> str:
    """The hover of a log line: each finding's role, summary, fix and check, and the entry's page."""
    parts = []
    for f in findings:
        block = [f"**[{f.title}]({f.url})** · {ROLE_NAMES[f.role]} · {f.severity} severity, {f.confidence} confidence"]
        if summary := ls.summary(f.entry):
            block += ["", summary]
        block += ["", f"**Fix:** {f.fix}", "", f"**Verify:** {f.verify}"]
        parts.append("\n".join(block))
    if unknown is not None:
        said = f"{unknown.exception}: {unknown.message}" if unknown.message else unknown.exception
        parts.append(f"**Not covered yet:** `{said}`\n\nScaffold an entry from this line: `{unknown.command}`")
    return "\n\n---\n\n".join(parts)


async def diagnose_log(ls: TrainwreckServer, uri: str) -> None:
    """Scan a log document off the server loop; show progress when it is large."""
    generation = ls.scans.get(uri, 0) + 1
    ls.scans[uri] = generation
    text = ls.workspace.get_text_document(uri).source
    real = to_fs_path(uri) or uri
    token = await _begin_progress(ls, f"Scanning {len(text) / 1e6:,.1f} MB") if len(text) > LARGE_BYTES else None
    scan = asyncio.ensure_future(asyncio.to_thread(lambda: (scan_text(ls.engine(), text, real), ls.summary(""))))
    started = time.monotonic()
    try:
        while not scan.done():
            await asyncio.wait({scan}, timeout=PROGRESS_SECONDS)
            if token is not None and not scan.done():
                message = f"Scanning {len(text) / 1e6:,.1f} MB ({time.monotonic() - started:.0f} s)"
                ls.work_done_progress.report(token, types.WorkDoneProgressReport(message=message))
        report, _ = scan.result()
    except TrainwreckError as exc:
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=str(exc)))
        return
    finally:
        if token is not None:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="Scan finished"))
    if ls.scans.get(uri) != generation:
        return  # a newer scan of the document publishes instead
    state = log_state(report)
    ls.logs[uri] = state
    diagnostics = log_diagnostics(state, text)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))


async def _begin_progress(ls: TrainwreckServer, message: str) -> str | None:
    """Start a `$/progress` report when the client takes them; return its token."""
    window = ls.client_capabilities.window
    if window is None or not window.work_done_progress:
        return None
    token = f"trainwreck-scan-{uuid.uuid4()}"
    try:
        await ls.work_done_progress.create_async(token)
    except Exception:  # a client that refuses the token still gets its diagnostics
        return None
    ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title="Trainwreck", message=message))
    return token


# ---------------------------------------------------------------------------- entries, hubs, tags.yaml


def parse_text(text: str, display: str) -> tuple[Document, list[Problem]]:
    """Parse a buffer's YAML exactly as the validator parses the file."""
    with tempfile.TemporaryDirectory(prefix="trainwreck-lsp-") as folder:
        path = Path(folder) / "doc.yaml"
        path.write_text(text, encoding="utf-8")
        return load_yaml(path, display)


def check_content(sources: Sources, buffers: dict[str, str], display: str) -> list[tuple[Problem, bool]]:
    """Validate a project with some files replaced by their buffers; return one file's problems (and warnings)."""
    from generator.link import link_catalog
    from generator.validate import validate_sources

    parsed = {name: parse_text(text, name) for name, text in buffers.items()}
    problems = [p for p in sources.problems if p.path not in parsed]
    for _, found in parsed.values():
        problems.extend(found)

    def swap(docs: list[Document], folder: str) -> list[Document]:
        out = [parsed[d.path][0] if d.path in parsed else d for d in docs]
        known = {d.path for d in docs}
        out += [parsed[n][0] for n in sorted(parsed) if n.startswith(folder) and n not in known]
        return out

    tags = parsed["tags.yaml"][0] if "tags.yaml" in parsed else sources.tags
    replaced = dataclasses.replace(
        sources,
        tags=tags,
        entries=swap(sources.entries, "entries/"),
        hubs=swap(sources.hubs, "hubs/"),
        problems=problems,
    )
    try:
        catalog = link_catalog(validate_sources(replaced))
    except ContentError as exc:
        return [(p, False) for p in exc.problems if p.path == display]
    return [(w, True) for w in catalog.warnings if w.path == display]


def problem_message(problem: Problem) -> str:
    """The validator's line for a problem without its file and position, which the editor shows."""
    text = f"{problem.field}: {problem.message}" if problem.field else problem.message
    return f"{text} (hint: {problem.hint})" if problem.hint else text


def content_diagnostics(found: list[tuple[Problem, bool]], text: str) -> list[types.Diagnostic]:
    """The validator's problems at their line and column."""
    lines = split_lines(text)
    out = []
    for problem, warning in found:
        line = max(problem.line - 1, 0)
        out.append(
            types.Diagnostic(
                range=_range(lines, line, max(problem.column - 1, 0)),
                severity=types.DiagnosticSeverity.Warning if warning else types.DiagnosticSeverity.Error,
                source=SOURCE,
                message=problem_message(problem),
            )
        )
    return out


def _buffers(ls: TrainwreckServer, root: Path) -> dict[str, str]:
    """The open content files of a project, by their path inside it."""
    out = {}
    for uri, document in list(ls.workspace.text_documents.items()):
        found = project_of(Path(to_fs_path(uri) or uri))
        if found and found[0] == root:
            out[found[1]] = document.source
    return out


async def check_entry(ls: TrainwreckServer, uri: str, root: Path, display: str) -> None:
    """Validate a content file's buffer, after the typing pauses, off the server loop."""
    generation = ls._generation.get(uri, 0) + 1
    ls._generation[uri] = generation
    await asyncio.sleep(DEBOUNCE_SECONDS)
    if ls._generation.get(uri) != generation:
        return
    # One check of a project at a time: a check of the whole project takes a second or two, and the
    # edits made meanwhile are checked once, by the newest request.
    async with ls.checking.setdefault(root, asyncio.Lock()):
        if ls._generation.get(uri) != generation:
            return
        text = ls.workspace.get_text_document(uri).source
        buffers = _buffers(ls, root)
        found = await asyncio.to_thread(lambda: check_content(ls.sources(root), buffers, display))
    if ls._generation.get(uri) != generation:
        return
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=content_diagnostics(found, text))
    )


def field_path(lines: list[str], line: int) -> list[str]:
    """The keys from the top of the document down to the key on a line, by indentation."""
    match = _KEY.match(lines[line])
    if not match:
        return []
    path = [match.group(2)]
    indent = len(match.group(1))
    for previous in range(line - 1, -1, -1):
        above = _KEY.match(lines[previous])
        if above and len(above.group(1)) < indent and lines[previous][len(above.group(1)) :][:1] != "-":
            path.insert(0, above.group(2))
            indent = len(above.group(1))
        elif above and len(above.group(1)) < indent:
            # A key after '- ' belongs to a list item whose own key is further up.
            indent = len(above.group(1))
        if indent == 0:
            break
    return path


def field_description(model: type[BaseModel], path: list[str]) -> tuple[str, str] | None:
    """The model and schema description of the field a key path ends in."""
    current: Any = model
    for part in path[:-1]:
        if isinstance(current, type) and issubclass(current, BaseModel) and part in current.model_fields:
            current = item_type(current.model_fields[part].annotation)
        # Otherwise a key of a dict[str, Model] level (tags.yaml): data, not a field.
    if not (isinstance(current, type) and issubclass(current, BaseModel)):
        return None
    info = current.model_fields.get(path[-1]) if path else None
    if info is None or not info.description:
        return None
    return current.__name__, info.description


def model_of(display: str) -> type[BaseModel]:
    """The schema model of a content file."""
    if display == "tags.yaml":
        return Tags
    return Hub if display.startswith("hubs/") else Entry


def completion_field(lines: list[str], line: int, character: int) -> str | None:
    """Which id field the cursor is in: tags, related, wraps or hub; None elsewhere."""
    before = lines[line][:character] if line < len(lines) else ""
    key = _KEY.match(before)
    if key:
        return key.group(2) if key.group(2) in ID_FIELDS else None
    item = _ITEM.match(before)
    if not item:
        return None
    indent = len(item.group(1))
    for previous in range(line - 1, -1, -1):
        text = lines[previous]
        if not text.strip() or _ITEM.match(text) and len(text) - len(text.lstrip()) == indent:
            continue
        above = _KEY.match(text)
        if above and len(above.group(1)) <= indent and text.rstrip().endswith(":"):
            return above.group(2) if above.group(2) in ID_FIELDS else None
        return None
    return None


def known_ids(sources: Sources, kind: str) -> dict[str, str]:
    """Ids a field may name, with a title each: tags from tags.yaml, entries, hubs."""
    if kind == "tag":
        data = sources.tags.data.get("tags") if isinstance(sources.tags.data, dict) else None
        items = data.items() if isinstance(data, dict) else []
        return {str(k): str(v.get("title", "")) if isinstance(v, dict) else "" for k, v in items}
    docs = sources.entries if kind == "entry" else sources.hubs
    out = {}
    for doc in docs:
        if isinstance(doc.data, dict) and isinstance(doc.data.get("id"), str):
            out[doc.data["id"]] = str(doc.data.get("title", ""))
    return out


# ---------------------------------------------------------------------------- handlers


def _kind(ls: TrainwreckServer, uri: str, language: str = "") -> tuple[Path, str] | None | bool:
    """A content file's project and path, True for a log, None for neither."""
    path = to_fs_path(uri)
    found = project_of(Path(path)) if path else None
    if found:
        return found
    return True if is_log(uri, language) or uri in ls.asked else None


async def _refresh(ls: TrainwreckServer, uri: str, language: str = "") -> None:
    kind = _kind(ls, uri, language)
    if kind is True:
        await diagnose_log(ls, uri)
    elif isinstance(kind, tuple):
        await check_entry(ls, uri, *kind)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: TrainwreckServer, params: types.DidOpenTextDocumentParams) -> None:
    """Diagnose a log or validate a content file as it opens."""
    await _refresh(ls, params.text_document.uri, params.text_document.language_id)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: TrainwreckServer, params: types.DidChangeTextDocumentParams) -> None:
    """Validate content files on every change; scan a log again when the typing pauses (a large one on save)."""
    uri = params.text_document.uri
    kind = _kind(ls, uri)
    if isinstance(kind, tuple):
        await check_entry(ls, uri, *kind)
    elif kind is True and len(ls.workspace.get_text_document(uri).source) <= LARGE_BYTES:
        generation = ls._generation.get(uri, 0) + 1
        ls._generation[uri] = generation
        await asyncio.sleep(DEBOUNCE_SECONDS)
        if ls._generation.get(uri) == generation:
            await diagnose_log(ls, uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: TrainwreckServer, params: types.DidSaveTextDocumentParams) -> None:
    """Rescan a saved log; read a project again when one of its files is saved."""
    kind = _kind(ls, params.text_document.uri)
    if isinstance(kind, tuple):
        ls.forget(kind[0])
        ls._summaries.clear()
    await _refresh(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: TrainwreckServer, params: types.DidCloseTextDocumentParams) -> None:
    """Drop what is kept for a closed document and clear its diagnostics."""
    ls.logs.pop(params.text_document.uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: TrainwreckServer, params: types.HoverParams) -> types.Hover | None:
    """On a log line: the failure's summary, fix and check. On an entry's key: the field's description."""
    uri, line = params.text_document.uri, params.position.line
    state = ls.logs.get(uri)
    if state is not None:
        findings, unknown = state.lines.get(line, []), state.unknown.get(line)
        if not findings and unknown is None:
            return None
        value = hover_markdown(ls, findings, unknown)
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=value))
    kind = _kind(ls, uri)
    if not isinstance(kind, tuple):
        return None
    lines = split_lines(ls.workspace.get_text_document(uri).source)
    if line >= len(lines) or not (key := _KEY.match(lines[line])):
        return None
    if not key.start(2) <= params.position.character <= key.end(2):
        return None
    found = field_description(model_of(kind[1]), field_path(lines, line))
    if found is None:
        return None
    owner, description = found
    value = f"**{key.group(2)}** ({owner})\n\n{description}"
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=value))


@server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=[" ", "[", ",", "-"]))
def completion(ls: TrainwreckServer, params: types.CompletionParams) -> types.CompletionList | None:
    """Tag, related-entry and hub ids where those fields are edited."""
    kind = _kind(ls, params.text_document.uri)
    if not isinstance(kind, tuple):
        return None
    lines = split_lines(ls.workspace.get_text_document(params.text_document.uri).source)
    line, character = params.position.line, params.position.character
    field = completion_field(lines, line, character)
    if field is None:
        return None
    prefix = _WORD.search(lines[line][:character] if line < len(lines) else "")
    typed = prefix.group() if prefix else ""
    ids = known_ids(ls.sources(kind[0]), ID_FIELDS[field])
    items = [
        types.CompletionItem(label=name, kind=types.CompletionItemKind.Value, detail=title or None)
        for name, title in sorted(ids.items())
        if name.startswith(typed)
    ]
    return types.CompletionList(is_incomplete=False, items=items)


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION)
def code_action(ls: TrainwreckServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """Open an entry's page, copy the report as Markdown, or diagnose the selected text."""
    # Only "Open the entry page" has a kind (quick fix): editors list actions without one beside it in
    # the light bulb, where "source" actions would sit in another menu.
    uri = params.text_document.uri
    actions: list[types.CodeAction] = []
    state = ls.logs.get(uri)
    if state is not None:
        seen = set()
        for line in range(params.range.start.line, params.range.end.line + 1):
            for f in state.lines.get(line, []):
                if f.entry in seen:
                    continue
                seen.add(f.entry)
                actions.append(
                    types.CodeAction(
                        title=f"Open the entry page: {f.title}",
                        kind=types.CodeActionKind.QuickFix,
                        command=types.Command(
                            title="Open the entry page", command="trainwreck.openEntry", arguments=[f.url]
                        ),
                    )
                )
        actions.append(
            types.CodeAction(
                title="Copy the report as Markdown",
                command=types.Command(
                    title="Copy the report as Markdown", command="trainwreck.reportMarkdown", arguments=[uri]
                ),
            )
        )
    r = params.range
    if (r.start.line, r.start.character) != (r.end.line, r.end.character):
        actions.append(
            types.CodeAction(
                title="Diagnose this selection",
                command=types.Command(
                    title="Diagnose this selection",
                    command="trainwreck.diagnoseRange",
                    arguments=[
                        uri,
                        {
                            "start": {"line": r.start.line, "character": r.start.character},
                            "end": {"line": r.end.line, "character": r.end.character},
                        },
                    ],
                ),
            )
        )
    return actions


@server.command("trainwreck.openEntry")
async def open_entry(ls: TrainwreckServer, url: str) -> bool:
    """Ask the client to open an entry's page in the browser."""
    result = await ls.window_show_document_async(types.ShowDocumentParams(uri=url, external=True))
    return bool(result and result.success)


@server.command("trainwreck.reportMarkdown")
def report_markdown(ls: TrainwreckServer, uri: str) -> str | None:
    """The last report of a log as Markdown, for an issue thread."""
    from generator.diagnose.text import render_markdown

    state = ls.logs.get(uri)
    return None if state is None else render_markdown(state.report)


@server.command("trainwreck.diagnoseRange")
async def diagnose_selection(ls: TrainwreckServer, uri: str, where: dict[str, Any]) -> str:
    """Diagnose part of any document; mark its lines there and return the report as Markdown."""
    from generator.diagnose.text import render_markdown

    document = ls.workspace.get_text_document(uri)
    start = types.Position(line=where["start"]["line"], character=where["start"]["character"])
    end = types.Position(line=where["end"]["line"], character=where["end"]["character"])
    text = document.source[document.offset_at_position(start) : document.offset_at_position(end)]
    report = await asyncio.to_thread(lambda: scan_text(ls.engine(), text, "selection"))
    if uri not in ls.logs:
        diagnostics = log_diagnostics(log_state(report), text, offset=where["start"]["line"])
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))
    return render_markdown(report)


@server.command("trainwreck.diagnoseText")
async def diagnose_text(ls: TrainwreckServer, text: str) -> str:
    """Diagnose text the client sends (a terminal's output); return the report as Markdown."""
    from generator.diagnose.text import render_markdown

    if not text.strip():
        return "Nothing to diagnose: the text is empty.\n"
    report = await asyncio.to_thread(lambda: scan_text(ls.engine(), text, "terminal output"))
    return render_markdown(report)


@server.command("trainwreck.diagnoseDocument")
async def diagnose_document(ls: TrainwreckServer, uri: str) -> int:
    """Diagnose any open document as a log from now on; return how many findings it has."""
    ls.asked.add(uri)
    await diagnose_log(ls, uri)
    state = ls.logs.get(uri)
    return 0 if state is None else len(state.report.findings)


def serve() -> None:
    """Serve over standard input and output until the client exits."""
    server.start_io()
