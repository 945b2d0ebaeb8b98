-- Delivery gives up on a row once `discord.delivery_give_up_after` has passed since its first failed attempt,
-- and then tells the requester with a notice: an outbox row of its own (so it is durable and posted exactly once
-- like any other), posted in the parent channel of a thread that is gone, or else by DM.
ALTER TABLE outbox ADD COLUMN first_failed_at REAL;
ALTER TABLE outbox ADD COLUMN notice TEXT CHECK (notice IN ('parent_channel', 'dm'));
