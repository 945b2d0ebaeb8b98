## What the bot posts on its own: announcements, status boards, approval requests, notices.
## The words of a run, shared by posts and views.

run-status-queued = queued
run-status-running = running
run-status-waiting = waiting
run-status-awaiting-approval = awaiting approval
run-status-done = done
run-status-completed = completed
run-status-failed = failed
run-status-timed-out = timed out
run-status-killed = killed
run-status-interrupted = interrupted
run-waiting-on = waiting on { $count } { $count ->
    [one] child
   *[other] children
  }
# $kind: English's ordinal category of $place (one, two, few, other).
run-queued-place = queued, { $place }{ $kind ->
    [one] st
    [two] nd
    [few] rd
   *[other] th
  } in line

outcome-completed = completed successfully
outcome-timed-out = timed out
outcome-killed = killed
outcome-interrupted = interrupted: { $error }
outcome-interrupted-restart = interrupted: the bot restarted while this run was in progress
outcome-failed = failed: { $error }
outcome-failed-unknown = failed: unknown error

tokens-phrase = tokens { $total } (in { $input } / out { $output })
stats-runtime = runtime { $runtime }
stats-cost = est. cost { $cost }
stats-served-by = served by { $model }

## A sub-agent's announcement: its header, notes and files. Run ids and the agent's text stay as they are.

announcement-header-subagent = { $icon } Subagent **{ $label }** (run `{ $run }`): { $status }
announcement-header-schedule = { $icon } Scheduled job **{ $label }** (run `{ $run }`): { $status }
announcement-no-output = (no output)
announcement-result-attached = *(full result attached as result.md, { $characters } characters)*
announcement-reply-attached = *(full reply attached as result.md, { $characters } characters)*
announcement-more-files = 📎 more files ({ $number }/{ $count })

## A run's live status message.

status-board-line = { $icon } **{ $label }** · { $state } · { $runtime } · { $calls } tool call(s) · tokens { $tokens }
status-board-run = run { $run }

## An approval request posted in a channel, and what it says once decided. Tool names stay as they are.

approval-asks-inline = ✋ Run { $run } wants to call `{ $tool }` with:
approval-asks-file = ✋ Run { $run } wants to call `{ $tool }` with the arguments in the attached `{ $file }` ({ $characters } characters).
approval-decide-owner = { $owner } or a moderator: approve or deny within { $minutes } minutes (no answer denies).
approval-decide-moderator = A moderator: approve or deny within { $minutes } minutes (no answer denies).
approval-approved = ✅ `{ $tool }` (run { $run }) approved by { $member }.
approval-denied = 🚫 `{ $tool }` (run { $run }) denied by { $member }.
approval-timed-out = ⏱️ `{ $tool }` (run { $run }) denied: nobody decided in time.
approval-run-killed = 🛑 `{ $tool }` (run { $run }) not run: the run was killed.

## A long code block taken out of a post as a file: the note where it stood.

code-file-lines = { $count } { $count ->
    [one] line
   *[other] lines
  }

## Telling a requester that what they waited for could not be posted. Commands stay as they are.

notice-answer-not-posted = ⚠️ The answer of **{ $label }** (run { $run }) could not be posted in { $channel }: { $reason }. Please ask again.
notice-result-not-posted = ⚠️ The result of subagent **{ $label }** could not be posted in { $channel }: { $reason }. `/subagents info { $run }` and `/subagents log { $run }`, used where you started it, show the result.

## A reply that could not finish: why, and what it had so far (the agent's text follows, as it is).

reply-restarted = I was restarted before I could finish answering this.
reply-ask-again = Please ask again.
reply-failed = I couldn't answer: { $why }.
reply-so-far = What I had so far:
