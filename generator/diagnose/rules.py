"""The diagnosis engine's knowledge, written once: how real logs mark ranks, hosts and times, how
tracebacks and metric lines are shaped, how findings are ranked, and the report's sentences.

Every regex here is in the subset that Python (with re.ASCII) and JavaScript read alike. The
browser engine (static/diagnose-core.js) gets these tables as static/diagnose-rules.js, generated
at build time by `browser_rules()`, so the two interpreters cannot drift apart.
"""

from __future__ import annotations

import json
from typing import Any

from generator.contract import INDEX_VERSION, ONSETS_KEPT, REPORT_VERSION, SEVERITIES

LIMITS: dict[str, int] = {
    "evidence_lines": 5,  # evidence kept per finding
    "text_limit": 400,  # characters of a line shown as evidence
    "frames_kept": 40,  # innermost frames kept per traceback
    "exceptions_kept": 20,  # exception records kept for the unknown-failure report
    "unknown_shown": 3,  # distinct unknown exceptions reported
    "decoration_passes": 6,  # how many stacked prefixes are peeled off a line
    "onsets_kept": ONSETS_KEPT,  # per finding, the earliest line of each of the lowest ranks (then hosts)
}

ANSI = r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07"

# Rank markers that may appear anywhere in a line (interleaved output keeps several per line); the
# one nearest before the match wins.
RANK_MARKERS = [
    r"\[(?:rank|default)(\d+)\]:",  # torchrun --tee / local_ranks_filter prefixes
    r"\[\d+,(\d+)\]<std(?:out|err)>:",  # Open MPI --tag-output
    r"\((?:VllmWorker|Worker)[\w-]* rank=(\d+)[^)]*\)",  # vLLM workers
    r"\[Rank (\d+)\]",  # ProcessGroupNCCL messages
    r"\[PG [^\]]{0,80} Rank (\d+)\]",  # ProcessGroupNCCL with a process-group prefix: [PG 0 Rank 3]
    r"\(EngineCore_DP(\d+) pid=\d+\)",  # vLLM data-parallel engine cores: the DP rank
]
# Ranks a message names about itself, read only when no prefix marks the line: a launcher's report of
# the worker that failed ("failed (exitcode: -9) local_rank: 5") and its root-cause block.
MESSAGE_RANKS = [
    r"\brank\s*: (\d+) \(local_rank: \d+\)",  # torchrun's "Root Cause" block: the global rank
    r"\blocal_rank: (\d+) \(pid: \d+\)",  # torchrun's "failed (exitcode: …) local_rank: N (pid: …)"
    r"\bglobal[_ ]rank[ =:]{1,3}(\d+)",
]
SLURM_PREFIX = r"^\s*(\d{1,6}): "
# pdsh and similar prefix lines with the host name; a host name carries a digit (node07, gpu-a017).
PDSH_PREFIX = r"^([A-Za-z][\w-]*\d[\w.-]*): "
# NCCL's own header, host:pid:tid [cudaDev], with WARN lines adding the source file:line. Pasted logs
# often mask the host's name and keep its number ("...-48"); the number still tells hosts apart.
NCCL_HEADER = r"(?:^|[\s:>\]])((?:[A-Za-z]|\.{2,}[\w-])[\w.-]*):(\d+):(\d+) \[(\d+)\] (?:\S+:\d+ )?NCCL "
SYSLOG = (
    r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT[\d:.+-]+) ([A-Za-z][\w.-]*) \w[\w./-]*(?:\[\d+\])?: "
)

MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
# Timestamp formats, tried in order. Each names the groups of month, day, hour, minute, second and
# fraction (month_name: the month is a name), the group shown as the time, and the clock it is on.
TIMES: list[dict[str, Any]] = [
    {  # ISO 8601 and Python logging: 2026-11-30 01:02:03,250
        "regex": r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?",
        "fields": [2, 3, 4, 5, 6, 7],
        "text": 0,
        "month_name": False,
        "clock": "wall",
    },
    {  # glog: E1130 01:02:03.123456
        "regex": r"[IWEF]((\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,9}))",
        "fields": [2, 3, 4, 5, 6, 7],
        "text": 1,
        "month_name": False,
        "clock": "wall",
    },
    {  # vLLM: INFO 11-30 01:02:03
        "regex": r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) ((\d\d)-(\d\d) (\d\d):(\d\d):(\d\d))",
        "fields": [2, 3, 4, 5, 6, 0],
        "text": 1,
        "month_name": False,
        "clock": "wall",
    },
    {  # ctime, as dmesg -T prints it: [Mon Nov 30 01:02:03 2026]
        "regex": r"\[?([A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) \d{4})\]?",
        "fields": [2, 3, 4, 5, 6, 0],
        "text": 1,
        "month_name": True,
        "clock": "wall",
    },
    {  # syslog: Nov 30 01:02:03 host …
        "regex": r"^(([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d)) ",
        "fields": [2, 3, 4, 5, 6, 0],
        "text": 1,
        "month_name": True,
        "clock": "wall",
    },
    {  # dmesg: [12345.678901], seconds since boot
        "regex": r"^\[\s*(\d+\.\d+)\]",
        "fields": [],
        "text": 1,
        "month_name": False,
        "clock": "boot",
    },
]

