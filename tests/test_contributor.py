"""The contributor loop: GitHub annotations, validating only some paths, the pre-commit hook, the PR workflow."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from generator import validate as validate_module
from generator.cli import main, parser
from generator.errors import Problem
from tests.conftest import ROOT

HANG = "entries/demo/demo-hang.yaml"
NAN = "entries/demo/demo-nan.yaml"
SEVERITY = f"::error file={NAN},line=5,col=1,title=severity::expected one of: low, medium, high, critical; got 'severe'"


def only_elsewhere(paths: int) -> str:
    """The closing line when the given paths are clean and another file is not."""
    return (
        f"OK: no errors in the {paths} path(s) checked; their warnings are checked once the 1 problem(s) "
        "in other files are fixed.\n"
    )


def validate(root: Path, *args: str, quiet: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `python -m generator validate` on a project, as a contributor or CI would."""
    command = [
        sys.executable,
        "-m",
        "generator",
        "--root",
        str(root),
        *(["--quiet"] if quiet else []),
        "validate",
        *args,
    ]
    return subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=120)


def break_severity(root: Path) -> None:
    """Give demo-nan a severity the vocabulary does not have."""
    path = root / NAN
    text = path.read_text(encoding="utf-8")
    assert "severity: medium\n" in text
    path.write_text(text.replace("severity: medium\n", "severity: severe\n"), encoding="utf-8")


def test_a_broken_entry_is_an_error_annotation_on_its_line(corpus: Path) -> None:
    break_severity(corpus)
    result = validate(corpus, "--format", "github")
    assert result.returncode == 1
    assert result.stdout == SEVERITY + "\n"
    assert result.stderr == "Found 1 problem in 1 file(s).\n"


def test_the_text_format_is_unchanged(corpus: Path) -> None:
    break_severity(corpus)
    expected = (
        f"{NAN}:5:1: severity: expected one of: low, medium, high, critical; got 'severe'\n"
        "Found 1 problem in 1 file(s); nothing was written.\n"
    )
    for args in [(), ("--format", "text")]:
        result = validate(corpus, *args)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", expected)


def test_a_problem_without_a_line_names_only_its_file(corpus: Path) -> None:
    (corpus / "tags.yaml").unlink()
    result = validate(corpus, "--format", "github")
    assert result.returncode == 1
    assert "::error file=tags.yaml::file is missing" in result.stdout.splitlines()


def test_annotation_escapes_what_github_decodes() -> None:
    problem = Problem("entries/a,b:c%.yaml", 3, 7, "x:y,z", "100% of\nthe lines\r: a, b", "keep 5%")
    assert problem.annotation("error") == (
        "::error file=entries/a%2Cb%3Ac%25.yaml,line=3,col=7,title=x%3Ay%2Cz"
        "::100%25 of%0Athe lines%0D: a, b (hint: keep 5%25)"
    )
    assert Problem("site.yaml", 0, 0, "", "file is missing").annotation("warning") == (
        "::warning file=site.yaml::file is missing"
    )


def test_a_file_name_and_a_message_are_escaped_end_to_end(corpus: Path) -> None:
    # A comma in the file name, a percent sign in the value the message quotes.
    text = (corpus / NAN).read_text(encoding="utf-8").replace("severity: medium\n", "severity: 100%\n")
    (corpus / NAN).unlink()
    (corpus / "entries/demo/nan,1.yaml").write_text(text, encoding="utf-8")
    result = validate(corpus, "--format", "github")
    assert result.returncode == 1
    assert result.stdout == (
        "::error file=entries/demo/nan%2C1.yaml,line=5,col=1,title=severity"
        "::expected one of: low, medium, high, critical; got '100%25'\n"
    )


def test_warnings_are_warning_annotations_and_fail_only_in_strict_mode(corpus: Path) -> None:
    result = validate(corpus, "--format", "github")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 8 and all(line.startswith("::warning file=") for line in lines[:7])
    assert f"::warning file={NAN},line=23,col=1,title=fix::fix has no code examples" in lines
    assert (
        f"::warning file={NAN},line=1,col=1,title=scale::section is empty (hint: the page will leave it out)" in lines
    )
    assert lines[-1] == "OK: 2 entries, 1 hubs, 2 signatures, 7 warning(s)."
    assert result.stderr == ""

    assert validate(corpus, "--format", "github", quiet=True).stdout == lines[-1] + "\n"
    strict = validate(corpus, "--format", "github", "--strict", quiet=True)
    assert strict.returncode == 1
    assert strict.stdout.splitlines() == lines[:7]
    assert strict.stderr == "Aborted with 7 warning(s) in strict mode.\n"


