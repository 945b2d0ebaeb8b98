"""Logs are structlog JSON (stdlib records included) and never contain the configured secrets."""

from __future__ import annotations

import json
import logging

import structlog

from bot.logging_setup import configure_logging
from bot.redaction import Redactor


def test_json_logs_redact_secrets_everywhere(capsys):
    before = structlog.get_config()  # the tests' own configuration (conftest.py), put back afterwards
    configure_logging("info", "json", Redactor(["bot-token-123456", "sk-api-key-987654"]))
    try:
        with structlog.contextvars.bound_contextvars(run_id="r1", session_key="agent:main:subagent:x"):
            structlog.get_logger("bot.test").info("calling", url="https://x/?key=sk-api-key-987654")
        logging.getLogger("discord.gateway").warning("token bot-token-123456 rejected")
        try:
            raise RuntimeError("boom with bot-token-123456")
        except RuntimeError:
            structlog.get_logger("bot.test").exception("failed")
    finally:
        logging.getLogger().handlers.clear()
        structlog.configure(**before)

    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [entry["event"] for entry in lines] == ["calling", "token [REDACTED] rejected", "failed"]
    assert lines[0]["run_id"] == "r1" and lines[0]["url"] == "https://x/?key=[REDACTED]"
    assert lines[1]["logger"] == "discord.gateway" and lines[1]["level"] == "warning"
    assert "boom with [REDACTED]" in lines[2]["exception"]
    assert "bot-token-123456" not in str(lines) and "sk-api-key-987654" not in str(lines)


def test_the_scheduler_logs_what_goes_wrong_not_a_line_per_job(capsys):
    """APScheduler logs each job added, run and executed at info: with a timer per deadline, the start of a bot
    holding many wrote as many lines."""
    before = structlog.get_config()
    configure_logging("info", "json")
    try:
        logging.getLogger("apscheduler.scheduler").info('Added job "deadline" to job store "default"')
        logging.getLogger("apscheduler.executors.default").warning('Run time of job "deadline" was missed')
        structlog.get_logger("bot.test").info("bot_ready")
    finally:
        logging.getLogger().handlers.clear()
        structlog.configure(**before)

    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [entry["event"] for entry in lines] == ['Run time of job "deadline" was missed', "bot_ready"]
