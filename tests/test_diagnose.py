"""`trainwreck diagnose` on log files shaped like real ones, and on bad input."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from generator.cli import main
from generator.diagnose.attribute import origin
from tests.vectors import CASES, expected, logs, project


def _cli(args: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "generator", "diagnose", *args], input=stdin, capture_output=True, timeout=120
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_vector_on_the_cli(case: Path, request: pytest.FixtureRequest) -> None:
    result = _cli(["--json", *map(str, logs(case))])
    report = json.loads(result.stdout)
    problems = [line.removeprefix("error: ") for line in result.stderr.decode().splitlines()]
    got = project(report, problems)
    if request.config.getoption("--update-golden"):
        (case / "expected.json").write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert got == expected(case)
    want_code = 2 if got["problems"] else (1 if any(f["role"] != "note" for f in got["findings"]) else 0)
    assert result.returncode == want_code
    assert b"Traceback" not in result.stderr


@pytest.mark.parametrize("engine", ["hyperscan", "re2", "literal"])
def test_both_matchers_find_the_same_hits(engine: str) -> None:
    case = next(c for c in CASES if c.name == "noisy-shapes")
    result = _cli(["--json", "--engine", engine, *map(str, logs(case))])
    assert project(json.loads(result.stdout), []) == expected(case)


def test_json_report_matches_its_published_schema() -> None:
    import jsonschema

    from generator.index import json_schemas

    schema = json_schemas()["diagnosis.schema.json"]
    for case in CASES:
        result = _cli(["--json", *map(str, logs(case))])
        jsonschema.validate(json.loads(result.stdout), schema)


def test_gzip_and_stdin_and_folders_read_like_plain_files(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "watchdog-single-rank")
    raw = logs(case)[0].read_bytes()
    packed = tmp_path / "rank-0.log.gz"
    packed.write_bytes(gzip.compress(raw))
    from_gz = json.loads(_cli(["--json", str(packed)]).stdout)
    from_stdin = json.loads(_cli(["--json", "-"], stdin=raw).stdout)
    from_folder = json.loads(_cli(["--json", str(case / "logs")]).stdout)
    assert from_gz["findings"][0]["first"]["line"] == from_stdin["findings"][0]["first"]["line"] == 5
    assert from_stdin["inputs"] == ["<stdin>"]
    assert (
        from_folder["findings"][0]["entry"] == from_gz["findings"][0]["entry"] == "pg-nccl-watchdog-collective-timeout"
    )
    assert from_gz["findings"][0]["first"]["rank"] == 0


@pytest.mark.parametrize(
    "content,message",
    [
        (b"", "the log is empty"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00", "this is a binary file, not a text log"),
        (b"not gzip at all", "cannot be read as gzip"),
    ],
)
def test_bad_input_is_a_message_and_exit_2(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / ("bad.log.gz" if message.startswith("cannot be read") else "bad.log")
    path.write_bytes(content)
    result = _cli([str(path)])
    assert result.returncode == 2
    assert message in result.stderr.decode()
    assert b"Traceback" not in result.stderr


def test_missing_path_and_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", "/no/such/log"]) == 2
    assert capsys.readouterr().err == "error: /no/such/log: no such file or folder\n"
    result = _cli([])
    assert result.returncode == 2 and b"usage:" in result.stderr


def test_text_report_leads_with_the_initiating_failure() -> None:
    case = next(c for c in CASES if c.name == "xid-initiates-watchdog")
    out = _cli(list(map(str, logs(case)))).stdout.decode()
    lines = out.splitlines()
    assert lines[1].startswith("Most likely cause on node07: Xid 13")
    assert "[INITIATING] Xid 13" in out and "[COLLATERAL] NCCL watchdog timeout" in out
    assert "Fix: " in out and "Verify: " in out


@pytest.mark.parametrize(
    "line,rank,host,time",
    [
        ("[rank3]:[E1130 01:02:03.123456 ProcessGroupNCCL.cpp:1234] boom", 3, None, "1130 01:02:03.123456"),
        ("[default5]:2026-11-30 01:02:03,250 - ERROR - boom", 5, None, "2026-11-30 01:02:03,250"),
        ("[1,7]<stdout>: boom", 7, None, None),
        ("12: boom", 12, None, None),
        ("node07: boom", None, "node07", None),
        ("(VllmWorker rank=2 pid=225) ERROR 11-30 01:02:03 [core.py:123] boom", 2, None, "11-30 01:02:03"),
        ("gpu-b042:61533:61790 [0] NCCL WARN boom", None, "gpu-b042", None),
        ("(EngineCore_DP1 pid=4242) ERROR 11-30 01:02:03 [core.py:708] boom", 1, None, "11-30 01:02:03"),
        ("[12345.678901] NVRM: boom", None, None, "12345.678901"),
        ("Nov 30 01:02:03 node07 kernel: NVRM: boom", None, "node07", "Nov 30 01:02:03"),
    ],
)
def test_origin_reads_real_prefixes(line: str, rank: int | None, host: str | None, time: str | None) -> None:
    where = origin(line, line.index("boom"), None, None)
    assert (where.rank, where.host, where.time) == (rank, host, time)


def test_interleaved_ranks_take_the_nearest_marker() -> None:
    line = "[rank0]: step 11 | loss [rank3]: Exception: boom"
    assert origin(line, line.index("Exception"), None, None).rank == 3
    assert origin(line, line.index("step"), None, None).rank == 0


def test_redacted_excerpt_masks_consistently(tmp_path: Path) -> None:
    log = tmp_path / "rank-0.log"
    log.write_text(
        "[rank0]: token hf_abcdefghijklmnopqrstuvwxyz0123 from 10.1.2.3 at /home/alice/run\n"
        "[rank0]:[E1130 01:12:03.123456 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600047 "
        "milliseconds before timing out. host 10.1.2.3 user /home/alice "
        "key AKIAABCDEFGHIJKLMNOP Bearer abcdef123456789xyz\n"
    )
    out = tmp_path / "excerpt.txt"
    result = _cli([str(log), "--redact", str(out)])
    assert result.returncode == 1
    text = out.read_text()
    assert "10.1.2.3" not in text and "alice" not in text and "AKIA" not in text and "abcdef123456789xyz" not in text
    assert text.count("ip-1") == 1 and "/home/user-1" in text and "<token-1>" in text and "<token-2>" in text


def test_works_outside_the_project_without_a_build(tmp_path: Path) -> None:
    log = tmp_path / "rank-2.log"
    log.write_text("[rank2]: Exception: cuda rng state model-parallel-rng is not added\n")
    result = subprocess.run(
        [sys.executable, "-m", "generator", "diagnose", "--json", str(log)],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert json.loads(result.stdout)["initiating"]["entry"] == "megatron-tp-rng-divergence-deadlock"
    assert not (tmp_path / "site").exists()


def test_the_engine_imports_only_the_contract_of_the_generator() -> None:
    import ast

    folder = Path(__file__).resolve().parent.parent / "generator" / "diagnose"
    for module in folder.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.startswith("generator"):
                    assert name == "generator.contract" or name.startswith("generator.diagnose"), (module.name, name)


@pytest.mark.parametrize(
    "record,message",
    [
        (b"\xff\xfe not utf-8\n", "the index is not UTF-8 text"),
        (b'{"schema_version": 1, "id": "x/1"}\n', "index schema_version 1 is not supported (expected 2)"),
        (b"not json\n", ":1: not JSON"),
    ],
)
def test_a_bad_index_is_a_message_and_exit_2(tmp_path: Path, record: bytes, message: str) -> None:
    index = tmp_path / "signatures.jsonl"
    index.write_bytes(record)
    log = tmp_path / "train.log"
    log.write_text("hello\n")
    result = _cli(["--index", str(index), str(log)])
    assert result.returncode == 2
    assert message in result.stderr.decode()
    assert b"Traceback" not in result.stderr


def test_an_index_record_that_breaks_the_contract_is_named(tmp_path: Path) -> None:
    packaged = Path(__file__).resolve().parent.parent / "generator" / "data" / "signatures.jsonl"
    good = json.loads(packaged.read_text(encoding="utf-8").splitlines()[0])
    index = tmp_path / "signatures.jsonl"
    for broken, message in [
        ({"severity": "severe"}, "severity: Input should be"),
        ({"pattern": "(a"}, "does not compile"),
        # The build's rules hold for an index from elsewhere: each of these would hang a scan.
        ({"pattern": "(a|aa)*c"}, ":1: record: unsafe regex: a repeated group whose optional end"),
        ({"pattern": r"\s*\s*\s*\s*:x"}, ":1: record: unsafe regex: adjacent repeats"),
        ({"pattern": "(?:(?:a{0,1000}){0,1000}){0,1000}b"}, ":1: record: unsafe regex: nested bounded repeats"),
    ]:
        record = good | broken | ({"kind": "regex"} if "pattern" in broken else {})
        index.write_text(json.dumps(record) + "\n")
        result = _cli(["--index", str(index), str(index)])
        assert result.returncode == 2 and message in result.stderr.decode(), result.stderr
        assert b"Traceback" not in result.stderr


def test_a_matcher_that_is_not_installed_is_a_message_and_exit_2(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("hello\n")
    script = (
        "import sys; sys.modules['hyperscan'] = None; from generator.cli import main; "
        f"sys.exit(main(['diagnose', '--engine', 'hyperscan', {str(log)!r}]))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert result.returncode == 2
    assert "--engine hyperscan needs the Python package hyperscan" in result.stderr.decode()
    assert b"Traceback" not in result.stderr
    assert _cli(["--engine", "grep", str(log)]).returncode == 2


def test_an_exception_no_entry_covers_is_named_with_its_package_and_a_scaffold_command(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/work/train.py", line 12, in <module>\n'
        "[rank0]:     main()\n"
        '[rank0]:   File "/opt/venv/lib/python3.11/site-packages/timm/models/_factory.py", line 126, '
        "in create_model\n"
        "[rank0]:     raise RuntimeError('Unknown model (%s)' % model_name)\n"
        "[rank0]: RuntimeError: Unknown model (vit_hgue_patch14_224)\n"
    )
    result = _cli(["--json", str(log)])
    assert result.returncode == 0, "an unknown exception is not a known failure"
    report = json.loads(result.stdout)
    assert report["findings"] == []
    [unknown] = report["unknown"]
    assert unknown["exception"] == "RuntimeError" and unknown["package"] == "timm"
    assert unknown["message"] == "Unknown model (vit_hgue_patch14_224)"
    assert unknown["frames"][-1].endswith("timm/models/_factory.py:126 in create_model")
    assert unknown["command"] == f"trainwreck new --from-log {log}:6"
    text = _cli([str(log)]).stdout.decode()
    assert "Unknown failure: RuntimeError raised in timm" in text
    assert f"trainwreck new --from-log {log}:6" in text


def test_an_error_line_pasted_in_markdown_bold_is_read_without_the_markers(tmp_path: Path) -> None:
    log = tmp_path / "issue.md"
    log.write_text(
        "[rank1]:     raise RuntimeError(\n"
        "[rank1]: **RuntimeError: world_size (8) is not equal to tensor_model_parallel_size (4)**\n"
        "    **kwargs) is code, not an error line\n"
    )
    [unknown] = json.loads(_cli(["--json", str(log)]).stdout)["unknown"]
    assert unknown["exception"] == "RuntimeError"
    assert unknown["message"] == "world_size (8) is not equal to tensor_model_parallel_size (4)"


def _report(log: Path, text: str) -> dict:
    """Write a log and return the CLI's JSON report on it."""
    log.write_text(text)
    return json.loads(_cli(["--json", str(log)]).stdout)