FILE_RANK = r"(?:^|[^a-z])(?:rank|proc|worker)[-_.]?(\d+)"  # read case-insensitively
FILE_HOST = r"^([A-Za-z][A-Za-z-]*\d+)(?:[._-]|$)"

# What a line may carry before the text a program printed: rank, launcher, CI-runner and logging
# prefixes, timestamps and levels. Peeled off, repeatedly, before tracebacks and metrics are read.
DECORATION = (
    r"^(?:\s*\[(?:rank|default)\d+\]:"
    r"|\s*\[\d+,\d+\]<std(?:out|err)>:"
    r"|\s*\((?:VllmWorker|Worker|EngineCore)[^)]{0,120}\)"  # vLLM workers and engine cores
    r"|\s*\((?:[\w.-]+ )?pid=\d+[^)]{0,120}\)"  # Ray actors and tasks: (CommandActor pid=552, ip=…)
    r"|\s*\d{1,6}: "
    r"|\s*[A-Za-z][\w-]*\d[\w.-]*: (?=\S)"
    r"|\s*\|? ?\[?\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?\]?(?: ?[|,-] ?| )"
    r"|\s*(?:\[\s*\d+\.\d+\]|\d\d:\d\d:\d\d(?:[.,]\d+)?) "
    r"|\s*\[?[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+(?: +\d+)? [\w./\\-]+:\d+\] "  # glog; torchrun brackets it
    r"|\s*\[?(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\]?(?: \d\d-\d\d \d\d:\d\d:\d\d)?(?: \[[\w.-]+:\d+\])?"
    r"(?: ?[:|-] ?| )"
    r"|\s*[\w.]+ - (?:INFO|WARNING|ERROR|DEBUG|CRITICAL) - "
    r"|\s*(?:stdout|stderr) ?[|:] "  # a stream name between pipes, as FastChat and supervisors log
    r"|[\w.-]+ +\| "  # docker compose: the service name, padded, then a pipe
    r"|\s?\*\*(?=[A-Za-z_])"  # Markdown bold around a pasted error line; indented code lines keep theirs
    r"|\s*\| )"
)

# Python tracebacks. A frame's path, line and function are groups 1-3 of either frame form.
TRACEBACK: dict[str, str] = {
    "header": r"Traceback \(most recent call last\)",
    "frame": r"^\s*(?:> )?File \"([^\"]+)\", line (\d+), in (\S+)",
    # rich and other box-drawn tracebacks: "│ /path/to/file.py:123 in function   │"
    "box_frame": r"^│\s*(\S+\.py):(\d+) in (\S+)",
    # A frame line wrapped at the terminal's width: its line number or function is on the next line.
    "frame_partial": r"^\s*(?:> )?File \"[^\"]+\", line \d+(?:, in)?\s*$",
    "box_partial": r"^│\s*\S+\.py:\d*\s*│?\s*$",
    "chain": r"^(?:During handling of the above exception, another exception occurred|"
    r"The above exception was the direct cause of the following exception):",
    "exception": r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:Error|Exception|Exit|Interrupt|Failed|Failure|Unsupported|"
    r"Fault|Timeout|Iteration))(?:: (.*?))?(?:\*\*)?$",
    # The package that raised: the folder under site-packages, or the first name of a dotted exception.
    "package": r"(?:site|dist)-packages/([A-Za-z_]\w*)",
    "stdlib": r"/lib/python3\.\d+/(?!site-packages|dist-packages)",
}
# Dotted exception types whose first name is not a package.
BUILTIN_MODULES = ["builtins", "__main__"]

