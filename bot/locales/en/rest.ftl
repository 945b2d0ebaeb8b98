## /agents, budget caps in /usage and budget warnings, /subagents info and tools values.

agents-title = agents:
agents-unbound = unbound
agents-none = (none)

# A member's daily cap is 80% used; $member is their mention, $what, $use and $frees the cap's words (cap-*).
budget-warning = { $member } ⚠️ You have used { $share }% of { $what }: { $use } ({ $key }). { $frees }.

## /subagents info and list: a run's recorded values, worded.

# $status: a run's stored status.
outcome-status = { $status ->
    [queued] queued
    [running] running
    [waiting_children] waiting_children
    [awaiting_approval] awaiting_approval
    [completed] completed
    [failed] failed
    [timed_out] timed_out
    [killed] killed
   *[interrupted] interrupted
  }
# $kind: what started a child an agent's tool runs for itself, or a schedule's firing.
session-kind = { $kind ->
    [subagent] subagent
    [delegate] delegate
   *[scheduled] scheduled
  }
delegation = { $how ->
    [subagent] subagent
    [bounded] bounded
   *[independent] independent
  }
session-role = { $role ->
    [main] main
    [orchestrator] orchestrator
   *[leaf] leaf
  }
cleanup = { $how ->
    [keep] keep
   *[delete] delete
  }

## /subagents tools: the places an agent runs, and why a tool is not offered there.

tools-server-count = { $count } tool(s)
tools-place-main = As a conversation's main agent
# $role: a session-role.
tools-place-subagent = As a sub-agent at depth { $depth } ({ $role })
tools-why-leaf = a leaf sub-agent gets no session tools
tools-why-main-only = main agent only
tools-why-subagents = withheld from sub-agents by [tools.subagents.tools]
tools-why-risk = { $how ->
    [excluded] excluded by
   *[not-allowed] not in allowed_tools of
  } risk profile '{ $profile }'
tools-why-delegate = needs a risk_profile and another agent to delegate to
