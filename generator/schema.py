"""The typed models of entries, hubs, tags and site settings, and their JSON Schema."""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from generator.taxonomy import CATEGORIES, SYSTEMS

ID_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
# Provenance of a signature: where upstream prints the text.
SOURCE_PATTERN = r"^(pypi:[A-Za-z0-9_.-]+==[^:\s]+:\S+|docs:https?://\S+|[\w.-]+/[\w.-]+(@[\w./-]+)?:\S+)$"

Id = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=80)]
# A name a code block uses that the reader's own program supplies (`model`, `args.lr`).
ContextName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][\w.]*$", max_length=60)]
CONTEXT_DOC = (
    "Names the code uses that the reader's own program must supply (`model`, `optimizer`), shown above "
    "the block; everything else it uses is imported or defined in the block."
)
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Line = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]
# Signature text is matched byte for byte, so its spaces are kept as written.
PatternText = Annotated[str, StringConstraints(min_length=3, max_length=300, pattern=r"\S")]
# Real log lines can be long (a watchdog line with its WorkNCCL record runs past 300 characters).
LogLine = Annotated[str, StringConstraints(min_length=1, max_length=4000, pattern=r"\S")]
URL_PATTERN = r"^https?://[^\s<>\"]+$"
Url = Annotated[str, StringConstraints(pattern=URL_PATTERN)]


def _known(vocabulary: dict[str, Any], what: str) -> Any:
    def check(value: str) -> str:
        if value not in vocabulary:
            raise ValueError(f"unknown {what} {value!r}")
        return value

    return check


CategoryId = Annotated[str, AfterValidator(_known(CATEGORIES, "category"))]
SystemId = Annotated[str, AfterValidator(_known(SYSTEMS, "system"))]


