"""`trainwreck lsp` over real stdio, driven by pytest-lsp's client: logs, entries, progress and commands."""

from __future__ import annotations

import ast
import asyncio
import shutil
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
# Four nodes: rank 11 runs out of memory first; ranks 0 and 3 time out in a collective ten minutes later.
MULTI_RANK = ROOT / "tests/corpus/real/pytorch-distributed/ms-swift-6301-rank11-oom-then-watchdog/excerpt.log"
BROKEN = ROOT / "tests/invalid/unknown-tag"

pytestmark = pytest.mark.asyncio


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "generator", "lsp"]))
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    """A client with VS Code's capabilities and the repository as its workspace."""
    params = types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=ROOT.as_uri(), process_id=None
    )
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


def open_doc(client: LanguageClient, path: Path, language: str, text: str | None = None) -> str:
    """Open a file in the client and return its URI."""
    uri = path.as_uri()
    body = path.read_text(encoding="utf-8") if text is None else text
    item = types.TextDocumentItem(uri=uri, language_id=language, version=1, text=body)
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
    return uri


async def diagnostics(client: LanguageClient, uri: str, timeout: float = 60) -> Sequence[types.Diagnostic]:
    """Wait for the server to publish diagnostics for a document."""
    for _ in range(int(timeout * 20)):
        if uri in client.diagnostics:
            return client.diagnostics[uri]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no diagnostics published for {uri}")


def command_of(action: types.Command | types.CodeAction) -> types.Command:
    """The command a code action runs."""
    # lsprotocol's client reads any result item with a "command" key as a Command, so a CodeAction
    # arrives as a Command whose command is the text of the nested one; VS Code and Neovim tell them apart.
    if isinstance(action, types.CodeAction):
        assert action.command is not None
        return action.command
    if action.command.startswith("{"):
        nested = ast.literal_eval(action.command)
        return types.Command(title=nested["title"], command=nested["command"], arguments=nested.get("arguments"))
    return action


def by_line(found: Sequence[types.Diagnostic]) -> dict[tuple[int, str], types.Diagnostic]:
    return {(d.range.start.line, str(d.code)): d for d in found}


async def test_multi_rank_log_marks_each_failure_by_role(client: LanguageClient) -> None:
    uri = open_doc(client, MULTI_RANK, "log")
    found = by_line(await diagnostics(client, uri))
    # case.yaml expects cuda-oom-fragmentation, initiating on rank 11 (line 5).
    initiating = found[(4, "cuda-oom-fragmentation")]
    assert initiating.severity == types.DiagnosticSeverity.Error
    assert initiating.code_description is not None
    assert initiating.code_description.href.endswith("/failures/cuda-oom-fragmentation/")
    assert "(initiating failure). Fix: " in initiating.message
    assert initiating.source == "trainwreck"
    assert initiating.range.end.character == len(MULTI_RANK.read_text().splitlines()[4])
    for line in (8, 9):
        assert found[(line, "pg-nccl-watchdog-collective-timeout")].severity == types.DiagnosticSeverity.Information
    for line in (6, 10):
        assert found[(line, "pg-flight-recorder-dump")].severity == types.DiagnosticSeverity.Information
    wrapper = found[(5, "torchrun-child-failed")]
    assert wrapper.severity == types.DiagnosticSeverity.Warning
    assert "wrapper" in wrapper.message
    assert set(found) == {
        (4, "cuda-oom-fragmentation"),
        (5, "torchrun-child-failed"),
        (6, "pg-flight-recorder-dump"),
        (8, "pg-nccl-watchdog-collective-timeout"),
        (9, "pg-nccl-watchdog-collective-timeout"),
        (10, "pg-flight-recorder-dump"),
    }


async def test_hover_on_a_failure_line_shows_summary_fix_and_check(client: LanguageClient) -> None:
    uri = open_doc(client, MULTI_RANK, "log")
    await diagnostics(client, uri)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=4, character=3)
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    text = hover.contents.value
    import yaml

    summary = yaml.safe_load((ROOT / "entries/cuda/cuda-oom-fragmentation.yaml").read_text())["summary"].strip()
    assert "initiating failure" in text
    assert "**Fix:**" in text and "**Verify:**" in text
    assert "/failures/cuda-oom-fragmentation/" in text
    assert summary in text
    empty = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=0)
        )
    )
    assert empty is None