def test_annotations_name_files_from_the_top_of_the_repository(corpus: Path) -> None:
    # GitHub places an annotation by its path in the repository, not in the project folder.
    subprocess.run(["git", "init", "-q", str(corpus.parent)], check=True)
    break_severity(corpus)
    result = validate(corpus, "--format", "github")
    assert result.stdout == SEVERITY.replace("file=entries/", "file=project/entries/") + "\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the CLI in this process, from the current folder; return its exit code, stdout and stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_only_the_given_paths_are_reported(
    corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    break_severity(corpus)
    monkeypatch.chdir(corpus)
    for args, paths in [((HANG,), 1), ((HANG, "--format", "github"), 1), ((HANG, "hubs", "--strict"), 2)]:
        assert run(capsys, "validate", *args) == (0, only_elsewhere(paths), ""), args
    for args in [(NAN,), ("entries",), ("entries/demo/",), (".",), (str(corpus / NAN),)]:
        assert run(capsys, "validate", "--format", "github", *args) == (
            1,
            SEVERITY + "\n",
            "Found 1 problem in 1 file(s).\n",
        )
    # Relative to the current folder, the project found by walking up from it.
    monkeypatch.chdir(corpus / "entries/demo")
    assert run(capsys, "validate", "--format", "github", "demo-nan.yaml")[:2] == (1, SEVERITY + "\n")
    assert run(capsys, "validate", "demo-nan.yaml") == (
        1,
        "",
        f"{NAN}:5:1: severity: expected one of: low, medium, high, critical; got 'severe'\n"
        "Found 1 problem in 1 file(s); nothing was written.\n",
    )