def test_a_failure_reported_by_the_rank_that_suffered_it_places_the_origin(tmp_path: Path) -> None:
    # NCCL's "Cuda failure" reports a CUDA error of the process that prints it: collateral of an error
    # that is not in the log, but on that host, while another host's lines are healthy.
    log = tmp_path / "pdsh.log"
    report = _report(
        log,
        "gpu-a1: gpu-a1:4276:5851 [1] NCCL INFO Using network IB\n"
        "gpu-b7: gpu-b7:2918:4483 [4] init.cc:263 NCCL WARN Cuda failure 'initialization error'\n"
        "gpu-b7: gpu-b7:2919:2919 [5] misc/cudawrap.cc:33 NCCL WARN Cuda failure 'initialization error'\n",
    )
    assert report["initiating"] is None and report["initiating_host"] == "gpu-b7"
    assert [f["role"] for f in report["findings"]] == ["collateral"]
    assert "so the job failed first at gpu-b7" in report["missing"][0]
    assert "Failed first at gpu-b7;" in _cli([str(log)]).stdout.decode()
    # Two hosts reporting their own failures place nothing.
    report = _report(
        log,
        log.read_text() + "gpu-a1: gpu-a1:4276:4277 [1] init.cc:263 NCCL WARN Cuda failure 'initialization error'\n",
    )
    assert report["initiating_host"] is None and "failed first" not in " ".join(report["missing"])


