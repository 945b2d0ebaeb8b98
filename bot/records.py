"""The records everything else talks in: sessions, runs, usage, thread bindings, schedules, who asked and who acts.

A leaf: it imports nothing of the project, so storage, the agent runtime, the core and the Discord adapter can
all share it without depending on each other. The string enums' values are the strings stored in SQLite.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    WAITING_CHILDREN = "waiting_children"
    AWAITING_APPROVAL = "awaiting_approval"  # paused on a tool call a person must approve (survives restarts)
    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    KILLED = "killed"
    INTERRUPTED = "interrupted"

    @property
    def is_terminal(self) -> bool:
        return self not in LIVE_STATUSES

    @property
    def word(self) -> str:
        """How people read the status.

        A waiting run is worded with its children count by the caller."""
        return _STATUS_WORDS[self]

    @property
    def icon(self) -> str:
        return _STATUS_ICONS[self]


LIVE_STATUSES = frozenset(
    {RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING_CHILDREN, RunStatus.AWAITING_APPROVAL}
)
_STATUS_WORDS = {
    RunStatus.QUEUED: "queued",
    RunStatus.RUNNING: "running",
    RunStatus.WAITING_CHILDREN: "waiting",
    RunStatus.AWAITING_APPROVAL: "awaiting approval",
    RunStatus.COMPLETED: "done",
    RunStatus.FAILED: "failed",
    RunStatus.TIMED_OUT: "timed out",
    RunStatus.KILLED: "killed",
    RunStatus.INTERRUPTED: "interrupted",
}
_STATUS_ICONS = {
    RunStatus.QUEUED: "⏳",
    RunStatus.RUNNING: "🔄",
    RunStatus.WAITING_CHILDREN: "🕓",
    RunStatus.AWAITING_APPROVAL: "✋",
    RunStatus.COMPLETED: "✅",
    RunStatus.FAILED: "❌",
    RunStatus.TIMED_OUT: "⏱️",
    RunStatus.KILLED: "🛑",
    RunStatus.INTERRUPTED: "⚠️",
}


class ApprovalStatus(StrEnum):
    """A tool call waiting for a person: ``pending`` until someone decides, the deadline passes or the run ends."""

    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    TIMED_OUT = "timed_out"  # nobody decided in time: denied
    CANCELLED = "cancelled"  # its run ended first (killed)


@dataclass(frozen=True)
class Approval:
    """One ``always_ask`` tool call of a paused run, and the message asking a person."""

    id: str
    run_id: str
    tool_call_id: str
    tool_name: str
    arguments: str  # shown to people: every character as JSON, secrets redacted
    channel_id: int  # where the request is posted: the run's thread, else its channel
    owner_user_id: int | None
    created_at: float
    deadline: float
    status: ApprovalStatus = ApprovalStatus.PENDING
    decided_by: int | None = None
    decided_at: float | None = None
    consumed: bool = False  # its decision reached the model
    message_id: int | None = None
    shown: ApprovalStatus | None = None  # the status its Discord message shows


class RunKind(StrEnum):
    SPAWN = "spawn"
    CHAT = "chat"
    FOLLOWUP = "followup"


class SessionKind(StrEnum):
    MAIN = "main"  # a conversation's main agent
    SUBAGENT = "subagent"


class SessionRole(StrEnum):
    MAIN = "main"
    ORCHESTRATOR = "orchestrator"  # a sub-agent that may spawn its own
    LEAF = "leaf"  # a sub-agent at the deepest allowed depth


class ControlScope(StrEnum):
    CHILDREN = "children"  # may list, steer and kill the sessions it spawned
    NONE = "none"


class SessionMode(StrEnum):
    RUN = "run"  # one task; a thread bound to it ends with its run
    SESSION = "session"  # stays bound to its thread for follow-ups


class Delegation(StrEnum):
    """How an agent's tool started a child.

    The child's result goes back to that agent, not to the channel."""

    SUBAGENT = "subagent"  # a ``spawn_subagent`` child: same agent, blocking, its result is the caller's tool result
    BOUNDED = "bounded"  # a ``delegate`` child inside its caller's tools and action budget
    INDEPENDENT = "independent"  # a ``delegate`` child with its target's own tools and budget

    @property
    def kind(self) -> str:
        """How lists name it: ``subagent`` or ``delegate``."""
        return "subagent" if self is Delegation.SUBAGENT else "delegate"

    @property
    def shares_budget(self) -> bool:
        """Its actions spend its caller's action budget (one tracker for both)."""
        return self is not Delegation.INDEPENDENT


