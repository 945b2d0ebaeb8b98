"""The bot's posts in the server's language, its answers in the member's: a Spanish server and an English one.

What nobody asked for (an announcement, a run's status message, an approval request) follows the server's preferred
locale; what a member asked for (``/subagents list|info|log``, ``/usage``) follows that member's own locale, whatever
the server's. The agent's text is never translated, and what the model reads stays English.
"""

from __future__ import annotations

from bot.agents.tool_gate import DENIED
from tests.harness import QUICK_STATUS_EDITS, answer_to
from tests.test_wire_approvals import asking, recorded
from tests.test_wire_control import member
from tests.test_wire_status import buttons, click

THREADS_ON = "[session.thread_bindings]\nspawn_subagent_sessions = true\n"
EVENT = "[Internal task completion event]"


async def answer_in(world, user, channel, command, /, *, locale="en-US", **options) -> dict:
    """Run a slash command as ``user`` in ``channel`` with the member's ``locale``; its private answer."""
    inter = await world.discord.slash(user, channel, command, locale=locale, **options)
    ack = await world.discord.wait_ack(inter)
    assert ack.status_code == 200 and ack.ephemeral
    reply = await world.discord.wait_followup(inter, timeout=40)
    assert reply["flags"] & 64
    return reply


async def command_in(world, user, channel, command, /, *, locale="en-US", **options) -> str:
    """As :func:`answer_in`, its text."""
    return (await answer_in(world, user, channel, command, locale=locale, **options))["content"]


def run_id_of(spawned: str) -> str:
    """The run id prefix a spawn's answer ends with, in either language: ``… run 0123abcd).``."""
    return spawned.rstrip(").").rsplit(" ", 1)[1]


def spanish_server(world):
    """A second server whose preferred locale is Spanish, with a channel and Alice a member; it and its channel.

    The commands are synced globally, so they are there too."""
    world.guild_commands = False
    guild = world.discord.add_guild("Servidor", locale="es-ES")
    channel = world.discord.add_text_channel(guild, "general")
    world.discord.add_member(guild, world.alice)
    return guild, channel


def announcement_for(run_id: str):
    """Predicate: the announcement of run ``run_id``, in either language."""
    return lambda message: f" `{run_id}`): " in message["content"]


def researcher_or_history(body: dict) -> str:
    """The researcher finds something; the main agent answers with what it was told."""
    if "Subagent Context" in body["messages"][0]["content"]:
        return "Found 12 files."
    return "Heard."


async def test_announcements_follow_the_servers_language_in_a_channel_and_a_thread_and_the_model_reads_english(world):
    world.extra_config = THREADS_ON
    world.llm.default = researcher_or_history
    _, spanish = spanish_server(world)
    bot = await world.start_bot()

    here = run_id_of(await command_in(world, world.alice, spanish, "subagents spawn", agent="researcher", task="Count"))
    posted = await world.discord.wait_for_message(spanish, announcement_for(here))
    header, body, footer = posted["content"].split("\n")
    assert header == f"<@{world.alice.id}> ✅ Sub-agente **researcher** (ejecución `{here}`): terminó correctamente"
    assert body == "Found 12 files."  # the agent's words as it wrote them
    assert footer.startswith("-# duración ") and " • tokens " in footer and "(entrada " in footer

    tally = await command_in(world, world.alice, world.channel, "subagents spawn", agent="researcher", task="Tally")
    there = run_id_of(tally)
    posted = await world.discord.wait_for_message(world.channel, announcement_for(there))
    header, body, footer = posted["content"].split("\n")
    assert header == f"<@{world.alice.id}> ✅ Subagent **researcher** (run `{there}`): completed successfully"
    assert body == "Found 12 files." and footer.startswith("-# runtime ") and "(in " in footer

    # a Spanish-speaking member's spawn in the English server still posts in the server's language
    bob = member(world, "bob")
    answer = await command_in(
        world, bob, world.channel, "subagents spawn", locale="es-ES", agent="researcher", task="Tally more"
    )
    bobs = run_id_of(answer)
    posted = await world.discord.wait_for_message(world.channel, announcement_for(bobs))
    assert posted["content"].startswith(
        f"<@{bob.id}> ✅ Subagent **researcher** (run `{bobs}`): completed successfully"
    )

    await world.stop_bot(bot)  # after a restart the server's language is read again
    await world.start_bot()
    in_thread = await command_in(
        world, world.alice, spanish, "subagents spawn", agent="researcher", task="Look deeper", thread=True
    )
    deeper = run_id_of(in_thread)
    [thread] = world.discord.threads(spanish)
    posted = await world.discord.wait_for_message(thread, announcement_for(deeper))
    assert f"Sub-agente **researcher** (ejecución `{deeper}`): terminó correctamente" in posted["content"]
    assert "\n-# duración " in posted["content"]

    # the main agent reads its sub-agent's completion in English, in the Spanish server too
    await world.discord.send_user_message(world.alice, spanish, f"<@{world.discord.bot_user_id}> ¿qué encontraste?")
    await world.discord.wait_for_message(spanish, lambda m: m["content"] == "Heard.")
    told = [m["content"] for m in world.llm.requests[-1]["messages"] if m["role"] == "user" and EVENT in m["content"]]
    assert told and "status: completed successfully" in told[0] and "\nStats: runtime " in told[0]
    assert "terminó" not in told[0] and "duración" not in told[0]