def test_new_from_log_scaffolds_the_signature_and_example(corpus: Path) -> None:
    log = corpus / "train.log"
    log.write_text("noise\n[rank0]: RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n")
    assert main(["--root", str(corpus), "new", "--from-log", f"{log}:2", "--system", "cuda"]) == 0
    path = corpus / "entries" / "cuda" / "runtime-error-flash-attention-only-supports.yaml"
    text = path.read_text(encoding="utf-8")
    assert "  - literal: 'RuntimeError: FlashAttention only supports Ampere GPUs or newer.'" in text
    assert "      - '[rank0]: RuntimeError: FlashAttention only supports Ampere GPUs or newer.'" in text
    assert main(["--root", str(corpus), "new", "--from-log", f"{log}:9"]) == 1


def test_a_log_that_stops_inside_a_traceback_says_the_message_is_missing(tmp_path: Path) -> None:
    report = _report(
        tmp_path / "train.log",
        "Traceback (most recent call last):\n"
        '  File "/work/train.py", line 12, in <module>\n'
        '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl\n',
    )
    assert any("stops inside a traceback" in m for m in report["missing"])


def test_merge_names_the_node_that_failed_first(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "xid-initiates-watchdog")
    dmesg = [p for p in logs(case) if "dmesg" in p.name]
    ranks = [p for p in logs(case) if "dmesg" not in p.name]
    (tmp_path / "node07.json").write_bytes(_cli(["--json", *map(str, dmesg)]).stdout)
    (tmp_path / "node08.json").write_bytes(_cli(["--json", *map(str, ranks)]).stdout)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "generator",
            "merge",
            "--json",
            str(tmp_path / "node07.json"),
            str(tmp_path / "node08.json"),
        ],
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    merged = json.loads(result.stdout)
    whole = json.loads(_cli(["--json", *map(str, logs(case))]).stdout)
    assert merged["initiating"]["entry"] == whole["initiating"]["entry"] == "xid-13-graphics-engine-exception"
    assert merged["initiating_host"] == "node07"
    assert [f["entry"] for f in merged["findings"]] == [f["entry"] for f in whole["findings"]]
    assert merged["inputs"][0].startswith("node07/")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = subprocess.run([sys.executable, "-m", "generator", "merge", str(bad)], capture_output=True, timeout=60)
    assert result.returncode == 2 and b"not a version 2 report" in result.stderr