# Error lines of systems that print no Python exception: when no entry explains a log, the first
# of these that no signature matched is reported as what the log shows (with `kind` as its name,
# and the first group, when there is one, added to it: "Xid 109"), raised in `package`.
ERROR_LINES: list[dict[str, str]] = [
    {"kind": "NCCL WARN", "regex": r"\bNCCL WARN (.+)$", "literal": "NCCL WARN ", "package": "nccl"},
    {
        "kind": "Xid",
        "regex": r"NVRM: Xid \([^)]{0,40}\): (\d+), ?(.*)$",
        "literal": "NVRM: Xid (",
        "package": "the NVIDIA kernel driver",
    },
    # CPython's interpreter when the script to run is missing (Modules/main.c).
    {
        "kind": "python: can't open file",
        "regex": r": can't open file '([^']{1,300})': \[Errno \d+\] (.*)$",
        "literal": ": can't open file '",
        "package": "python",
    },
]

# torchrun's failure report names, per failed worker, its host and global rank on lines of their own;
# the lines of that record (its "traceback : Signal 9 (SIGKILL) …") belong to that rank and host.
LAUNCHER_RECORD = {
    "open": r"^(?:Root Cause \(first observed failure\)|Failures):",
    "field": r"^(host|rank) {6}: ([\w.-]+)",
    "close": r"^={20,}\s*$",
}

# What puts a line in front of the grammar: the scan reads a line only when its text matches one of
# these patterns (or a signature). Each names literals, one of which every match contains: the
# browser's scanner looks for those (JSON-escaped quotes are added automatically).
STRUCTURE: list[dict[str, Any]] = [
    {"regex": r"Traceback \(most recent call last\)", "literals": ["Traceback (most recent call last)"]},
    {"regex": r"File \"[^\"]+\", line \d+, in ", "literals": ['File "']},
    {"regex": r"│\s*\S+\.py:\d+ in \S", "literals": ["│"]},
    {"regex": r"During handling of the above exception", "literals": ["During handling of the above exception"]},
    {"regex": r"The above exception was the direct cause", "literals": ["The above exception was the direct cause"]},
    {
        "regex": r"(?:Error|Exception|Exit|Interrupt|Failed|Failure|Unsupported|Fault|Timeout|Iteration)(?::|[ \t]*$)",
        "literals": [
            "Error",
            "Exception",
            "Exit",
            "Interrupt",
            "Failed",
            "Failure",
            "Unsupported",
            "Fault",
            "Timeout",
            "Iteration",
        ],
    },
    {"regex": r"Root Cause \(first observed failure\):", "literals": ["Root Cause (first observed failure):"]},
    {"regex": r"Failures:", "literals": ["Failures:"]},
    {"regex": r"(?:host|rank) {6}: ", "literals": ["host      : ", "rank      : "]},
    {"regex": r"={20}", "literals": ["=" * 20]},
    *({"regex": e["regex"], "literals": [e["literal"]]} for e in ERROR_LINES),
]

# A metric's value as printed, and its name (up to four words).
NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|NAN|inf|Inf|INF|infinity|Infinity)"
METRIC_NAME = r"[A-Za-z][\w/.-]*(?: [A-Za-z][\w/.-]*){0,3}"
# The metric-line readers, tried in this order on each line; each yields (name, value) readings.
METRIC = {
    # "key: value", "key=value", "'key': value" (Trainer dicts), Megatron's "| key: value |".
    "pair": rf"(?:^|[\s|,{{(\[])['\"]?({METRIC_NAME})['\"]? ?[:=]\s*['\"]?({NUMBER})(?![\w.])",
    # A list of readings in order: "losses=[2.31, nan, nan]".
    "list": r"(?:^|[\s|,{(])['\"]?([A-Za-z][\w/.-]*)['\"]? ?[:=] ?\[([^\[\]]{1,2000})\]",
    "item": rf"^\s*({NUMBER})\s*$",
}
# A metric name as printed becomes the index's name: lower case, each run of these characters "_".
METRIC_SEPARATORS = r"[ _/.-]+"
# What may stand between a metric's name and its value; the browser's scanner spells these out.
METRIC_JOINS = [q + sp + op for q in ("", "'", '"') for sp in ("", " ") for op in (":", "=")]

