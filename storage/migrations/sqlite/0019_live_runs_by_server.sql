-- Live runs by server, state and member: a server's queued runs (its share of the sub-agent queue) and a member's
-- live sub-agents on a server (their cap) are counted from the few live rows, not from every run ever made.
CREATE INDEX runs_live_by_server ON runs(guild_id, status, requester_user_id)
    WHERE status IN ('awaiting_approval', 'queued', 'running', 'waiting_children');