def status_in(run_id: str, word: str = "ejecución"):
    """Predicate: the live status message of run ``run_id``, its last line in the server's words."""
    return lambda m: m["content"].endswith(f"-# {word} {run_id}")


async def test_a_spanish_servers_status_message_and_approval_request_are_spanish_and_the_model_reads_english(world):
    calls = asking(world)
    world.guild.locale = "es-ES"
    world.status_edit_interval = QUICK_STATUS_EDITS
    bot = await world.start_bot()
    answer = await command_in(world, world.alice, world.channel, "subagents spawn", agent="researcher", task="Shout hi")
    run_id = run_id_of(answer)

    status = await world.discord.wait_for_message(
        world.channel, lambda m: status_in(run_id)(m) and "esperando aprobación" in m["content"]
    )
    assert status["content"].startswith("✋ **Shout hi** · esperando aprobación · ")
    assert " · tokens " in status["content"] and "llamada" in status["content"]
    request = await world.discord.wait_for_message(world.channel, lambda m: "`calc__shout`" in m["content"])
    approval_id = world.rows("SELECT id FROM approvals")[0][0]
    assert request["content"].startswith(f"✋ La ejecución {run_id} quiere llamar a `calc__shout` con:\n```json\n")
    assert '{"text": "hi"}' in request["content"]  # the arguments as they are
    assert request["content"].split("```")[-1].startswith(f"<@{world.alice.id}> o un moderador: aprueba o rechaza en ")
    assert request["content"].endswith(" minutos (sin respuesta, se rechaza).")

    await world.stop_bot(bot)
    await world.start_bot()
    bob = member(world, "bob")  # not the owner, not a moderator: refused, the request unchanged
    inter, _ = await click(world, bob, request, f"approval:approve:{approval_id}")
    assert (await world.discord.wait_followup(inter))["flags"] & 64
    assert buttons(world.discord.get_message(request["id"])) == [
        f"approval:approve:{approval_id}",
        f"approval:deny:{approval_id}",
    ]
    mod = member(world, "mod", manage_messages=True)
    inter, _ = await click(world, mod, request, f"approval:deny:{approval_id}")
    await world.discord.wait_followup(inter)

    edited = await world.discord.wait_for_message(
        world.channel, lambda m: m["id"] == request["id"] and "rechazada" in m["content"]
    )
    assert edited["content"] == f"🚫 `calc__shout` (ejecución {run_id}) rechazada por <@{mod.id}>."
    assert buttons(edited) == []
    posted = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert f"✅ Sub-agente **researcher** (ejecución `{run_id}`): terminó correctamente" in posted["content"]
    final = await world.discord.wait_for_message(
        world.channel, lambda m: m["id"] == status["id"] and "completada" in m["content"]
    )
    assert final["content"].startswith("✅ **Shout hi** · completada · ") and buttons(final) == []
    assert world.llm.requests[-1]["messages"][-1]["content"] == DENIED  # the model reads its refusal in English
    assert recorded(calls) == []


