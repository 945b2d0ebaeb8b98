"""An announcement rendered in a server's language: the bot's words translated, the agent's text as it is, the same
parts every time (a delivery resumed after a crash continues where it stopped), and a row queued before its outcome
was kept as data still says its English status line."""

from __future__ import annotations

from decimal import Decimal

from bot.core.runs.announcements import Announcement, Outcome
from bot.discord_adapter.render import render
from bot.records import RunStatus, Usage

RUN = "0123abcd" + "e" * 24


def completion(body: str, *, outcome: bool = True, **fields) -> Announcement:
    return Announcement(
        kind="completion",
        status=fields.pop("status", RunStatus.COMPLETED),
        status_line=fields.pop("status_line", "completed successfully"),
        body=body,
        agent_label="researcher",
        run_id=RUN,
        session_key="k",
        stats_line="runtime 3s • tokens 1.5k (in 1.2k / out 300)",
        outcome=Outcome(
            error=fields.pop("error", None),
            runtime_seconds=3,
            usage=Usage(1200, 300, 1, 0, Decimal("0.5")),
            fallback_model="fake/backup",
        )
        if outcome
        else None,
        **fields,
    )


def test_the_bots_words_follow_the_language_and_the_agents_do_not():
    english = render(completion("Found **12** files."))
    spanish = render(completion("Found **12** files."), locale="es-ES")
    assert [m.content for m in english] == [
        "✅ Subagent **researcher** (run `0123abcd`): completed successfully\nFound **12** files.\n"
        "-# runtime 3s • tokens 1.5k (in 1.2k / out 300) • est. cost $0.50 • served by fake/backup"
    ]
    assert [m.content for m in spanish] == [
        "✅ Sub-agente **researcher** (ejecución `0123abcd`): terminó correctamente\nFound **12** files.\n"
        "-# duración 3s • tokens 1.5k (entrada 1.2k / salida 300) • costo est. $0.50 • servida por fake/backup"
    ]
    failed = render(completion("", status=RunStatus.FAILED, error="model timed out"), locale="es-419")
    assert failed[0].content.startswith("❌ Sub-agente **researcher** (ejecución `0123abcd`): falló: model timed out\n")
    assert "\n(sin salida)\n" in failed[0].content


def test_long_results_and_code_blocks_are_noted_in_the_language_and_cut_the_same_way_every_time():
    code = "```python\n" + "\n".join(f"print({n})" for n in range(400)) + "\n```"
    spanish = render(completion(f"Here:\n{code}\nDone."), locale="es-ES")
    assert "📎 `snippet.py` (400 líneas)" in spanish[0].content and spanish[0].attachments[0][0] == "snippet.py"
    long = "word " * 2000
    [attached] = render(completion(long), locale="es-ES")
    assert "\n*(resultado completo adjunto como result.md, 10.000 caracteres)*\n" in attached.content  # 10,000
    assert render(completion(long), locale="es-ES") == [attached]  # deterministic: a resumed delivery matches
    many = "\n\n".join(f"Paragraph {n}: " + "text " * 300 for n in range(4))
    assert render(completion(many), locale="es-ES") == render(completion(many), locale="es-ES")


def test_a_row_queued_before_its_outcome_was_kept_says_its_english_status_line():
    old = completion("Done.", outcome=False, status=RunStatus.FAILED, status_line="failed: boom")
    [message] = render(old, locale="es-ES")
    assert message.content == (
        "❌ Sub-agente **researcher** (ejecución `0123abcd`): failed: boom\nDone.\n"
        "-# runtime 3s • tokens 1.5k (in 1.2k / out 300)"
    )