class SpawnSite(StrEnum):
    """Where a sub-agent session was spawned from.

    It is bound to every log line of its runs."""

    SLASH = "slash"  # a person's /subagents spawn
    TOOL = "tool"  # an agent's sessions_spawn or spawn_subagent
    DELEGATE = "delegate"  # an agent's delegate tool
    CRON = "cron"  # a scheduled job


class Cleanup(StrEnum):
    KEEP = "keep"  # archived some time after its run ends
    DELETE = "delete"  # archived right after announcing


@dataclass(frozen=True)
class Session:
    key: str
    agent_id: str
    kind: SessionKind
    depth: int
    role: SessionRole
    requester_session_key: str | None
    label: str | None
    guild_id: int | None
    channel_id: int
    owner_user_id: int | None
    created_at: float
    control_scope: ControlScope = ControlScope.NONE
    task: str | None = None
    mode: SessionMode = SessionMode.RUN
    cleanup: Cleanup = Cleanup.KEEP
    sandboxed: bool = False
    archive_at: float | None = None
    archived_at: float | None = None
    model: str | None = None  # a main session's model after ``model_switch`` (None: its agent's)
    delegation: Delegation | None = None
    spawn_site: SpawnSite | None = None
    charged_to: str | None = None  # the action budget its launch was charged to (agent-launched sessions)
    acp_agent: str | None = None  # the ``[acp_agents.<name>]`` that runs it (runtime "acp"); None: the bot's runtime

    @property
    def budget_key(self) -> str:
        """Whose action budget this session's own actions spend: its caller's when it shares it, else its own."""
        shares = self.delegation is not None and self.delegation.shares_budget
        return self.charged_to if shares and self.charged_to else self.key


class TaskStatus(StrEnum):
    """A delegate task's status, in the words the ``delegate`` tool answers with.

    ``lost`` and ``timed_out`` come from reconciliation."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    LOST = "lost"
    TIMED_OUT = "timed_out"


@dataclass(frozen=True)
class DelegateTask:
    task_id: str
    run_id: str
    caller_session_key: str
    agent: str
    header: str  # ``[Agent '<a>' (<provider>/<model>)]``, fixed when the task starts
    background: bool
    status: TaskStatus
    started_at: float
    deadline: float  # past it, a task still running is stopped and recorded as timed out
    output: str | None = None
    error: str | None = None
    note: str | None = None  # why reconciliation, not the task, settled it
    finished_at: float | None = None


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    tool_calls: int = 0
    cost: Decimal | None = None

    def then(self, turn: Usage) -> Usage:
        """Usage over this and a later turn; a cost stays unknown once any turn's cost is unknown."""
        if self.requests == 0:
            return turn
        cost = self.cost + turn.cost if self.cost is not None and turn.cost is not None else None
        return Usage(
            input_tokens=self.input_tokens + turn.input_tokens,
            output_tokens=self.output_tokens + turn.output_tokens,
            requests=self.requests + turn.requests,
            tool_calls=self.tool_calls + turn.tool_calls,
            cost=cost,
        )


@dataclass(frozen=True)
class Run:
    id: str
    session_key: str
    kind: RunKind
    status: RunStatus
    task: str
    model: str
    thinking: str | None
    timeout_seconds: int
    requester_user_id: int | None
    guild_id: int | None
    channel_id: int
    source_message_id: int | None
    created_at: float
    parent_run_id: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    error: str | None = None
    result_text: str | None = None
    usage: Usage = Usage()
    served_model: str | None = None  # the configured model that gave its latest answer
    lane_place: str | None = None  # a durable run's: the process holding its place in the sub-agent lane

    @property
    def short_id(self) -> str:
        return short_run_id(self.id)

    @property
    def fallback_model(self) -> str | None:
        """The model that served the run, if not the one asked for; else ``None``.

        That model was a fallback candidate."""
        return self.served_model if self.served_model not in (None, self.model) else None