def test_a_cached_hyperscan_database_proposes_what_a_compiled_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("hyperscan")
    from generator.diagnose.match import HyperscanMatcher
    from generator.diagnose.signatures import load_index

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    signatures = load_index()
    chunk = b"".join(logs(c)[0].read_bytes() for c in CASES if c.name != "bad-inputs")
    compiled = HyperscanMatcher(signatures)
    [cache] = list((tmp_path / "trainwreck").glob("hyperscan-*.db"))
    loaded = HyperscanMatcher(signatures)
    assert sorted(loaded.candidates(chunk)) == sorted(compiled.candidates(chunk)) != []
    cache.write_bytes(b"broken")
    assert sorted(HyperscanMatcher(signatures).candidates(chunk)) == sorted(compiled.candidates(chunk))


def _metric_index(tmp_path: Path, detector: dict[str, object]) -> Path:
    packaged = Path(__file__).resolve().parent.parent / "generator" / "data" / "signatures.jsonl"
    base = json.loads(packaged.read_text(encoding="utf-8").splitlines()[0])
    record = base | {
        "id": "demo-metric/1",
        "entry": "demo-metric",
        "kind": "metric",
        "pattern": "demo",
        "required": "",
        "calls": [],
        "detector": {"threshold": None, "within": None, "after_finite": False, **detector},
        "refines": [],
        "wraps": [],
        "examples": [],
        "collateral": False,
        "search_key": False,
        "lead": False,
        "severity": "high",
    }
    index = tmp_path / "signatures.jsonl"
    index.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return index


