"""structlog for every log line, discord.py's stdlib records included: JSON when stderr is not a terminal
(production), a readable console otherwise. Every field goes through the bot's one redaction of its secrets
(:mod:`bot.redaction`), values nested in dicts and lists included."""

from __future__ import annotations

import logging
import sys

import structlog
from dbos._error import DBOSAwaitedWorkflowCancelledError  # not re-exported by dbos
from structlog.typing import EventDict, Processor, WrappedLogger

from bot.redaction import Redactor


class SecretRedactor:
    """A log processor: every field of a line through the redaction (an exception's text is a field by then)."""

    def __init__(self, redact: Redactor) -> None:
        self._redact = redact

    def __call__(self, _logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
        return self._redact.value(event_dict)


class WithoutVoiceSupportWarnings(logging.Filter):
    """discord.py warns at every start that the optional voice packages (PyNaCl, davey) are missing; this bot
    has no voice, so the warnings only alarm. Everything else ``discord.client`` logs passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "voice will NOT be supported" not in record.getMessage()


VOICE_WARNINGS_FILTER = WithoutVoiceSupportWarnings()


class WithoutKilledWorkflowNoise(logging.Filter):
    """Drops what DBOS logs about a killed run's workflow; everything else ``dbos`` logs passes.

    A kill cancels its run's DBOS workflow, and DBOS then logs a warning with the repr of the step it stopped (the
    model request with the run's whole conversation: user content that has no place in logs) and a traceback for
    the workflow it parks; the run's own ``run_killed`` and ``run_workflow_cancelled`` lines say what happened."""

    _NOISE = ("Asyncio task cancelled for workflow or step", "was cancelled during execution")

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, DBOSAwaitedWorkflowCancelledError):
            return False
        message = record.getMessage()
        return not any(noise in message for noise in self._NOISE)


KILLED_WORKFLOW_FILTER = WithoutKilledWorkflowNoise()


def configure_logging(level: str, fmt: str, redact: Redactor | None = None) -> None:
    """Log at ``level`` as ``fmt`` (``json``, ``console``, ``auto``), every line through ``redact`` (none: no
    secrets to redact)."""
    use_json = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    renderer: Processor = structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer()
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            SecretRedactor(redact or Redactor(())),
            renderer,
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level.upper())
    logging.getLogger("discord.http").setLevel(logging.WARNING)
    logging.getLogger("discord.client").addFilter(VOICE_WARNINGS_FILTER)
    for noisy in ("httpx", "httpcore", "openai", "anthropic", "apscheduler"):  # a line per request, job
        logging.getLogger(noisy).setLevel(logging.WARNING)
    route_dbos_logs()


def route_dbos_logs() -> None:
    """Send DBOS's log records through ours, without a kill's noise.

    DBOS adds a console handler of its own (not JSON, not propagated) unless its logger has one already."""
    dbos = logging.getLogger("dbos")
    dbos.handlers = [logging.NullHandler()]
    dbos.propagate = True
    dbos.filters = [KILLED_WORKFLOW_FILTER]