async def code_actions(
    client: LanguageClient, uri: str, where: types.Range
) -> list[types.Command | types.CodeAction] | None:
    """The code actions the server offers for a range of a document."""
    return await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=where,
            context=types.CodeActionContext(diagnostics=[]),
        )
    )


async def test_code_actions_open_the_page_copy_the_report_and_diagnose_a_selection(client: LanguageClient) -> None:
    uri = open_doc(client, MULTI_RANK, "log")
    await diagnostics(client, uri)
    where = types.Range(start=types.Position(line=4, character=0), end=types.Position(line=5, character=10))
    actions = await code_actions(client, uri, where)
    assert actions is not None
    titles = [a.title for a in actions]
    assert titles[0].startswith("Open the entry page: ")
    assert "Copy the report as Markdown" in titles
    assert "Diagnose this selection" in titles
    commands = {a.title: command_of(a) for a in actions}

    opened = commands[titles[0]]
    assert await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=opened.command, arguments=opened.arguments)
    )
    assert client.shown_documents[-1].external is True
    assert client.shown_documents[-1].uri.endswith("/failures/cuda-oom-fragmentation/")

    copy = commands["Copy the report as Markdown"]
    markdown = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=copy.command, arguments=copy.arguments)
    )
    assert markdown.startswith("**Trainwreck diagnosis** of 1 log(s), 12 lines")
    assert "Most likely cause on rank 11" in markdown
    # The report names the document, not the file the server scanned it from.
    assert f"{MULTI_RANK}:5, rank 11" in markdown and "trainwreck-lsp-" not in markdown


async def test_diagnose_selection_in_any_file(client: LanguageClient, tmp_path: Path) -> None:
    lines = MULTI_RANK.read_text().splitlines()
    notes = tmp_path / "notes.md"
    notes.write_text("# What happened\n\nThe job died:\n\n" + "\n".join(lines[3:6]) + "\n\nThen nothing.\n")
    uri = open_doc(client, notes, "markdown")
    where = types.Range(start=types.Position(line=4, character=0), end=types.Position(line=7, character=0))
    actions = await code_actions(client, uri, where)
    assert actions is not None
    assert [a.title for a in actions] == ["Diagnose this selection"]
    command = command_of(actions[0])
    markdown = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    assert "cuda-oom-fragmentation" in markdown
    found = by_line(await diagnostics(client, uri))
    # The selection's second line (line 5 of the file) carries the out-of-memory error.
    assert found[(5, "cuda-oom-fragmentation")].severity == types.DiagnosticSeverity.Error


async def test_large_log_is_scanned_in_the_background_with_progress(client: LanguageClient, tmp_path: Path) -> None:
    filler = "".join(f"[rank0]: step {i} loss 2.{i % 1000:03d} lr 1e-4 tokens/s 31234\n" for i in range(250_000))
    failure = MULTI_RANK.read_text().splitlines()[4] + "\n"
    log = tmp_path / "big.log"
    log.write_text(filler + failure)
    assert log.stat().st_size > 12 << 20
    uri = open_doc(client, log, "log")
    # A log opened after it is diagnosed while the large scan runs: the server loop is not blocked.
    other = open_doc(client, tmp_path / "small.log", "log", "nothing to see\n")
    assert list(await diagnostics(client, other)) == []
    found = await diagnostics(client, uri, timeout=120)
    assert [(d.range.start.line, d.code) for d in found] == [(250_000, "cuda-oom-fragmentation")]
    assert list(client.diagnostics).index(other) < list(client.diagnostics).index(uri)
    reports = [r for token, r in client.progress_reports.items() if str(token).startswith("trainwreck-scan-")]
    assert len(reports) == 1
    kinds = [type(v).__name__ for v in reports[0]]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"


async def test_unknown_exception_suggests_a_new_entry(client: LanguageClient, tmp_path: Path) -> None:
    log = tmp_path / "crash.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/opt/app/train.py", line 12, in <module>\n'
        "    main()\n"
        '  File "/opt/app/train.py", line 9, in main\n'
        "    raise FrobnicationError('the frobnicator is out of sync')\n"
        "FrobnicationError: the frobnicator is out of sync\n"
    )
    uri = open_doc(client, log, "log")
    found = await diagnostics(client, uri)
    assert len(found) == 1
    assert found[0].range.start.line == 5
    assert found[0].code == "unknown"
    assert found[0].message.endswith(f"Scaffold one: trainwreck new --from-log {log}:6")