async def test_an_english_servers_approval_request_stays_english(world):
    asking(world)
    world.status_edit_interval = QUICK_STATUS_EDITS
    await world.start_bot()
    answer = await command_in(
        world, world.alice, world.channel, "subagents spawn", locale="es-ES", agent="researcher", task="Shout hi"
    )
    run_id = run_id_of(answer)
    request = await world.discord.wait_for_message(world.channel, lambda m: "`calc__shout`" in m["content"])
    assert request["content"].startswith(f"✋ Run {run_id} wants to call `calc__shout` with:\n")
    status = await world.discord.wait_for_message(
        world.channel, lambda m: status_in(run_id, "run")(m) and "awaiting approval" in m["content"]
    )
    assert status["content"].startswith("✋ **Shout hi** · awaiting approval · ")


async def test_listings_info_log_and_usage_follow_the_members_own_language_in_either_server(world):
    world.extra_config = THREADS_ON
    world.llm.default = researcher_or_history
    servidor, spanish = spanish_server(world)
    await world.start_bot()
    answer = await command_in(world, world.alice, world.channel, "subagents spawn", agent="researcher", task="Count")
    run_id = run_id_of(answer)
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    bob = member(world, "bob")  # not the owner; his Discord speaks Spanish
    world.discord.add_member(servidor, bob)

    listing = (await command_in(world, bob, world.channel, "subagents list", locale="es-ES")).splitlines()
    assert listing[:3] == ["sub-agentes activos:", "-----", "(ninguno)"]
    assert listing[4:6] == ["sub-agentes recientes (últimos 30 min):", "-----"]
    assert listing[6].startswith("1. Count (fake/gpt-4o-mini, ") and listing[6].endswith(") terminada")
    assert "tokens " in listing[6] and "(entrada " in listing[6]
    english = (await command_in(world, world.alice, world.channel, "subagents list")).splitlines()
    assert english[0] == "active subagents:" and english[6].endswith(") done")

    info = (await command_in(world, bob, world.channel, "subagents info", locale="es-419", target="1")).splitlines()
    assert info[0] == "ℹ️ Información del sub-agente"
    assert "Estado: terminada" in info and f"Ejecución: {world.rows('SELECT id FROM runs')[0][0]}" in info
    assert "Entrega: entregada" in info and "Transcripción: 2 mensajes" in info
    assert any(line.startswith("Uso: 1 solicitud • 0 llamadas a herramientas • tokens ") for line in info)
    assert "Status: done" in await command_in(world, world.alice, world.channel, "subagents info", target="1")

    log = await command_in(world, bob, world.channel, "subagents log", locale="es-ES", target="1")
    assert log.splitlines() == ["📜 Registro del sub-agente: Count", "Usuario: Count", "Asistente: Found 12 files."]

    # the Spanish server, asked by a member whose Discord speaks English: English, in a channel and in a thread
    in_thread = await command_in(
        world, world.alice, spanish, "subagents spawn", agent="researcher", task="Dig", thread=True
    )
    dug = run_id_of(in_thread)
    [thread] = world.discord.threads(spanish)
    await world.discord.wait_for_message(thread, announcement_for(dug))
    listed = (await command_in(world, world.alice, thread, "subagents list")).splitlines()
    assert listed[0] == "active subagents:" and listed[4] == "recent subagents (last 30m):"
    assert (await command_in(world, world.alice, spanish, "subagents log", target="1")).startswith(
        "📜 Subagent log: Dig"
    )

    mine = (await command_in(world, world.alice, thread, "usage", period="day")).splitlines()
    assert mine[0].startswith(f"**Usage of <@{world.alice.id}>, today** (") and mine[1].startswith("1 run • 1 request")
    theirs = (await command_in(world, bob, spanish, "usage", locale="es-ES", period="day")).splitlines()
    assert theirs[0].startswith(f"**Uso de <@{bob.id}>, hoy** (")
    assert theirs[1] == "Ninguna ejecución y ninguna solicitud al modelo."
    week = await answer_in(world, world.alice, world.channel, "usage", locale="es-ES")
    lines = week["content"].splitlines()
    assert lines[0].startswith(f"**Uso de <@{world.alice.id}>, los últimos 7 días** (") and " a " in lines[0]
    assert lines[1].startswith("1 ejecución • 1 solicitud • tokens ")
    [chart] = week["attachments"]
    assert chart["filename"] == "usage.png" and chart["description"].startswith("Ejecuciones y costo por día del ")


