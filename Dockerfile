# threadbound in a container: slim Python, the project installed from its own files, a non-root user.
# Build: docker build -t threadbound .
# Run:   docker run -e DISCORD_TOKEN -v "$PWD/config.toml:/config/config.toml:ro" -v threadbound-data:/data threadbound
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# tini as PID 1: it forwards the stop signal to the bot (PID 1 itself ignores SIGTERM it does not handle) and reaps
# what MCP servers leave behind.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY cogs ./cogs
COPY storage ./storage
RUN pip install . \
    && useradd --system --uid 10001 --no-create-home --home-dir /nonexistent threadbound \
    && mkdir -p /data /config \
    && chown threadbound /data

USER threadbound
VOLUME ["/data"]

# Healthy while this process's heartbeat row in the database is younger than its lease (see README,
# "Running more than one process"); BOT_ARGS carries the same shard flags as the command.
ENV BOT_CONFIG=/config/config.toml BOT_ARGS=""
HEALTHCHECK --interval=30s --timeout=15s --start-period=60s --retries=3 \
    CMD python -m bot health --config "$BOT_CONFIG" $BOT_ARGS

# docker stop sends SIGTERM: the bot closes cleanly within its 8 s stop bound, below Docker's default 10 s grace
# (see README, "Stopping the bot").
STOPSIGNAL SIGTERM
ENTRYPOINT ["tini", "--", "sh", "-c", "exec python -m bot --config \"$BOT_CONFIG\" $BOT_ARGS \"$@\"", "threadbound"]
