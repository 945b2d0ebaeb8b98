## Replies to commands and buttons, and refusals, for the person who asked.
## Where the model reads the same refusal (a tool's result), the English here is exactly what it has always read.

refused-session-archived = Session { $session } was archived { $ago } ago and takes no more messages. Spawn a new sub-agent to go on (its transcript stays readable with /subagents log).
refused-ephemeral-session = Session { $session } is a spawn_subagent run: it answers only the agent that started it and takes no messages.
refused-caller-ended = Run { $run } has ended; it can start nothing more.

# A command that failed before or outside the bot's own refusals.
refused-bot-missing-permissions = ⚠️ I am missing the permission(s) I need here: { $missing }.
refused-missing-permissions = ⚠️ You need these permission(s) to do that: { $missing }.
refused-server-only = ⚠️ This command only works in a server.
refused-cooldown = ⚠️ Slow down: try again in { $seconds }s.
refused-check-failed = ⚠️ You are not allowed to use this command here.
command-failed = ⚠️ Something went wrong running { $command ->
    [none] this command
   *[other] /{ $command }
}. It has been logged.

# Sub-agents people act on: /subagents kill, steer, send and /stop, and the Kill and Steer buttons.
run-already-finished = { $label } is already finished.
killed-run = killed { $label }{ $descendants ->
    [0] .
   *[other] {" "}(+ { $descendants } descendants).
}
killed-all = killed { $stopped } { $stopped ->
    [one] subagent
   *[other] subagents
}.{ $others ->
    [0] {""}
    [one] {" "}{ $others } belongs to others.
   *[other] {" "}{ $others } belong to others.
}
kill-all-none = No active subagents to kill.
kill-all-none-yours = None of the active subagents are yours to kill.
steered-run = steered { $label } (run { $run }).
send-still-running = ⏳ Subagent still running (run { $run }).
send-no-output = (no output)
send-failed = ⚠️ Subagent error: { $error } (run { $run }).
stopped = ⚙️ Agent was aborted.{ $stopped ->
    [0] {""}
    [one] {" "}Stopped { $stopped } sub-agent.
   *[other] {" "}Stopped { $stopped } sub-agents.
}
stop-nothing-yours = Nothing of yours is running in this conversation.
stop-nothing = Nothing is running in this conversation.
refused-steer-waiting = { $label } is waiting on its children; steer one of them instead.
refused-steer-rate = Steer rate limit exceeded. Wait a moment before sending another steer.
refused-steer-empty = Steer needs a message.
refused-send-empty = Send needs a message.
refused-not-yours = You can only { $action } runs you started; { $label } belongs to { $owner }. Ask them or a moderator.

# A target that names no sub-agent, or more than one.
refused-missing-target = Missing subagent id.
refused-unknown-target = Unknown subagent id: { $target }
refused-invalid-index = Invalid subagent index: { $target }
refused-unknown-session = Unknown subagent session: { $target }
refused-ambiguous-label = Ambiguous subagent label: { $target }
refused-ambiguous-label-prefix = Ambiguous subagent label prefix: { $target }
refused-ambiguous-run-prefix = Ambiguous run id prefix: { $target }

# Text people send: tasks, messages, steers, schedules' names and prompts.
refused-text-empty = { $what } must not be empty.
refused-text-too-long-terse = { $what } too long ({ $length } chars, max { $limit }).
refused-text-too-long = { $what } is too long ({ $length } characters; the limit is { $limit }).

# Replies to commands.
spawned = Spawned subagent { $agent } (session { $session }, run { $run }).
memory-forgotten = Forgot memory #{ $id } ({ $agent }: { $key }).
schedule-removed = Removed schedule **{ $name }** (id { $id }).
mention-needs-text = Mention me with a message, e.g. `@me summarise the plan`.

# Refusals of the commands themselves.
refused-settings-admin-only = You need the Manage Server permission to view or change these settings.
refused-set-and-inherit = Set { $key } or make it inherit, not both.
refused-cost-too-small = { $key } must be 0 (no cap) or at least $0.000001; { $value } would round to no cap.
refused-schedules-admin-only = You need the Manage Server permission to manage schedules.
refused-schedule-channel = Schedules post in a text channel or thread; pick one with the channel option.
refused-schedule-cannot-post = I cannot post in { $channel }: I am missing the { $missing } permission there.
refused-usage-of-another = Only moderators may see another member's usage; /usage without a member shows yours.

# The Steer button's form, for whoever clicked it.
steer-modal-title = Steer this sub-agent
steer-modal-direction = New direction

# Approve and Deny, for whoever clicked.
approval-decided = { $verb ->
    [approve] Approved
   *[deny] Denied
} `{ $tool }` for run { $run }.
refused-approval-unknown = That approval request is unknown.
refused-approval-elsewhere = That approval request can only be decided in the channel where it was posted.
refused-approval-settled = That call of run { $run } is already { $status ->
    [approved] approved
    [denied] denied
    [timed_out] timed out
   *[cancelled] cancelled
}.
refused-approval-run-finished = Run { $run } is already finished.
refused-approval-not-yours = You can only { $verb } tool calls of runs you started; run { $run } belongs to { $owner }. Ask them or a moderator.
refused-approval-decided = That call of run { $run } was decided already.
