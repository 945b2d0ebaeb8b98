## What the bot shows a member who asked: /subagents list, info, log; /usage; /schedule; /memory; tools.

run-status-unknown = unknown
run-kind-task = , task { $task }
runs-none = (none)
runs-active = active subagents:
runs-recent = recent subagents (last 30m):
when-in = in { $span }
when-ago = { $span } ago
internal-context = (internal context)

usage-no-requests = no model requests
usage-cost-unknown = cost unknown (no price set)
usage-requests = { $count } { $count ->
    [one] request
   *[other] requests
  }
usage-tool-calls = { $count } { $count ->
    [one] tool call
   *[other] tool calls
  }

info-title = ℹ️ Subagent info
info-status = Status: { $value }
info-label = Label: { $value }
info-task = Task: { $value }
info-run = Run: { $value }
info-session = Session: { $value }
info-agent = Agent: { $agent } (depth { $depth }, { $role })
info-runtime-acp = Runtime: { $value }
info-runtime = Runtime: { $value }
info-now = Now: { $value }
info-kind = Kind: { $value }
info-model = Model: { $value }
info-model-served-by = { $model } (served by { $fallback })
info-usage = Usage: { $value }
info-created = Created: { $value }
info-started = Started: { $value }
info-ended = Ended: { $value }
info-cleanup = Cleanup: { $value }
info-archive = Archive: { $value }
info-archive-due = due { $when }
info-archive-unscheduled = not scheduled
info-outcome = Outcome: { $value }
info-result = Result: { $value }
info-delivery = Delivery: { $value }
info-transcript = Transcript: { $count } message(s)

log-title = 📜 Subagent log: { $label }
log-empty = (no messages)
log-role-user = User
log-role-assistant = Assistant
log-role-tool-call = Tool call
log-role-tool-result = Tool result
log-role-file = 📎 File attached
log-truncated = [truncated: { $characters } characters, showing the first { $shown }]

## /usage: a member's totals, by agent, and the chart.

usage-title = **Usage of { $member }, { $period }** ({ $span }, UTC)
usage-span = { $first } to { $last }
usage-period-day = today
usage-period-week = the last 7 days
usage-period-month = the last 30 days
usage-empty = No runs and no model requests.
usage-runs = { $count } { $count ->
    [one] run
   *[other] runs
  }
usage-cost-none-known = cost unknown
usage-cost-partly = { $cost } + { $count } { $count ->
    [one] unpriced request
   *[other] unpriced requests
  }
usage-unpriced = Cost leaves out { $count } { $count ->
    [one] request
   *[other] requests
  } to models with no known price (`[pricing."<provider>/<model>"]` sets one).
usage-by-agent = By agent:
usage-more-agents = - and { $count } more { $count ->
    [one] agent
   *[other] agents
  }
usage-caps = Caps now:
usage-caps-of = Caps now, as { $member } reads them:
usage-no-caps = No caps apply.
usage-chart-title = Runs and cost per day from { $first } to { $last } (UTC)

chart-runs = runs
chart-cost-line = cost (priced requests)
chart-cost-axis = cost (USD)
chart-title = Runs and cost per day, { $first } to { $last } (UTC)
# A day's label under its bar, as a CLDR date pattern.
chart-day-format = MMM dd

## A private answer too long for a few messages, attached as a file.

reply-attached = *(full text attached as { $file })*
reply-attached-long = *(full text attached as { $file }, { $characters } characters)*

## /schedule: a schedule's line, the list. Names, cron expressions and time zones stay as they are.

schedule-line = **{ $name }** (id { $id }, { $source }): `{ $cron }` { $timezone } → { $agent } in { $channel }, { $next }
schedule-added-by = added by { $member }
schedule-next = next { $when }
schedule-no-next = no future date matches
schedule-added = Scheduled { $schedule }.
schedules-title = Schedules in this server:
schedules-none = No schedules in this server. Add one with /schedule add.

## /memory list: what is remembered, as written.

memory-from-member = from { $member }'s conversation, { $when }
memory-from-schedule = from a schedule's conversation, { $when }
memories-yours = Remembered from your conversations in this server ({ $total }):
memories-everyone = Remembered from this server's conversations ({ $total }):
memories-none-yours = Nothing is remembered from your conversations in this server.
memories-none-everyone = Nothing is remembered from this server's conversations.
memories-older = …and { $count } older; forget some to see them.
memories-forget-hint = Forget one with /memory forget id:<number>.

## /subagents tools: the frame around the core's places and reasons. Tool and profile names stay as they are.

tools-title = 🧰 Tools of **{ $agent }** ({ $profiles })
tools-profiles = risk profile: { $risk } · runtime profile: { $runtime }
tools-none = none
tools-servers = MCP servers: { $servers }
tools-no-tools = no tools
tools-withheld = not offered — { $why }

## /subagents info: where a run's announcement stands. The error is as Discord or the bot worded it.

delivery-not-yet = not announced yet
delivery-none-killed = none (killed runs announce nothing)
delivery-none-no-reply = none (the run replied NO_REPLY)
delivery-delivered = delivered
delivery-pending = pending (attempts: { $attempts })
delivery-retrying = pending (attempts: { $attempts }, last error: { $error })
delivery-failed-untold = failed after { $attempts } attempt(s): { $error }. The requester could not be told (see the bot's error log).
delivery-failed-telling-channel = failed after { $attempts } attempt(s): { $error }. Telling the requester in { $channel }…
delivery-failed-telling-dm = failed after { $attempts } attempt(s): { $error }. Telling the requester by DM…
delivery-failed-told-channel = failed after { $attempts } attempt(s): { $error }. The requester was told in { $channel }.
delivery-failed-told-dm = failed after { $attempts } attempt(s): { $error }. The requester was told by DM.