class Model(BaseModel):
    """Base of every authoring model: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class SystemRef(Model):
    """A system the failure involves."""

    id: SystemId = Field(description="Id of a known system (see `trainwreck schema`).")
    note: Line | None = Field(
        default=None, description="How this failure involves it, e.g. 'NCCL with SHARP in-network reduction'."
    )


class HubRef(Model):
    """The entry's row in a hub's comparison table."""

    hub: Id = Field(description="Id of the hub (a file in hubs/).")
    indicates: Line = Field(description="What the error actually indicates, in one line.")
    tell_apart: Line | None = Field(
        default=None,
        description="The check, flag or environment variable that tells it apart from its neighbours.",
    )
    group: Id | None = Field(
        default=None, description="The hub group this row belongs to, when the hub defines groups."
    )


class Signature(Model):
    """Text a log shows when this failure happens, and where upstream prints it."""

    literal: PatternText | None = Field(
        default=None, description="Exact text, matched as a case-sensitive substring of a log line."
    )
    regex: PatternText | None = Field(
        default=None,
        description=(
            "A pattern in the safe subset shared by Python and JavaScript: no backreferences, "
            "no look-around, no nested unbounded quantifiers. Bound interpolated values "
            "(`[\\d.]+ [GM]iB`) rather than spanning the line with `.*`."
        ),
    )
    source: Annotated[str, StringConstraints(pattern=SOURCE_PATTERN)] = Field(
        description=(
            "Where upstream prints the text: `owner/repo:path`, `pypi:package==version:path` or `docs:https://…`."
        )
    )
    examples: list[LogLine] = Field(
        min_length=1, description="Real-shaped log lines (rank prefixes, timestamps) the signature must match."
    )
    search_key: bool = Field(
        default=False,
        description=(
            "True when the wording could not be confirmed upstream: the text is shown as a search "
            "key, never as exact log output."
        ),
    )
    note: Line | None = Field(default=None, description="What this particular line tells the reader.")
    lead: bool = Field(
        default=False,
        description=(
            "True when healthy runs print this line by design (a warning a normal fine-tune shows): the "
            "diagnosis reports it as a note, never as the failure."
        ),
    )
    refines: list[Id] = Field(
        default_factory=list,
        description=(
            "Entries whose signatures also match these examples, on purpose: this signature says more about "
            "the same line (fragmentation refines out-of-memory), so where both match a line, this one wins. "
            "Any other entry that matches an example is an error."
        ),
    )

    @model_validator(mode="after")
    def _one_pattern(self) -> Signature:
        if (self.literal is None) == (self.regex is None):
            raise ValueError("give exactly one of 'literal' or 'regex'")
        return self

    @property
    def kind(self) -> Literal["literal", "regex"]:
        """Whether the pattern is a literal or a regex."""
        return "literal" if self.literal is not None else "regex"

    @property
    def pattern(self) -> str:
        """The literal text or the regex source."""
        return self.literal if self.literal is not None else str(self.regex)


class Symptom(Model):
    """One row of the symptom table."""

    symptom: Text = Field(description="What the engineer sees (Markdown).")
    cause: Text = Field(description="Why that particular symptom happens (Markdown).")


class Misreading(Model):
    """A wrong diagnosis engineers reach for, and how to rule it out."""

    diagnosis: Line = Field(description="The failure it is usually mistaken for.")
    why_wrong: Text = Field(description="Why that reading is wrong here (Markdown).")
    tell_apart: Text = Field(description="The observation or test that separates the two (Markdown).")


class Check(Model):
    """One step of the confirmation checklist."""

    step: Text = Field(description="What to check (Markdown).")
    command: Text | None = Field(default=None, description="A command or snippet that performs the check.")
    language: Id = Field(default="shell", description="Pygments language of `command`.")
    context: list[ContextName] = Field(default_factory=list, description=CONTEXT_DOC)
    outcome: Text = Field(description="What each result means (Markdown).")


class Detect(Model):
    """The fingerprint as a condition the diagnosis engine evaluates on metric lines."""

    metrics: list[Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$")]] = Field(
        min_length=1,
        description=(
            "Metric names as logs print them, normalised: lower case, words joined by '_' "
            "('grad norm' and 'grad_norm' are both `grad_norm`; Megatron's 'lm loss' is `lm_loss`)."
        ),
    )
    condition: Literal["non-finite", "below", "above", "halved", "jump", "rising"] = Field(
        description=(
            "'non-finite': NaN or inf; 'below': under `threshold`; 'above': over it; "
            "'halved': each reading half the one before; "
            "'jump': `threshold` orders of magnitude above the lowest reading so far; 'rising': a counter that "
            "goes up reading after reading."
        )
    )
    count: int = Field(
        ge=1, le=1000, description="How many readings in a row the condition must hold for (halvings or rises)."
    )
    threshold: float | None = Field(
        default=None, description="The bound for 'below' and 'above'; the orders of magnitude for 'jump'."
    )
    within: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description=(
            "The run must begin within the metric's first `within` readings (1: at the very first one), for "
            "failures that show from the start of a run rather than after hours of healthy training."
        ),
    )
    after_finite: bool = Field(
        default=False,
        description="The run must follow at least one finite reading: the metric was sound before it broke.",
    )

    @model_validator(mode="after")
    def _threshold(self) -> Detect:
        if self.condition in ("below", "above", "jump") and self.threshold is None:
            raise ValueError(f"threshold: the condition {self.condition!r} needs a threshold")
        return self


class Fingerprint(Model):
    """A metric shape to alert on, for failures that print nothing."""

    metric: Line = Field(description="The metric, e.g. `grad_norm` or `loss_scale`.")
    shape: Text = Field(description="The pattern that marks the failure, as a shape rather than a magic number.")
    window: Line | None = Field(default=None, description="Over how many steps or how much time to look.")
    detect: Detect | None = Field(
        default=None, description="The shape as a condition `trainwreck diagnose` evaluates on the log's metric lines."
    )


class CallRef(Model):
    """One traceback frame of a frame signature."""

    path: Annotated[str, StringConstraints(pattern=r"^[\w./-]+\.py$", max_length=200)] = Field(
        description="A suffix of the file path, from the package folder on: `torch/utils/cpp_extension.py`."
    )
    function: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_<][\w<>]*$", max_length=100)] = Field(
        description="The function name the frame prints after 'in'."
    )


class FrameSignature(Model):
    """Traceback frames that identify the failure when the log stops before the exception's message."""

    calls: list[CallRef] = Field(
        min_length=1,
        description="Frames that appear one after another in the traceback, caller first: the function that "
        "raises, and the callers above it that make it this failure rather than another.",
    )
    source: Annotated[str, StringConstraints(pattern=SOURCE_PATTERN)] = Field(
        description="Where upstream defines the innermost function: `owner/repo:path` or `pypi:package==version:path`."
    )
    examples: list[LogLine] = Field(
        min_length=1,
        description="Each a run of frame lines as a traceback prints them ('  File \"…\", line N, in f'), "
        "one per line, that the calls must match.",
    )
    note: Line | None = Field(default=None, description="Why these frames mean this failure.")