def test_warnings_too_are_reported_only_for_the_given_paths(
    corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(corpus)
    assert run(capsys, "validate", "--strict", HANG) == (
        0,
        "OK: 2 entries, 1 hubs, 2 signatures, 0 warning(s) in the 1 path(s) checked.\n",
        "",
    )
    code, out, err = run(capsys, "validate", "--strict", "--format", "github", NAN)
    assert (code, len(out.splitlines()), err) == (1, 7, "Aborted with 7 warning(s) in strict mode.\n")
    assert all(line.startswith(f"::warning file={NAN},") for line in out.splitlines())


def test_paths_outside_the_project_or_missing_are_messages(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(corpus)
    assert run(capsys, "validate", str(tmp_path)) == (1, "", f"error: {tmp_path} is outside the project {corpus}\n")
    assert run(capsys, "validate", "entries/demo/gone.yaml") == (
        1,
        "",
        "error: entries/demo/gone.yaml: no such file or folder\n",
    )


def test_validate_checks_again_only_the_files_changed_since_the_last_check(
    corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[str] = []
    check = validate_module.read_and_check
    monkeypatch.setattr(validate_module, "read_and_check", lambda item: checked.append(item[0]) or check(item))
    monkeypatch.chdir(corpus)
    assert run(capsys, "validate", "--no-cache")[0] == 0
    assert (sorted(checked), (corpus / ".site.cache").exists()) == ([HANG, NAN], False)
    checked.clear()
    assert run(capsys, "validate")[0] == 0
    assert sorted(checked) == [HANG, NAN]
    assert (corpus / ".site.cache/sources.pickle").is_file()
    assert (corpus / ".site.cache/.gitignore").read_text(encoding="utf-8").endswith("\n*\n")  # in any repository
    checked.clear()
    # A file changed since is read and checked again, and its new problem reported; the other is not.
    break_severity(corpus)
    assert run(capsys, "validate", "--format", "github") == (1, SEVERITY + "\n", "Found 1 problem in 1 file(s).\n")
    assert checked == [NAN]
    checked.clear()
    # The build reads what validate kept, and the other way round.
    (corpus / NAN).write_text((corpus / NAN).read_text().replace("severity: severe\n", "severity: medium\n"))
    assert run(capsys, "build", "--no-search")[0] == 0
    assert checked == [NAN]
    checked.clear()
    assert run(capsys, "validate")[:2] == (0, "OK: 2 entries, 1 hubs, 2 signatures, 7 warning(s).\n")
    assert checked == []


def test_the_shipped_content_gives_no_annotation() -> None:
    result = validate(ROOT, "--format", "github", "--strict")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("OK: ") and "::" not in result.stdout


# The pre-commit hook, installed by pre-commit itself from a repository holding the work tree as it is now.


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run git with an identity for commits; its output and its hooks' are in stdout, in order."""
    command = ["git", "-c", "user.name=Contributor", "-c", "user.email=contributor@example.org", *args]
    return subprocess.run(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A git repository of the files git would commit from the work tree, and its commit."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    repo = tmp_path_factory.mktemp("hook") / "trainwreck"
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    for args in [("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "the work tree")]:
        assert git(repo, *args).returncode == 0
    return repo, git(repo, "rev-parse", "HEAD").stdout.strip()


def contributing_config(repo: Path, rev: str) -> str:
    """The .pre-commit-config.yaml CONTRIBUTING.md gives, pointed at a local repository and commit."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "trainwreck-validate" in b]
    config = yaml.safe_load(block)
    assert config["repos"][0]["repo"] == yaml.safe_load((ROOT / "site.yaml").read_text())["repo_url"]
    config["repos"][0].update(repo=str(repo), rev=rev)
    return yaml.safe_dump(config)


def test_the_hook_definition_is_what_pre_commit_reads() -> None:
    from pre_commit.clientlib import load_manifest

    (hook,) = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    assert hook["id"] == "trainwreck-validate"
    assert (hook["entry"], hook["language"], hook["pass_filenames"], hook["require_serial"]) == (
        "trainwreck validate",
        "python",
        True,
        True,
    )
    assert hook["files"] == r"^(entries/.*\.ya?ml|hubs/.*\.ya?ml|tags\.yaml|site\.yaml)$"


def test_the_pre_commit_hook_stops_a_commit_of_a_broken_entry(
    corpus: Path, hook_repo: tuple[Path, str], tmp_path: Path
) -> None:
    # pre-commit installs the hook from the repository and commit that the config names, as for a contributor.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    (corpus / ".pre-commit-config.yaml").write_text(contributing_config(*hook_repo), encoding="utf-8")
    assert git(corpus, "init", "-q").returncode == 0
    install = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=corpus, env=env, capture_output=True)
    assert install.returncode == 0, install.stderr

    def commit(message: str, *extra: str) -> subprocess.CompletedProcess[str]:
        assert git(corpus, "add", "-A").returncode == 0
        return git(corpus, "commit", "-q", "-m", message, *extra, env=env)

    first = commit("the content")
    assert first.returncode == 0, first.stdout
    assert "trainwreck validate......" in first.stdout and first.stdout.rstrip().endswith("Passed")

    break_severity(corpus)
    refused = commit("a severity the vocabulary lacks")
    assert refused.returncode == 1
    assert "Failed\n- hook id: trainwreck-validate\n- exit code: 1\n" in refused.stdout
    assert f"\n{NAN}:5:1: severity: expected one of: low, medium, high, critical; got 'severe'\n" in refused.stdout
    assert git(corpus, "log", "--format=%s").stdout == "the content\n"

    # A commit that does not touch the broken file is not held up by it.
    assert commit("broken on purpose", "--no-verify").returncode == 0
    with (corpus / HANG).open("a", encoding="utf-8") as f:
        f.write("# reviewed\n")
    other = commit("touch demo-hang")
    assert other.returncode == 0, other.stdout
    assert other.stdout.rstrip().endswith("Passed")
    (corpus / "NOTES.md").write_text("not content\n", encoding="utf-8")
    notes = commit("notes only")
    assert notes.returncode == 0 and "(no files to check)Skipped" in notes.stdout


# The pull-request workflow.

WORKFLOW = ROOT / ".github/workflows/pull-request.yml"
COMMANDS = [
    "python -m pip install -e '.[test]'",
    "trainwreck validate --format github",
    "trainwreck build --strict",
    "bash tools/install-test-deps.sh",
    "python -m pytest -q",
]


def test_the_workflow_runs_the_checks_on_every_pull_request() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers and triggers["push"] == {"branches": ["main"]}
    (job,) = workflow["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    # Debian with Python 3.11, where install-test-deps.sh finds a real `chromium` package.
    assert job["container"] == "python:3.11-bookworm"
    steps = job["steps"]
    assert [s.get("uses") for s in steps[:2]] == ["actions/checkout@v4", "actions/setup-node@v4"]
    assert steps[1]["with"]["node-version"] == "20"
    assert [s["run"] for s in steps[2:]] == COMMANDS
    assert all(set(s) <= {"name", "run"} for s in steps[2:]), "no step is skipped by a condition"


def test_the_workflow_commands_are_ones_the_tool_accepts() -> None:
    for command in COMMANDS[1:3]:
        args = parser().parse_args(shlex.split(command)[1:])
        assert args.func.__name__ == f"cmd_{args.command}"
    assert (ROOT / "tools/install-test-deps.sh").is_file()