MEGATRON = (
    " iteration {i:8d}/  500000 | consumed samples: {c} | elapsed time per iteration (ms): 1234.5 | "
    "learning rate: 1.000E-04 | global batch size:  1024 | lm loss: {loss} | loss scale: {scale} | "
    "grad norm: {norm} | number of skipped iterations: {skipped:3d} | number of nan iterations:   0 |"
)


@pytest.mark.parametrize(
    "detector,values,first",
    [
        # grad norm NaN for three readings in a row, after one harmless NaN at the start.
        ({"metrics": ["grad_norm"], "condition": "non-finite", "count": 3}, ["nan", "1.2", "nan", "nan", "nan"], 5),
        (
            {"metrics": ["loss_scale"], "condition": "halved", "count": 4},
            ["65536", "32768", "32768", "16384", "8192", "4096"],
            6,
        ),
        ({"metrics": ["loss_scale"], "condition": "below", "count": 2, "threshold": 1.0}, ["2", "1", "0.5", "0.25"], 4),
        (
            {"metrics": ["lm_loss"], "condition": "jump", "count": 1, "threshold": 2.0},
            ["3.1", "2.5", "2.4", "310.0"],
            4,
        ),
        (
            {"metrics": ["number_of_skipped_iterations"], "condition": "above", "count": 3, "threshold": 0},
            ["0", "1", "1", "2"],
            4,
        ),
    ],
)
def test_metric_detectors_fire_on_their_shape_and_stay_quiet_before(
    tmp_path: Path, detector: dict[str, object], values: list[str], first: int
) -> None:
    index = _metric_index(tmp_path, detector)
    metric = detector["metrics"][0]  # type: ignore[index]
    lines = []
    for i, v in enumerate(values, start=1):
        fields = {"i": i * 10, "c": i * 10240, "loss": "2.3", "scale": "1.0", "norm": "0.9", "skipped": 0}
        key = {"grad_norm": "norm", "loss_scale": "scale", "lm_loss": "loss", "number_of_skipped_iterations": "skipped"}
        fields[key[str(metric)]] = int(v) if metric == "number_of_skipped_iterations" else v
        lines.append(f"[rank0]: {MEGATRON.format(**fields)}")
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = json.loads(_cli(["--json", "--index", str(index), str(log)]).stdout)
    [finding] = report["findings"]
    assert finding["first"]["line"] == first and finding["first"]["via"] == "metric"
    assert finding["confidence"] == "medium", "metric evidence alone is not proof"
    log.write_text("\n".join(lines[: first - 1]) + "\n", encoding="utf-8")
    assert json.loads(_cli(["--json", "--index", str(index), str(log)]).stdout)["findings"] == []


def test_metric_readers_read_trainer_dicts_and_progress_bars(tmp_path: Path) -> None:
    index = _metric_index(tmp_path, {"metrics": ["grad_norm", "train_loss"], "condition": "non-finite", "count": 2})
    log = tmp_path / "train.log"
    log.write_text(
        "{'loss': 2.31, 'grad_norm': nan, 'learning_rate': 4.5e-06, 'epoch': 0.66}\n"
        "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 4.4e-06, 'epoch': 0.67}\n"
        "Epoch 0:  12%|#2        | 120/1000 [00:10<01:20, 11.0it/s, v_num=0, train_loss=nan]\n",
        encoding="utf-8",
    )
    report = json.loads(_cli(["--json", "--index", str(index), str(log)]).stdout)
    assert [(e["line"], e["via"]) for e in report["findings"][0]["evidence"]] == [(2, "metric"), (3, "metric")]


def test_metric_readers_read_lists_item_by_item(tmp_path: Path) -> None:
    index = _metric_index(tmp_path, {"metrics": ["losses"], "condition": "non-finite", "count": 3})
    log = tmp_path / "train.log"
    log.write_text(
        "losses=[0.25, nan, nan]\nstep 9 losses: [0.3, nan]\ndone: losses=[inf, nan, nan]\n", encoding="utf-8"
    )
    report = json.loads(_cli(["--json", "--index", str(index), str(log)]).stdout)
    # The finite 0.3 breaks the run on line 2; line 3 holds three non-finite readings on its own.
    assert [e["line"] for e in report["findings"][0]["evidence"]] == [3]
    log.write_text("losses=[0.25, nan, nan]\nlosses=[0.3]\nlosses=[tensor(nan), nan]\n", encoding="utf-8")
    assert json.loads(_cli(["--json", "--index", str(index), str(log)]).stdout)["findings"] == []


