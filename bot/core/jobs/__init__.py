"""Work the bot does on a clock: scheduled agent jobs and retention passes."""
