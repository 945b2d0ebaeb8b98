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

# A refused spawn, by a member's command or by an agent's sessions_spawn: the English is the contract's wording the
# model reads.
refused-bindings-disabled = Discord thread bindings are disabled (set channels.discord.thread_bindings.enabled = true to override for Discord, or session.thread_bindings.enabled = true globally).
refused-binding-spawns-disabled = Discord thread-bound subagent spawns are disabled (set channels.discord.thread_bindings.spawn_subagent_sessions = true to enable).
refused-member-running = { $whose ->
    [you] You already have
    [turn] The member whose turn this is already has
   *[other] { $whose } already has
} { $active } sub-agents running { $where ->
    [server] on this server
   *[dm] in direct messages
}; wait for one to finish or kill one.
refused-queue-full = The sub-agent queue is full ({ $waiting } runs waiting, agents.defaults.subagents.max_queued = { $cap }); try again when some have started.
refused-server-queue-full = The sub-agent queue is full { $where ->
    [server] on this server
   *[dm] in direct messages
} ({ $waiting } runs waiting, agents.defaults.subagents.max_queued_per_server = { $cap }); try again when some have started.
refused-unknown-acp-agent = Unknown ACP agent "{ $agent }". Configured ACP agents: { $configured }.
refused-invalid-agent-id = Invalid agentId "{ $agent }". Agent IDs must match { $pattern }. Use agents_list to discover valid targets.
refused-spawn-depth = sessions_spawn is not allowed at this depth (current depth: { $depth }, max: { $max })
refused-unknown-agent-id = Unknown agentId "{ $agent }". Configured agents: { $configured }.
refused-agent-disabled = Agent "{ $agent }" is disabled (agents.list.{ $agent }.enabled = false).
refused-no-thinking = Model { $model } does not support thinking levels. If it does, set supports_thinking = true under [providers.{ $provider }].
refused-spawn-thread-unavailable = Unable to create or bind a Discord thread for this subagent session: { $reason }

# /focus, /unfocus and /session idle|max-age.
focused-here = ✅ bound this conversation to { $session }.
focused-new-thread = ✅ created thread { $thread } and bound it to { $session }.
unfocused = ✅ Conversation unfocused.
not-focused = ℹ️ This conversation is not currently focused.
lifetime-off = ℹ️ { $which ->
    [idle] Idle timeout
   *[other] Max age
} is currently disabled for this focused session.
lifetime-shown = ℹ️ { $which ->
    [idle] Idle timeout active ({ $duration }, next auto-unfocus
   *[other] Max age active ({ $duration }, hard auto-unfocus
} at { $at }).
lifetime-disabled = ✅ { $which ->
    [idle] Idle timeout
   *[other] Max age
} disabled for this binding.
lifetime-set = ✅ { $which ->
    [idle] Idle timeout set to { $duration } (next auto-unfocus
   *[other] Max age set to { $duration } (hard auto-unfocus
} at { $at }).
refused-duration = Invalid duration '{ $value }'.{ $longest ->
    [none] {""}
   *[other] {" "}The longest is { $longest }.
} Usage: /session { $which } <duration|off> (example: /session { $which } 24h, 90m or off).
refused-binding-not-yours = Only { $who } can { $what ->
    [update] update session lifecycle settings for
   *[other] { $what }
} this conversation.
refused-no-threads = Thread bindings are unavailable: no chat adapter can create threads.
refused-bindings-off = Thread bindings are disabled.
refused-thread-unavailable = Unable to create a thread here: { $reason }

# /memory forget, /schedule add|remove, /subagents tools and send.
refused-no-memory = There is no memory #{ $id } in this server. /memory list shows their numbers.
refused-memory-not-yours = Memory #{ $id } was not stored from your conversations; only an admin (Manage Server) may forget it.
refused-memory-forgotten = Memory #{ $id } was forgotten already.
refused-schedule-exists = There is already a schedule named "{ $name }" in this server; pick another name.
refused-schedule-in-config = Schedule "{ $name }" is defined in config.toml; remove it there.
refused-no-schedule = There is no schedule named "{ $name }" in this server.
refused-cron = "{ $cron }" is not a valid cron expression: { $error }.
refused-unknown-agent = Unknown agent "{ $agent }". Configured agents: { $configured }.
refused-no-earlier-run = Session { $session } has no earlier run to follow up.

# Attachments a run cannot take; nothing is sent to the model.
refused-blind-model = Model { $model } cannot read images ({ $images }): it is not in [providers.{ $provider }] vision_models. Send the text without the images, or pick a model that reads images.
refused-image-while-running = The sub-agent is still working, and a running turn reads text only, so the image ({ $images }) was not sent. Send it again once its run has ended.
refused-too-many-files = You attached { $count } files; one message may attach at most { $limit } ([discord] max_attachments). Nothing was sent to the model.
refused-file-too-big = `{ $file }` is { $size }; one file may be at most { $limit } ([discord] max_attachment_bytes). Nothing was sent to the model.
refused-files-too-big = Your files add up to { $size }; one message's files may add up to at most { $limit } ([discord] max_attachments_total_bytes). Nothing was sent to the model.
refused-download-failed = Could not download `{ $file }` from Discord ({ $status }); try again.
refused-file-over = `{ $file }` is over { $limit }; nothing was sent to the model.
refused-unreadable-file = `{ $file }` is neither text nor an image (PNG, JPEG, GIF or WebP), so the model cannot read it. Nothing was sent to the model.

# A message in a bound thread, sooner than the steer limit allows.
refused-slow-down = Slow down: one message every { $interval }s reaches a running sub-agent. This one was not delivered; send it again in { $wait }s.

# /settings: each setting's value and where it comes from.
settings-updated = Updated.
settings-thread-bindings = Thread-binding settings here:
settings-budgets = Budget caps here (0 = no cap):
setting-none = none
setting-no-cap = no cap
setting-source = { $source ->
    [this-server] this server
    [default] default
   *[not-set] not set
}

# Budget caps: whose use of what a cap counts, how much is used, and when it frees up.
refused-over-budget = Over budget: { $what }: { $use } ({ $key }). { $frees }.
cap-what = { $key ->
    [member_runs_per_hour] your runs in the last hour on this server
    [server_runs_per_hour] this server's runs in the last hour
    [member_concurrent_runs] your runs in progress on this server
    [member_tokens_per_day] your tokens today on this server
    [member_cost_per_day_usd] your spending today on this server
    [server_tokens_per_day] this server's tokens today
   *[server_cost_per_day_usd] this server's spending today
}
cap-agent-today = agent { $agent }'s { $setting ->
    [tokens_per_day] tokens
   *[cost_per_day_usd] spending
} today
cap-amount = { $count } { $unit ->
    [token] token
    [tokens] tokens
    [run] run
   *[runs] runs
}
cap-use = { $used } of { $limit }
cap-resets = It resets at { $at }, in { $in }
cap-frees-at = One frees up at { $at }, in { $in }
cap-frees-when-one-ends = One frees up when one of them ends

# A message in a thread bound to someone else's sub-agent: told privately, once, in the server's language.
thread-nobodys = 🔒 { $thread } is bound to a sub-agent session nobody owns; only a moderator can talk to it there. Start your own with `/subagents spawn`.
thread-someone-elses = 🔒 { $thread } is bound to { $owner }'s sub-agent session; only they or a moderator can talk to it there. Start your own with `/subagents spawn`.