# Report order of the roles, and the sentences the report is made of.
# A wrapper comes after what it carries, collateral reports included.
ROLE_ORDER = ["initiating", "independent", "collateral", "wrapper", "note"]
SENTENCES = {
    "suspects": "{noun} {names} printed none of the downstream errors that the other ranks printed, so the "
    "collectives were most likely waiting for {noun_lower} {names}. Read the end of that log and the kernel log "
    "(dmesg -T) of its node: an OOM kill, an Xid or a Python traceback there is the origin.",
    "only_collateral_one_log": "Only {who} was given, and what it shows is usually collateral ({titles}). Add the "
    "other ranks' logs and each node's kernel log (dmesg -T), or rerun with TORCH_NCCL_DUMP_ON_TIMEOUT=1 and "
    "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 so the flight recorder names the rank that stopped first.",
    "only_collateral": "Every finding is usually a downstream report ({titles}); the failure that started it is "
    "not in these logs (ranks seen: {seen}). Add the logs of the remaining ranks and each node's kernel log "
    "(dmesg -T).",
    "placed": "{title} reports a failure of the rank or GPU that prints it, so the job failed first at {where}, "
    "although the error that started it is not in these logs. Read that rank's output before its first matching "
    "line, and its node's kernel log (dmesg -T) for an Xid.",
    "wrapper_only": "{title} carries the error that stopped the worker, but that error is not in these logs. "
    "Read the worker's own output above it (torchrun: the rank's traceback, or --log-dir / "
    "TORCHELASTIC_ERROR_FILE for its error file).",
    "no_clock": "These logs carry no wall-clock timestamps, so the initiating failure is chosen by order of "
    "appearance. Timestamped logs (torchrun --log-dir, or TORCH_CPP_LOG_LEVEL=INFO for glog headers) would "
    "settle which rank failed first.",
    "truncated": "The log stops inside a traceback before its exception line, so the message that names the "
    "failure is missing; paste the lines that follow the last frame.",
}
NEW_COMMAND = "trainwreck new --from-log {file}:{line}"

# The rank timeline (generator/diagnose/timeline.py and diagnose-core.js `timelineSvg`): its layout in
# viewBox units, 360 wide so that a phone shows it near full size, and its sentences.
TIMELINE: dict[str, Any] = {
    "width": 360,
    "plot_left": 76,
    "plot_right": 350,
    "rows_top": 40,
    "row_height": 16,
    "rows_shown": 64,
    "label_chars": 10,
    "named": 10,
    "text": {
        "title": "{Noun} timeline: where each failure first appeared, and which {noun}s printed none of it",
        "first": "{who} first at {when}: {title}.",
        "placed": "{who} failed first; the error that started it is not in the logs.",
        "earliest": "No initiating failure is in the logs; the earliest line is {who}'s, at {when}.",
        "downstream": "{count} {noun} {verb} downstream errors{after}: {titles}.",
        "also": "Also failed: {titles}.",
        "silent": "{Noun} {names} printed none of these lines.",
        "shown": "Showing {shown} of {total} rows.",
        "timed": "Across: time, from the lines' timestamps ({span} in all).",
        "untimed": "No timestamps: across is line order within each file.",
        "more": "\u2026 {count} more {noun}",
        "no_line": "no line",
        "legend": ["initiating", "also found", "collateral", "no line"],
    },
}


def browser_rules() -> str:
    """Return the tables as the ES module static/diagnose-rules.js."""
    tables = {
        "LIMITS": LIMITS,
        "ANSI": ANSI,
        "RANK_MARKERS": RANK_MARKERS,
        "MESSAGE_RANKS": MESSAGE_RANKS,
        "SLURM_PREFIX": SLURM_PREFIX,
        "PDSH_PREFIX": PDSH_PREFIX,
        "NCCL_HEADER": NCCL_HEADER,
        "SYSLOG": SYSLOG,
        "MONTHS": MONTHS,
        "TIMES": TIMES,
        "FILE_RANK": FILE_RANK,
        "FILE_HOST": FILE_HOST,
        "DECORATION": DECORATION,
        "TRACEBACK": TRACEBACK,
        "BUILTIN_MODULES": BUILTIN_MODULES,
        "STRUCTURE": STRUCTURE,
        "LAUNCHER_RECORD": LAUNCHER_RECORD,
        "ERROR_LINES": ERROR_LINES,
        "METRIC": METRIC,
        "METRIC_SEPARATORS": METRIC_SEPARATORS,
        "METRIC_JOINS": METRIC_JOINS,
        "ROLE_ORDER": ROLE_ORDER,
        "SEVERITIES": list(SEVERITIES),
        "INDEX_VERSION": INDEX_VERSION,
        "REPORT_VERSION": REPORT_VERSION,
        "SENTENCES": SENTENCES,
        "NEW_COMMAND": NEW_COMMAND,
        "TIMELINE": TIMELINE,
    }
    body = json.dumps(tables, indent=1, sort_keys=True, ensure_ascii=True)
    return (
        f"// Generated from generator/diagnose/rules.py by `trainwreck build`; do not edit.\nexport default {body};\n"
    )