@pytest.mark.parametrize(
    "window,values,fires",
    [
        ({"within": 1}, ["nan", "nan", "nan"], True),
        ({"within": 1}, ["2.5", "nan", "nan", "nan"], False),  # it was finite first: another failure
        ({"within": 10, "after_finite": True}, ["2.5", "nan", "nan", "nan"], True),
        ({"within": 10, "after_finite": True}, ["nan", "nan", "nan"], False),  # never finite
        ({"within": 2, "after_finite": True}, ["2.5", "2.4", "2.3", "nan", "nan", "nan"], False),  # began too late
    ],
)
def test_metric_detector_windows_say_when_the_run_may_begin(
    tmp_path: Path, window: dict[str, object], values: list[str], fires: bool
) -> None:
    index = _metric_index(tmp_path, {"metrics": ["loss"], "condition": "non-finite", "count": 3, **window})
    log = tmp_path / "train.log"
    # Two names of the same detector on one line are one reading, not two.
    log.write_text("".join(f"step {i}: loss={v}, loss={v}\n" for i, v in enumerate(values)), encoding="utf-8")
    findings = json.loads(_cli(["--json", "--index", str(index), str(log)]).stdout)["findings"]
    assert bool(findings) is fires
    if fires:
        assert findings[0]["first"]["line"] == len(values)


def test_frame_signatures_name_a_failure_whose_message_is_missing(tmp_path: Path) -> None:
    index = _metric_index(tmp_path, {"metrics": ["x"], "condition": "non-finite", "count": 1})
    record = json.loads(index.read_text(encoding="utf-8"))
    calls = [
        {"path": "torch/utils/cpp_extension.py", "function": "_check_cuda_version"},
    ]
    record |= {"kind": "frames", "detector": None, "calls": calls, "pattern": "cpp_extension.py in _check_cuda_version"}
    index.write_text(json.dumps(record) + "\n", encoding="utf-8")
    frames = (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/work/train.py", line 3, in <module>\n'
        '[rank0]:   File "/opt/venv/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 412, '
        "in _check_cuda_version\n"
    )
    log = tmp_path / "train.log"
    box = tmp_path / "rich.log"
    log.write_text(frames, encoding="utf-8")
    box.write_text(
        "╭──── Traceback (most recent call last) ────╮\n"
        "│ /opt/venv/lib/python3.10/site-packages/torch/utils/cpp_extension.py:412 in _check_cuda_version │\n",
        encoding="utf-8",
    )
    # The same frames wrapped at a terminal's width, in the middle of the line number or before the function.
    wrapped = tmp_path / "wrapped.log"
    wrapped.write_text(
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 41\n'
        "2, in _check_cuda_version        \n",
        encoding="utf-8",
    )
    narrow = tmp_path / "narrow.log"
    narrow.write_text(
        "╭──── Traceback (most recent call last) ────╮\n"
        "│ /opt/venv/lib/python3.10/site-packages/torch/utils/cpp_extension.py:4 │\n"
        "│ 12 in _check_cuda_version                                              │\n",
        encoding="utf-8",
    )
    for path, line in ((log, 3), (box, 2), (wrapped, 2), (narrow, 2)):
        report = json.loads(_cli(["--json", "--index", str(index), str(path)]).stdout)
        [finding] = report["findings"]
        assert (finding["first"]["line"], finding["first"]["via"]) == (line, "frames"), path.name
    # A traceback through other functions names nothing.
    log.write_text(frames.replace("_check_cuda_version", "load"), encoding="utf-8")
    assert json.loads(_cli(["--json", "--index", str(index), str(log)]).stdout)["findings"] == []
    # A message the traceback printed, even run together with another process's output so that it
    # is no exception line, names the failure; the frames it was raised in then say nothing.
    message = record | {
        "id": "demo-message/1",
        "entry": "demo-message",
        "kind": "literal",
        "pattern": "The detected CUDA version",
        "required": "The detected CUDA version",
        "calls": [],
    }
    lead = message | {"id": "demo-lead/1", "entry": "demo-lead", "pattern": "building", "required": "building"}
    lead["lead"] = True
    index.write_text("".join(json.dumps(r) + "\n" for r in (record, message, lead)), encoding="utf-8")
    log.write_text(
        frames + "[rank0]: RuntimeError    : hook(self)The detected CUDA version (12.1) mismatches\n", encoding="utf-8"
    )
    report = json.loads(_cli(["--json", "--index", str(index), str(log)]).stdout)
    assert [(f["entry"], f["first"]["via"]) for f in report["findings"]] == [("demo-message", "line")]
    # A lead inside the traceback is no such message.
    log.write_text(frames.replace("in <module>\n", "in <module>\n[rank0]: building extension\n"), encoding="utf-8")
    report = json.loads(_cli(["--json", "--index", str(index), str(log)]).stdout)
    assert [f["entry"] for f in report["findings"] if f["role"] != "note"] == ["demo-metric"]


