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
