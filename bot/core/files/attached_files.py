"""The ``attach_file`` tool: an agent returns a file, which its run stores and posts with its result.

A file's name is a plain file name with an extension (no folders); its content is text, redacted like everything
stored. Limits (``[files]``): bytes per file and files per run; attaching a name again replaces that file. A refusal
is data the model reads, naming the rule. The run's announcement (or reply) carries the files' names and sizes; the
adapter reads their bytes from the store when it posts them.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import structlog
from pydantic_ai import RunContext, Tool

from bot.core.context import CoreContext

log = structlog.get_logger(__name__)

ATTACH_FILE = "attach_file"
MAX_NAME_CHARS = 100
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_. -]*\.[A-Za-z0-9]{1,10}")


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a file name a run may attach (``None``: it is)."""
    if not name or len(name) > MAX_NAME_CHARS:
        return f"A file name has 1 to {MAX_NAME_CHARS} characters."
    if "/" in name or "\\" in name or ".." in name:
        return "A file name has no folders: no '/', '\\' or '..'."
    if not _NAME.fullmatch(name):
        return (
            "A file name is letters, digits, '_', '-', '.' and spaces, starts with a letter, digit or '_', and ends "
            "with an extension such as '.py', '.md' or '.csv'."
        )
    return None


class RunNamed(Protocol):
    """A turn's deps, as the tool reads them: the run it attaches files to."""

    @property
    def run_id(self) -> str: ...


def _refused(reason: str) -> dict[str, Any]:
    return {"status": "error", "error": f"File not attached: {reason}"}


class AttachedFiles:
    """Stores the files a run's agent attaches, within the ``[files]`` limits."""

    def __init__(self, ctx: CoreContext) -> None:
        self._ctx = ctx
        tool = Tool(
            self._attach_file,
            takes_ctx=True,
            name=ATTACH_FILE,
            description=(
                "Return a file with your result: a file name with an extension (e.g. 'report.md', 'script.py') and "
                "its text content. It is posted with your answer. Attaching the same name again replaces it."
            ),
        )  # built once: its schema is read from the signature, which takes a while
        self._tool = tool

    async def attach(self, run_id: str, name: str, content: str) -> dict[str, Any]:
        limits = self._ctx.config.files
        problem = name_problem(name)
        if problem is not None:
            return _refused(problem)
        size = len(content.encode("utf-8"))
        if size > limits.max_file_bytes:
            return _refused(f"it has {size:,} bytes; a file has at most {limits.max_file_bytes:,}.")
        repo = self._ctx.repos.run_files
        async with self._ctx.repos.db.transaction() as tx:
            existing = await repo.of_run(tx, run_id)
            if name not in {file.name for file in existing} and len(existing) >= limits.max_files_per_run:
                return _refused(f"this run already has {len(existing)} files, the most it may attach.")
            stored = await repo.put(tx, run_id, name, self._ctx.redact.text(content), self._ctx.clock())
        log.info("run_file_attached", run_id=run_id, file_name=name, size=stored.size)
        return {"status": "ok", "name": name, "bytes": stored.size, "posted": "with this run's result"}

    def tool(self) -> Tool[Any] | None:
        """The ``attach_file`` tool (``None``: files are off); the turn's deps name its run."""
        return self._tool if self._ctx.config.files.enabled else None

    async def _attach_file(self, ctx: RunContext[RunNamed], name: str, content: str) -> dict[str, Any]:
        return await self.attach(ctx.deps.run_id, name, content)