class AttachmentKind(StrEnum):
    IMAGE = "image"  # goes to the model as an image part, by its URL
    TEXT = "text"  # goes to the model as text, with its file name


@dataclass(frozen=True)
class Attachment:
    """A file a person attached to their message, as the model reads it.

    Kept with the run by URL and hash, not its bytes; a text file keeps its text, which is what the model read."""

    name: str
    url: str
    sha256: str
    size: int
    kind: AttachmentKind
    media_type: str
    text: str | None = None  # a text file's content (``kind`` text)


SHORT_RUN_ID = 8  # characters of a run id that messages and buttons show


def short_run_id(run_id: str) -> str:
    """A run id as people see it in messages and buttons."""
    return run_id[:SHORT_RUN_ID]


@dataclass(frozen=True)
class Binding:
    """A Discord thread (or DM) whose messages go to one session."""

    thread_id: int
    parent_channel_id: int | None
    guild_id: int | None
    session_key: str
    bound_by: int | None  # who focused the thread, or whose request spawned it
    bound_at: float
    last_activity_at: float
    idle_seconds: float  # 0 = no idle timeout
    max_age_seconds: float  # 0 = no max age
    ends_with_run_id: str | None = None  # a run-mode spawn's thread: the binding ends with that run

    def deadline(self) -> tuple[float, str] | None:
        """The next automatic unbinding and why (``idle`` or ``max-age``), if any."""
        candidates = []
        if self.idle_seconds > 0:
            candidates.append((self.last_activity_at + self.idle_seconds, "idle"))
        if self.max_age_seconds > 0:
            candidates.append((self.bound_at + self.max_age_seconds, "max-age"))
        return min(candidates) if candidates else None


class ScheduleSource(StrEnum):
    CONFIG = "config"  # a ``[[schedules]]`` entry of config.toml, synced at start-up
    SLASH = "slash"  # added with /schedule add


@dataclass(frozen=True)
class ScheduleSpec:
    """What a schedule does: when (a crontab expression in a time zone), which agent, what prompt, and where
    its answer is posted."""

    name: str
    cron: str
    timezone: str
    agent_id: str
    prompt: str
    channel_id: int


@dataclass(frozen=True)
class Schedule:
    id: int
    spec: ScheduleSpec
    source: ScheduleSource
    guild_id: int | None  # a slash schedule's server; config ones name only a channel
    created_by: int | None  # None for config ones: nobody asked for their runs
    created_at: float
    claimed_through: float  # every slot at or before this is done with: fired, skipped, or before it existed
    last_fired_at: float | None = None  # the slot of the last firing
    last_run_id: str | None = None


@dataclass(frozen=True)
class RunFile:
    """A file a run's agent returned (``attach_file``): posted with the run's announcement or reply."""

    run_id: str
    name: str
    size: int  # bytes, UTF-8
    position: int  # the order it was first attached in
    created_at: float


@dataclass(frozen=True)
class Memory:
    """One thing an agent identity remembers in one server, and whose conversation stored it."""

    id: int
    agent_id: str
    guild_id: int
    key: str
    content: str
    created_by_user_id: int | None
    session_key: str | None
    run_id: str | None
    created_at: float
    auto_saved: bool = False  # saved by ``[memory] auto_save``, not by a model's ``memory_store``


@dataclass(frozen=True)
class Origin:
    """Who asked, and where: the conversation a request came from and where its answer goes. A scheduled job
    from config.toml is asked for by nobody (``user_id`` is ``None``)."""

    user_id: int | None
    channel_id: int
    conversation: str
    guild_id: int | None = None
    message_id: int | None = None


@dataclass(frozen=True)
class Actor:
    """A person acting on runs or bindings, and whether they moderate where they act."""

    user_id: int
    is_moderator: bool
    guild_id: int | None = None