async def test_an_answer_that_failed_says_why_in_the_servers_language_and_the_error_as_it_is(world):
    world.llm.error(401, "Incorrect API key provided")
    _, spanish = spanish_server(world)
    await world.start_bot()
    bob = member(world, "bob")

    asked = await world.discord.send_user_message(world.alice, spanish, f"<@{world.discord.bot_user_id}> hola")
    answer = await world.discord.wait_for_message(spanish, answer_to(asked))
    assert answer["content"] == (
        "No pude responder: falló: model provider rejected the API key (401); check the key in TB_TEST_API_KEY "
        "(providers.fake.api_key_env)."
    )
    world.llm.error(401, "Incorrect API key provided")
    asked = await world.discord.send_user_message(bob, world.channel, f"<@{world.discord.bot_user_id}> hi")
    answer = await world.discord.wait_for_message(world.channel, answer_to(asked))
    assert answer["content"].startswith("I couldn't answer: failed: model provider rejected the API key (401)")


async def test_schedules_memories_and_tools_answer_each_member_in_their_own_language(world):
    world.extra_config = "[memory]\nenabled = true\n"
    reports = world.discord.add_text_channel(world.guild, "reports")
    await world.start_bot()
    admin = member(world, "admin", manage_guild=True)

    added = await command_in(
        world,
        admin,
        world.channel,
        "schedule add",
        locale="es-ES",
        name="digest",
        cron="0 9 * * *",
        agent="researcher",
        prompt="Summarise",
        channel=reports,
    )
    line = f"**digest** (id 1, añadida por <@{admin.id}>): `0 9 * * *` UTC → researcher en <#{reports.id}>, próxima <t:"
    assert added.startswith(f"Programada {line}") and added.endswith(":R>.")
    listed = await command_in(world, admin, world.channel, "schedule list", locale="es-ES")
    assert listed.startswith(f"Programaciones de este servidor:\n- {line}")
    boss = member(world, "boss", manage_guild=True)  # another admin, whose Discord speaks English
    assert (await command_in(world, boss, world.channel, "schedule list")).startswith(
        f"Schedules in this server:\n- **digest** (id 1, added by <@{admin.id}>): `0 9 * * *` UTC → researcher in "
    )

    assert await command_in(world, world.alice, world.channel, "memory list", locale="es-ES") == (
        "No se recuerda nada de tus conversaciones en este servidor."
    )
    assert await command_in(world, admin, world.channel, "memory list") == (
        "Nothing is remembered from this server's conversations."
    )

    tools = await command_in(world, world.alice, world.channel, "subagents tools", locale="es-ES", agent="main")
    assert tools.splitlines()[0] == (
        "🧰 Herramientas de **main** (perfil de riesgo: ninguno · perfil de ejecución: ninguno)"
    )


async def test_a_spanish_servers_result_that_could_not_be_posted_is_told_by_dm_in_spanish(world):
    world.llm.reply("final answer")
    world.guild.locale = "es-ES"
    await world.start_bot()
    posts = rf"^/channels/{world.channel.id}/messages$"
    world.discord.inject_failure("POST", posts, 403, times=1, code=50001, message="Missing Access")

    answer = await command_in(world, world.alice, world.channel, "subagents spawn", agent="researcher", task="x")
    run_id = run_id_of(answer)
    dm = world.discord.add_dm_channel(world.alice)
    notice = await world.discord.wait_for_message(dm, lambda m: f"/subagents log {run_id}" in m["content"])
    assert notice["content"] == (
        f"<@{world.alice.id}> ⚠️ El resultado del sub-agente **researcher** no se pudo publicar en "
        f"<#{world.channel.id}>: Discord respondió 403 Forbidden (error code: 50001): Missing Access. "
        f"`/subagents info {run_id}` y `/subagents log {run_id}`, usados donde lo iniciaste, muestran el resultado."
    )
    await world.quiescent()
    info = await command_in(world, world.alice, world.channel, "subagents info", locale="es-ES", target=run_id)
    assert (
        "Entrega: falló tras 1 intento: Discord respondió 403 Forbidden (error code: 50001): Missing Access. "
        "Se avisó a quien lo pidió por mensaje directo."
    ) in info.splitlines()
    english = await command_in(world, world.alice, world.channel, "subagents info", target=run_id)
    assert any(
        line.startswith("Delivery: failed after 1 attempt(s): Discord answered 403") for line in english.splitlines()
    )