class CodeExample(Model):
    """Fix code for one stack."""

    stack: Line = Field(description="The stack it is for: PyTorch, DeepSpeed config, Megatron flags, shell, …")
    language: Id = Field(description="Pygments language name, e.g. python, json, shell, yaml.")
    code: Text = Field(description="Copy-pasteable code or configuration.")
    context: list[ContextName] = Field(default_factory=list, description=CONTEXT_DOC)
    why: Text = Field(description="Why it works and what it costs (Markdown).")


class Fix(Model):
    """The fix: a summary line, the steps, and code per stack."""

    summary: Line = Field(description="The fix in one line; the index and the diagnosis engine show it.")
    steps: list[Text] = Field(min_length=1, description="Ordered steps (Markdown).")
    code: list[CodeExample] = Field(default_factory=list, description="Code or configuration per stack.")
    cost: Text | None = Field(default=None, description="What the fix costs: bandwidth, memory, a disabled feature.")
    alternative: Text | None = Field(
        default=None, description="What to do when the first fix is not allowed on the reader's cluster."
    )


class Verification(Model):
    """The check that proves the fix took."""

    step: Text = Field(description="What to run or watch (Markdown).")
    command: Text | None = Field(default=None, description="A command or snippet to run.")
    language: Id = Field(default="shell", description="Pygments language of `command`.")
    context: list[ContextName] = Field(default_factory=list, description=CONTEXT_DOC)
    expected: Text = Field(description="The output or metric range that means the fix worked (Markdown).")


class Scale(Model):
    """How the failure shows from one GPU to a large job."""

    single_gpu: Text = Field(description="On one GPU (say so when it cannot happen there).")
    single_node: Text | None = Field(default=None, description="On one node of several GPUs.")
    large_scale: Text = Field(description="At 64 GPUs and beyond.")


class Collateral(Model):
    """Whether this error is usually a downstream report of a failure elsewhere."""

    usually: bool = Field(description="True when the error is usually collateral of another failure.")
    local: bool = Field(
        default=False,
        description="True when the failure it reports is on the rank or GPU that prints it (a sticky CUDA "
        "error, the GPU's own Xid): the rank or host that prints it is where the job failed first, even "
        "when the error that started it is missing from the log.",
    )
    note: Text = Field(description="Where to look for the initiating failure, or why it is the origin itself.")

    @model_validator(mode="after")
    def _local_is_collateral(self) -> Collateral:
        # `local` says where collateral came from; on an error that is its own origin it would mean nothing.
        if self.local and not self.usually:
            raise ValueError(
                "'local: true' needs 'usually: true': only an error that is usually collateral can be local"
            )
        return self


class Reference(Model):
    """A source the reader can follow."""

    title: Line = Field(description="What the link is.")
    url: Url = Field(description="An http(s) URL.")


