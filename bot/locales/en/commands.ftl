## Slash commands: their descriptions, their options' descriptions, and choices' names.
## Ids are built from the command's path (cmd-subagents-spawn, cmd-subagents-spawn-task) and the choice's name.

cmd-subagents = Spawn and manage sub-agents
cmd-subagents-spawn = Start a sub-agent on a task; its result is posted here
cmd-subagents-spawn-agent = Agent id from the config, e.g. main (with runtime acp: an ACP agent's name)
cmd-subagents-spawn-task = What the sub-agent should do
cmd-subagents-spawn-model = Model as <provider>/<model>; defaults to the configured one
cmd-subagents-spawn-thinking = Reasoning effort, for models that support it
cmd-subagents-spawn-thread = Give the sub-agent its own thread, where you can keep talking to it
cmd-subagents-spawn-runtime = subagent (the bot's agent, default) or acp (a coding agent from [acp_agents])
cmd-subagents-spawn-attachment = A text file or an image the sub-agent reads with its task
cmd-subagents-tools = What an agent may call here, and why not the rest
cmd-subagents-tools-agent = Agent id from the config, e.g. main
cmd-subagents-list = Active and recent (30 min) sub-agents of this conversation
cmd-subagents-info = Everything known about one sub-agent run
cmd-subagents-info-target = List number, label, run id prefix, session key, or 'last'
cmd-subagents-log = The last messages of a sub-agent's transcript
cmd-subagents-log-target = List number, label, run id prefix, session key, or 'last'
cmd-subagents-log-limit = How many messages (1–200, default 20)
cmd-subagents-log-tools = Include tool calls and results
cmd-subagents-kill = Stop a sub-agent and everything it spawned ('all' for every one)
cmd-subagents-kill-target = List number, label, run id prefix, session key, 'last', or 'all'
cmd-subagents-send = Message a sub-agent without stopping it and show its reply
cmd-subagents-send-target = List number, label, run id prefix, session key, or 'last'
cmd-subagents-send-message = What to say
cmd-subagents-send-attachment = A text file or an image it reads with the message
cmd-subagents-steer = Redirect a running sub-agent at its next step
cmd-subagents-steer-target = List number, label, run id prefix, session key, or 'last'
cmd-subagents-steer-message = The new direction (up to 4,000 characters)
cmd-stop = Stop the agent's current turn and its sub-agents here
cmd-session = Lifetime of this thread's focused session
cmd-session-idle = Show or set how long this thread may stay quiet before unbinding
cmd-session-idle-duration = e.g. 90m, 2h, 1d, a number of hours, or off
cmd-session-max-age = Show or set the hard limit on this thread's binding
cmd-session-max-age-duration = e.g. 8h, 1d, a number of hours, or off
cmd-focus = Route this thread (or a new one) to a sub-agent's session
cmd-focus-target = List number, label, run id prefix, session key, or 'last'
cmd-unfocus = Stop routing this thread to its session
cmd-agents = Active and thread-bound sub-agents of this channel
cmd-settings = Server settings for threadbound
cmd-settings-thread-bindings = Show or change thread-binding settings here
cmd-settings-thread-bindings-enabled = Allow thread-bound sessions at all
cmd-settings-thread-bindings-idle_hours = Unbind a thread after this many quiet hours (0 = never)
cmd-settings-thread-bindings-max_age_hours = Unbind a thread this many hours after binding (0 = never)
cmd-settings-thread-bindings-spawn_subagent_sessions = Allow spawning sub-agents into new threads
cmd-settings-thread-bindings-auto_archive_minutes = The least Discord auto-archive for threads the bot creates
cmd-settings-thread-bindings-moderator_role = Members with this role may kill and steer anyone's runs
cmd-settings-streaming = Show or change whether answers appear while written
cmd-settings-streaming-enabled = Post answers early and edit them as the model writes (off: post them whole)
cmd-settings-budgets = Show or change this server's spending and rate caps
cmd-settings-budgets-member_runs_per_hour = Runs one member may start in an hour (0 = no cap)
cmd-settings-budgets-member_tokens_per_day = Tokens one member's runs may use a day, UTC (0 = no cap)
cmd-settings-budgets-member_cost_per_day_usd = US dollars one member's runs may cost a day, UTC (0 = no cap)
cmd-settings-budgets-member_concurrent_runs = Runs one member may have in progress at once (0 = no cap)
cmd-settings-budgets-server_runs_per_hour = Runs everyone here may start in an hour (0 = no cap)
cmd-settings-budgets-server_tokens_per_day = Tokens all runs here may use a day, UTC (0 = no cap)
cmd-settings-budgets-server_cost_per_day_usd = US dollars all runs here may cost a day, UTC (0 = no cap)
cmd-settings-budgets-inherit = Drop this server's own value of a cap, so [budgets] in the config applies again
cmd-schedule = Agents that run on a schedule
cmd-schedule-add = Run an agent on a cron schedule and post its answer
cmd-schedule-add-name = A name for this schedule, unique in this server
cmd-schedule-add-cron = Five crontab fields: minute hour day-of-month month day-of-week, e.g. 0 9 * * 1-5
cmd-schedule-add-agent = Agent id from the config, e.g. main
cmd-schedule-add-prompt = What the agent should do at each firing
cmd-schedule-add-channel = Where its answer is posted (default: here)
cmd-schedule-add-timezone = Time zone of the cron fields, an IANA name such as Europe/Madrid (default: UTC)
cmd-schedule-list = This server's schedules and when each fires next
cmd-schedule-remove = Stop and delete a schedule added with /schedule add
cmd-schedule-remove-name = The schedule's name (those in config.toml are removed there)
cmd-usage = Runs, tokens, cost and caps: yours, or a member's (moderators)
cmd-usage-member = Whose usage to show (moderators only; default: yours)
cmd-usage-period = day: today; week: the last 7 days; month: the last 30 days (UTC days)
cmd-memory = What the bot remembers in this server
cmd-memory-list = What the bot remembers from your conversations (admins: all)
cmd-memory-forget = Remove one memory (yours; admins: anyone's)
cmd-memory-forget-id = The memory's number, as /memory list shows it

# Choices: thinking levels, runtimes, auto-archive minutes, budget caps (config keys), usage periods.
choice-off = off
choice-minimal = minimal
choice-low = low
choice-medium = medium
choice-high = high
choice-xhigh = xhigh
choice-max = max
choice-subagent = subagent
choice-acp = acp
choice-60 = 60
choice-1440 = 1440
choice-4320 = 4320
choice-10080 = 10080
choice-member_runs_per_hour = member_runs_per_hour
choice-member_tokens_per_day = member_tokens_per_day
choice-member_cost_per_day_usd = member_cost_per_day_usd
choice-member_concurrent_runs = member_concurrent_runs
choice-server_runs_per_hour = server_runs_per_hour
choice-server_tokens_per_day = server_tokens_per_day
choice-server_cost_per_day_usd = server_cost_per_day_usd
choice-day = day
choice-week = week
choice-month = month