def test_skipped_iterations_are_a_lead_until_they_persist(tmp_path: Path) -> None:
    def line(i: int, skipped: int) -> str:
        fields = {"i": i, "c": i * 1024, "loss": "2.3", "scale": "1.0", "norm": "0.9", "skipped": skipped}
        return MEGATRON.format(**fields)

    log = tmp_path / "train.log"
    # A healthy fp16 start: the scale search skips iterations for a few intervals, then none.
    log.write_text("\n".join(line(i, 1 if i <= 12 else 0) for i in range(1, 60)) + "\n", encoding="utf-8")
    report = json.loads(_cli(["--json", str(log)]).stdout)
    assert [(f["entry"], f["role"]) for f in report["findings"]] == [("megatron-skipped-iterations", "note")]
    assert _cli([str(log)]).returncode == 0
    # Every interval skipped, interval after interval: the weights stopped updating.
    log.write_text("\n".join(line(i, 10) for i in range(1, 40)) + "\n", encoding="utf-8")
    report = json.loads(_cli(["--json", str(log)]).stdout)
    [finding] = report["findings"]
    assert finding["entry"] == "megatron-skipped-iterations" and finding["role"] != "note"
    assert finding["count"] == 39 and _cli([str(log)]).returncode == 1


def test_a_redacted_excerpt_that_cannot_be_written_is_a_message_and_exit_2(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
    excerpt = tmp_path / "no" / "such" / "folder" / "x.txt"
    result = _cli(["--redact", str(excerpt), str(log)])
    assert result.returncode == 2
    assert result.stderr.decode().endswith(f"error: cannot write the excerpt to {excerpt}: No such file or directory\n")
    assert b"Traceback" not in result.stderr


def test_control_characters_in_a_log_are_shown_never_sent_to_the_terminal(tmp_path: Path) -> None:
    # A reset (ESC c), a charset switch (ESC ( 0), a bell and a backspace inside a quoted line.
    log = tmp_path / "train.log"
    log.write_bytes(
        b"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered \x1bc \x1b(0 \x07\x08!\n"
    )
    out = _cli([str(log)]).stdout.decode()
    assert not any(ord(c) < 32 and c != "\n" for c in out)
    assert "encountered \u241bc \u241b(0 \u2407\u2408!" in out


def test_markdown_report_for_an_issue_thread() -> None:
    case = next(c for c in CASES if c.name == "xid-initiates-watchdog")
    result = _cli(["--markdown", *map(str, logs(case))])
    out = result.stdout.decode()
    assert result.returncode == 1
    lines = out.splitlines()
    assert lines[0] == f"**Trainwreck diagnosis** of {len(logs(case))} log(s), 11 lines"
    assert lines[2].startswith("**Most likely cause on node07: [Xid 13: ")
    assert "| # | Role | Failure | Ranks | First at |" in lines
    assert any(line.startswith("| 1 | initiating | [Xid 13: ") for line in lines)
    assert "- **Fix:** " in out and "```text" in out
    both = _cli(["--markdown", "--json", *map(str, logs(case))])
    assert both.returncode == 2 and b"not allowed with argument" in both.stderr