class Entry(Model):
    """One failure mode of ML training or inference."""

    id: Id = Field(description="Kebab-case id; equals the file name and gives the URL /failures/<id>/.")
    title: Line = Field(description="The failure, named the way the reader would search for it.")
    summary: Text = Field(
        max_length=700,
        description="Two or three plain sentences: what happens and what it is not (inline Markdown allowed).",
    )
    category: CategoryId = Field(description="One category id.")
    severity: Literal["low", "medium", "high", "critical"] = Field(description="How badly it hurts a job.")
    layer: Literal["hardware", "software", "configuration", "mixed"] = Field(
        description="Whether it is a hardware, software or configuration problem, or mixed."
    )
    phase: Literal["training", "inference", "both"] = Field(description="When it strikes.")
    systems: list[SystemRef] = Field(min_length=1, description="The systems involved, most specific first.")
    hubs: list[HubRef] = Field(default_factory=list, description="Hub comparison tables this entry appears in.")
    tags: list[Id] = Field(default_factory=list, description="Tags declared in tags.yaml.")
    signatures: list[Signature] = Field(
        default_factory=list, description="Log text that identifies the failure; empty for silent failures."
    )
    frames: list[FrameSignature] = Field(
        default_factory=list,
        description="Traceback frames that identify the failure when the exception's message is missing.",
    )
    fingerprint: list[Fingerprint] = Field(
        default_factory=list, description="Metric shapes to alert on; required when there are no signatures."
    )
    wraps: list[Annotated[str, StringConstraints(pattern=r"^(\*|[a-z0-9]+(-[a-z0-9]+)*)$")]] = Field(
        default_factory=list,
        description=(
            "Entries whose failures this error carries inside it, or '*' for any failure (torchrun's "
            "ChildFailedError carries whatever killed the worker): when one is found too, this one is the wrapper."
        ),
    )
    observations: list[Text] = Field(min_length=1, description="What you observe, one item per observation.")
    symptoms: list[Symptom] = Field(default_factory=list, description="Symptom to cause rows.")
    mechanism: Text = Field(description="Why it happens, at the level of the component that fails (Markdown).")
    misread_as: list[Misreading] = Field(default_factory=list, description="Usual wrong diagnoses.")
    root_causes: list[Text] = Field(min_length=1, description="Root causes (Markdown).")
    confirm: list[Check] = Field(min_length=1, description="Confirmation checklist, cheapest check first.")
    fix: Fix = Field(description="The fix.")
    verify: Verification = Field(description="The check, with its expected result, that proves the fix took.")
    prevention: list[Text] = Field(default_factory=list, description="How to keep it from coming back.")
    scale: Scale | None = Field(default=None, description="How it shows at 1 GPU versus 64+ GPUs.")
    collateral: Collateral | None = Field(default=None, description="Whether it is usually a downstream report.")
    time_to_fix: Line | None = Field(
        default=None, description="How long confirmation and fix usually take, and what dominates that time."
    )
    recurrence: Text | None = Field(default=None, description="Whether and when it comes back after the fix.")
    related: list[Id] = Field(default_factory=list, description="Ids of sibling failures to check next.")
    references: list[Reference] = Field(default_factory=list, description="Upstream docs and issue threads.")
    added: dt.date = Field(description="Date the entry was first published (YYYY-MM-DD).")
    updated: dt.date = Field(description="Date of the last substantive change (YYYY-MM-DD).")

    @model_validator(mode="after")
    def _silent_needs_fingerprint(self) -> Entry:
        if not self.signatures and not self.fingerprint:
            raise ValueError("fingerprint: an entry with no signatures needs a fingerprint")
        if self.updated < self.added:
            raise ValueError("updated: is earlier than 'added'")
        return self


class HubGroup(Model):
    """A group of rows in a hub's comparison table."""

    id: Id = Field(description="Id entries use in their `hubs[].group`.")
    title: Line = Field(description="Heading of the group.")
    description: Text | None = Field(default=None, description="One or two sentences on the group.")