async def test_broken_entry_reports_the_validator_problem_at_its_position(
    client: LanguageClient, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    shutil.copytree(CORPUS, project)
    shutil.copytree(BROKEN / "entries", project / "entries", dirs_exist_ok=True)
    path = project / "entries/demo/demo-hang.yaml"
    uri = open_doc(client, path, "yaml")
    found = await diagnostics(client, uri)
    # tests/invalid/unknown-tag/expected.txt: entries/demo/demo-hang.yaml:17:8: tags[0]: ...
    assert [(d.range.start.line, d.range.start.character, d.message) for d in found] == [
        (16, 7, "tags[0]: unknown tag 'hangs' (hint: did you mean 'hang' or 'nan'?)")
    ]
    assert found[0].severity == types.DiagnosticSeverity.Error

    # Fixed in the buffer, unsaved: the problem goes away on the change.
    text = path.read_text().replace("tags: [hangs]", "tags: [hang]")
    client.diagnostics.pop(uri)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    assert list(await diagnostics(client, uri)) == []


async def test_completion_of_tag_related_and_hub_ids(client: LanguageClient, tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(CORPUS, project)
    path = project / "entries/demo/demo-hang.yaml"
    text = path.read_text()
    lines = text.splitlines()
    tags_line = next(i for i, line in enumerate(lines) if line.startswith("tags:"))
    lines[tags_line] = "tags: [hang, n"
    uri = open_doc(client, path, "yaml", "\n".join(lines) + "\n")

    async def labels(line: int, character: int) -> list[str]:
        result = await client.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=character),
            )
        )
        assert isinstance(result, types.CompletionList)
        return [item.label for item in result.items]

    import yaml

    declared = sorted(yaml.safe_load((project / "tags.yaml").read_text())["tags"])
    assert await labels(tags_line, len(lines[tags_line])) == [t for t in declared if t.startswith("n")]
    assert "nan" in declared
    hub_line = next(i for i, line in enumerate(lines) if line.strip().startswith("- hub:"))
    hubs = sorted(p.stem for p in (project / "hubs").glob("*.yaml"))
    assert await labels(hub_line, len(lines[hub_line].split(":")[0]) + 2) == hubs
    # A key that takes free text offers nothing.
    title_line = next(i for i, line in enumerate(lines) if line.startswith("title:"))
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=title_line, character=7)
        )
    )
    assert result is None


async def test_hover_on_an_entry_field_shows_its_schema_description(client: LanguageClient, tmp_path: Path) -> None:
    from generator.schema import Entry, HubRef

    project = tmp_path / "project"
    shutil.copytree(CORPUS, project)
    path = project / "entries/demo/demo-hang.yaml"
    uri = open_doc(client, path, "yaml")
    lines = path.read_text().splitlines()

    async def hover_at(line: int) -> str:
        column = len(lines[line]) - len(lines[line].lstrip(" -"))
        result = await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=column),
            )
        )
        assert result is not None and isinstance(result.contents, types.MarkupContent)
        return result.contents.value

    severity = next(i for i, line in enumerate(lines) if line.startswith("severity:"))
    assert Entry.model_fields["severity"].description in await hover_at(severity)
    indicates = next(i for i, line in enumerate(lines) if line.strip().startswith("indicates:"))
    text = await hover_at(indicates)
    assert HubRef.model_fields["indicates"].description in text and "(HubRef)" in text


async def test_any_document_is_diagnosed_on_request_and_logs_follow_edits(
    client: LanguageClient, tmp_path: Path
) -> None:
    lines = MULTI_RANK.read_text().splitlines()
    notes = tmp_path / "incident.md"
    uri = open_doc(client, notes, "markdown", "\n".join(lines) + "\n")
    await asyncio.sleep(0.5)
    assert uri not in client.diagnostics, "a Markdown file is not a log until the client asks"
    count = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="trainwreck.diagnoseDocument", arguments=[uri])
    )
    assert count == 4
    assert (4, "cuda-oom-fragmentation") in by_line(await diagnostics(client, uri))

    # Two lines inserted above the failure move its diagnostic down, without a save.
    client.diagnostics.pop(uri)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="a\nb\n" + "\n".join(lines) + "\n")],
        )
    )
    assert (6, "cuda-oom-fragmentation") in by_line(await diagnostics(client, uri))