class Tool(Model):
    """An environment variable, flag or tool that helps tell a hub's errors apart."""

    name: Line = Field(description="Exactly as typed, e.g. `NCCL_DEBUG=INFO`.")
    kind: Literal["env", "flag", "tool", "config"] = Field(description="What sort of knob it is.")
    reveals: Text = Field(description="What it reveals and which errors it separates (Markdown).")
    docs: list[Url] = Field(default_factory=list, description="Where it is documented.")


class Hub(Model):
    """A page that sets one system's failures side by side."""

    id: Id = Field(description="Kebab-case id; equals the file name and gives the URL /hubs/<id>/.")
    title: Line = Field(description="Page title.")
    summary: Line = Field(description="One sentence for listings and the meta description.")
    system: SystemId = Field(description="The system this hub covers.")
    intro: Text = Field(description="Where this system reports failure versus where it fails (Markdown).")
    groups: list[HubGroup] = Field(default_factory=list, description="Optional row groups, in display order.")
    tools: list[Tool] = Field(default_factory=list, description="Variables, flags and tools that tell errors apart.")
    updated: dt.date = Field(description="Date of the last substantive change (YYYY-MM-DD).")


class TagInfo(Model):
    """A declared tag."""

    title: Line = Field(description="Display name of the tag.")
    description: Line = Field(description="One sentence on what the tag groups.")


class Tags(BaseModel):
    """The tag registry, tags.yaml."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tags: dict[Id, TagInfo] = Field(description="Tag id to its title and description.")


class DiagnoseExample(Model):
    """A real log excerpt the diagnosis page offers to try, from the test corpus."""

    case: Annotated[str, StringConstraints(pattern=r"^[\w.-]+(/[\w.-]+)*$", max_length=200)] = Field(
        description="Folder of a corpus case, from the project root: its case.yaml gives the thread the "
        "logs come from, and every other file in it is a log."
    )
    label: Line = Field(description="What the button says: the failure and its shape, in a few words.")


class SiteConfig(Model):
    """Site settings, site.yaml."""

    title: Line = Field(description="Site name.")
    tagline: Line = Field(description="One line under the name.")
    base_url: Url = Field(description="Absolute URL the site is served from, ending in '/'.")
    repo_url: Url = Field(description="Repository URL; 'edit this page' links point into it.")
    edit_branch: Line = Field(default="main", description="Branch the edit links open.")
    language: Line = Field(default="en", description="Language of the pages.")
    author: Line = Field(description="Name used in the feed and in JSON-LD.")
    examples: list[DiagnoseExample] = Field(
        default_factory=list, max_length=8, description="Real logs the diagnosis page offers to try."
    )

    def path(self, relative: str = "") -> str:
        """Return the site-absolute path of a page, e.g. '/failures/x/'."""
        return urlsplit(self.base_url).path + relative

    def url(self, relative: str = "") -> str:
        """Return the absolute URL of a page."""
        return self.base_url + relative

    @model_validator(mode="after")
    def _slash(self) -> SiteConfig:
        if not self.base_url.endswith("/"):
            raise ValueError("base_url: must end with '/'")
        return self


def entry_json_schema() -> dict[str, Any]:
    """Return the JSON Schema of an entry file, with the vocabularies as enums."""
    schema = Entry.model_json_schema()
    defs = schema.get("$defs", {})
    schema["properties"]["category"]["enum"] = sorted(CATEGORIES)
    defs["SystemRef"]["properties"]["id"]["enum"] = sorted(SYSTEMS)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Trainwreck entry"
    return schema


def hub_json_schema() -> dict[str, Any]:
    """Return the JSON Schema of a hub file."""
    schema = Hub.model_json_schema()
    schema["properties"]["system"]["enum"] = sorted(SYSTEMS)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Trainwreck hub"
    return schema


def is_kebab(value: str) -> bool:
    """Return True if the value is a valid id."""
    return re.fullmatch(ID_PATTERN, value) is not None
