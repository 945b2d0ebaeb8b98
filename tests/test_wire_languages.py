"""Each member reads commands, replies and refusals in their own Discord language; the model reads English.

A member's language is their interaction's locale; a message (a mention, no interaction) is answered in its
server's preferred locale. English and Spanish are complete."""

from __future__ import annotations

import json

from bot.i18n import localized
from tests.fakes.openai_server import Step
from tests.harness import QUICK_STATUS_EDITS
from tests.test_wire_control import member
from tests.test_wire_status import buttons, status_for
from tests.test_wire_threads import THREADS_ON

SPANISH = "es-ES"


async def ask(world, user, name, *, channel=None, locale="en-US", **options) -> str:
    """Run a slash command in ``user``'s language; return the text of its private answer."""
    inter = await world.discord.slash(user, channel or world.channel, name, locale=locale, **options)
    ack = await world.discord.wait_ack(inter)
    assert ack.status_code == 200 and ack.ephemeral
    reply = await world.discord.wait_followup(inter, timeout=40)
    assert reply["flags"] & 64, "replies to commands are private"
    return reply["content"]


def run_of(reply: str) -> str:
    """The run id a spawn's reply names, in either language."""
    return reply.rsplit(" ", 1)[1].rstrip(").")


async def test_commands_are_described_in_spanish_for_spanish_clients_and_keep_their_english_names(world):
    await world.start_bot()
    commands = {command["name"]: command for command in world.discord.synced_commands(world.guild)}
    subagents = commands["subagents"]
    assert subagents["description"] == "Spawn and manage sub-agents"
    assert subagents["description_localizations"] == {
        "es-ES": "Inicia y gestiona sub-agentes",
        "es-419": "Inicia y gestiona sub-agentes",
    }
    spawn = next(option for option in subagents["options"] if option["name"] == "spawn")
    assert (
        spawn["description_localizations"]["es-419"]
        == "Pon a un sub-agente a trabajar en una tarea; su resultado se publica aquí"
    )
    task = next(option for option in spawn["options"] if option["name"] == "task")
    assert (task["description"], task["description_localizations"]["es-ES"]) == (
        "What the sub-agent should do",
        "Qué debe hacer el sub-agente",
    )
    thinking = next(option for option in spawn["options"] if option["name"] == "thinking")
    high = next(choice for choice in thinking["choices"] if choice["value"] == "high")
    assert (high["name"], high["name_localizations"]["es-ES"]) == ("high", "alto")
    period = next(option for option in commands["usage"]["options"] if option["name"] == "period")
    assert {choice["value"]: choice["name_localizations"]["es-ES"] for choice in period["choices"]} == {
        "day": "día",
        "week": "semana",
        "month": "mes",
    }
    # names stay English (what the README and the agents say); nothing is told to English clients twice
    named = [item for command in commands.values() for item in _commands_and_options(command)]
    assert [item["name"] for item in named if item.get("name_localizations")] == []
    assert "en-US" not in json.dumps(list(commands.values()))


def _commands_and_options(item: dict) -> list[dict]:
    return [item, *(found for option in item.get("options") or [] for found in _commands_and_options(option))]


async def test_two_members_of_one_server_each_read_their_own_language(world):
    world.llm.default = lambda body: Step.hang()
    await world.start_bot()
    bob = member(world, "bob")  # speaks Spanish; not the owner of Alice's run, not an admin

    mine = await ask(world, world.alice, "subagents spawn", agent="researcher", task="Summarise the plan")
    assert mine.startswith("Spawned subagent researcher (session agent:researcher:subagent:")
    his = await ask(world, bob, "subagents spawn", locale=SPANISH, agent="researcher", task="Resume el plan")
    assert his.startswith("Sub-agente researcher iniciado (sesión agent:researcher:subagent:")
    assert ", ejecución " in his
    await world.llm.wait_hanging(2)

    # someone else's run: refused, each in their own words, nothing killed
    refused = await ask(world, bob, "subagents kill", locale=SPANISH, target="Summarise the plan")
    assert refused == (
        f"⚠️ Solo puedes detener ejecuciones que iniciaste tú; Summarise the plan es de <@{world.alice.id}>. "
        "Pídeselo a esa persona o a un moderador."
    )
    refused = await ask(world, world.alice, "subagents kill", target="Resume el plan")
    assert refused == (
        f"⚠️ You can only kill runs you started; Resume el plan belongs to <@{bob.id}>. Ask them or a moderator."
    )
    assert world.rows("SELECT status FROM runs") == [("running",), ("running",)]

    # a bad target, a second command of each
    assert await ask(world, bob, "subagents info", locale=SPANISH, target="zzz") == (
        "⚠️ Id de sub-agente desconocido: zzz"
    )
    assert await ask(world, world.alice, "subagents info", target="zzz") == "⚠️ Unknown subagent id: zzz"
    assert await ask(world, bob, "subagents info", locale="es-419", target="9") == (
        "⚠️ Número de sub-agente no válido: 9"
    )

    # /settings as a member without Manage Server
    assert await ask(world, bob, "settings thread-bindings", locale=SPANISH) == (
        "⚠️ Necesitas el permiso Gestionar servidor para ver o cambiar estos ajustes."
    )
    assert await ask(world, world.alice, "settings budgets") == (
        "⚠️ You need the Manage Server permission to view or change these settings."
    )
    admin = member(world, "admin", manage_guild=True)
    shown = await ask(world, admin, "settings budgets", locale=SPANISH)
    assert shown.splitlines()[:2] == [
        "Topes de gasto aquí (0 = sin tope):",
        "member_runs_per_hour: sin tope (por defecto)",
    ]

    # their own run: killed, told in Spanish
    assert await ask(world, bob, "subagents kill", locale=SPANISH, target="Resume el plan") == (
        "detenido Resume el plan."
    )
    assert await ask(world, world.alice, "stop") == "⚙️ Agent was aborted. Stopped 1 sub-agent."
    assert await ask(world, bob, "stop", locale=SPANISH) == "No tienes nada en marcha en esta conversación."


async def test_in_a_thread_and_after_a_restart_the_member_still_reads_their_language(world):
    world.llm.hang()
    await world.start_bot()
    bob = member(world, "bob")
    await ask(world, world.alice, "subagents spawn", agent="researcher", task="Summarise the plan")
    await world.llm.wait_hanging(1)
    thread = world.discord.add_thread(world.channel, "discussion")

    assert await ask(world, bob, "unfocus", channel=thread, locale=SPANISH) == (
        "ℹ️ Esta conversación no está vinculada ahora."
    )
    assert await ask(world, world.alice, "unfocus", channel=thread) == "ℹ️ This conversation is not currently focused."
    assert await ask(world, bob, "focus", channel=thread, locale=SPANISH, target="#7") == (
        "⚠️ Número de sub-agente no válido: #7"
    )
    assert await ask(world, bob, "session idle", channel=thread, locale=SPANISH, duration="soon") == (
        "ℹ️ Esta conversación no está vinculada ahora."
    )

    await world.stop_bot(world.bots[0])
    await world.start_bot()
    refused = await ask(world, bob, "subagents kill", locale=SPANISH, target="1")
    assert refused.startswith("⚠️ Solo puedes detener ejecuciones que iniciaste tú; Summarise the plan es de ")
    assert await ask(world, bob, "subagents steer", locale=SPANISH, target="1", message=" ") == (
        "⚠️ Para redirigir hace falta un mensaje."
    )


async def test_buttons_answer_whoever_clicks_in_their_language(world):
    world.status_edit_interval = QUICK_STATUS_EDITS
    world.llm.hang()
    await world.start_bot()
    bob = member(world, "bob")
    run = run_of(await ask(world, world.alice, "subagents spawn", agent="researcher", task="Summarise the plan"))
    await world.llm.wait_hanging(1)
    full_id = world.rows("SELECT id FROM runs")[0][0]
    status = await status_for(world, run, lambda m: bool(buttons(m)))

    inter = await world.discord.click_button(bob, status, f"run:kill:{full_id}", locale=SPANISH)
    refusal = await world.discord.wait_followup(inter)
    assert refusal["content"].startswith("⚠️ Solo puedes detener ejecuciones que iniciaste tú;")
    assert refusal["flags"] & 64

    inter = await world.discord.click_button(world.alice, status, f"run:steer:{full_id}", locale=SPANISH)
    ack = await world.discord.wait_ack(inter)
    assert ack.type == 9 and ack.data["title"] == "Redirigir este sub-agente"
    assert ack.data["components"][0]["components"][0]["label"] == "Nueva dirección"
    inter = await world.discord.click_button(world.alice, status, f"run:steer:{full_id}")
    ack = await world.discord.wait_ack(inter)
    assert ack.data["title"] == "Steer this sub-agent"

    inter = await world.discord.click_button(world.alice, status, f"run:kill:{full_id}", locale=SPANISH)
    assert (await world.discord.wait_followup(inter))["content"] == "detenido Summarise the plan."
    assert world.rows("SELECT status FROM runs") == [("killed",)]


async def test_a_mention_is_answered_in_its_servers_language_and_the_model_reads_english(world):
    def agent(body):
        if body["messages"][-1]["role"] == "tool":
            return "could not: " + body["messages"][-1]["content"]
        return Step.calls([("sessions_spawn", {"agentId": "nobody", "task": "dig"})])

    world.llm.default = agent
    world.extra_config = '[agents.defaults.subagents]\nallow_agents = ["*"]\n'
    spanish_server = world.discord.add_guild("Servidor", owner=world.alice, locale=SPANISH)
    plaza = world.discord.add_text_channel(spanish_server, "plaza")
    bob = member(world, "bob")
    world.discord.add_member(spanish_server, bob)
    await world.start_bot()
    bot = f"<@{world.discord.bot_user_id}>"

    # a mention without words: told how, in each server's language
    empty = await world.discord.send_user_message(bob, plaza, bot)
    told = await world.discord.wait_for_message(
        plaza, lambda m: m.get("message_reference", {}).get("message_id") == empty["id"]
    )
    assert (
        told["content"]
        == localized("mention-needs-text", SPANISH)
        == ("Mencióname con un mensaje, p. ej. `@me resume el plan`.")
    )
    empty = await world.discord.send_user_message(world.alice, world.channel, bot)
    told = await world.discord.wait_for_message(
        world.channel, lambda m: m.get("message_reference", {}).get("message_id") == empty["id"]
    )
    assert told["content"] == "Mention me with a message, e.g. `@me summarise the plan`."

    # the agent's refused spawn: the model reads the contract's English while the person speaks Spanish
    await world.discord.send_user_message(bob, plaza, f"{bot} investiga")
    answer = await world.discord.wait_for_message(plaza, lambda m: m["content"].startswith("could not: "))
    result = json.loads(answer["content"].removeprefix("could not: "))
    assert result["error"] == 'Unknown agentId "nobody". Configured agents: main, researcher.'

    # the same refusal for a person's own command is in their language
    assert await ask(
        world, bob, "subagents spawn", channel=world.channel, locale=SPANISH, agent="nobody", task="x"
    ) == ('⚠️ agentId desconocido "nobody". Agentes configurados: main, researcher.')


async def test_an_admin_sets_a_cap_and_a_spanish_member_over_it_reads_why_in_spanish(world):
    world.llm.default = lambda body: Step.hang()
    await world.start_bot()
    admin, bob = member(world, "admin", manage_guild=True), member(world, "bob")
    shown = await ask(world, admin, "settings budgets", locale=SPANISH, member_runs_per_hour=1)
    assert shown.splitlines()[:3] == [
        "Actualizado.",
        "member_runs_per_hour: 1 ejecución (este servidor)",
        "member_tokens_per_day: sin tope (por defecto)",
    ]
    assert "member_concurrent_runs: 10 ejecuciones (por defecto)" in shown.splitlines()

    await ask(world, bob, "subagents spawn", locale=SPANISH, agent="researcher", task="Uno")
    refused = await ask(world, bob, "subagents spawn", locale=SPANISH, agent="researcher", task="Dos")
    assert refused.startswith(
        "⚠️ Presupuesto agotado: tus ejecuciones de la última hora en este servidor: 1 de 1 ejecución "
        "(member_runs_per_hour). Se libera una a las "
    ), refused
    await ask(world, world.alice, "subagents spawn", agent="researcher", task="One")
    refused = await ask(world, world.alice, "subagents spawn", agent="researcher", task="Two")
    assert refused.startswith(
        "⚠️ Over budget: your runs in the last hour on this server: 1 of 1 run (member_runs_per_hour). One frees up at "
    ), refused


async def test_in_a_spanish_server_a_thread_not_yours_is_explained_in_spanish(world):
    world.guild.locale = SPANISH  # the server's preferred locale: said where no interaction tells a language
    world.extra_config = THREADS_ON
    world.llm.default = lambda body: "eco: " + body["messages"][-1]["content"]
    await world.start_bot()
    spawned = await ask(world, world.alice, "subagents spawn", agent="researcher", task="Investiga", thread=True)
    assert spawned.startswith("Spawned subagent researcher")  # Alice's own client speaks English
    [thread] = world.discord.threads(world.channel)
    await world.quiescent()
    bob = member(world, "bob")

    await world.discord.send_user_message(bob, thread, "esto es mío")
    notice = await world.discord.wait_for_message(world.discord.add_dm_channel(bob), lambda m: True)
    assert notice["content"] == (
        f"🔒 <#{thread.id}> está vinculado a la sesión de sub-agente de <@{world.alice.id}>; allí solo esa persona o "
        "un moderador pueden hablar con ella. Inicia la tuya con `/subagents spawn`."
    )
    blank = await world.discord.send_user_message(bob, world.channel, f"<@{world.discord.bot_user_id}>")
    told = await world.discord.wait_for_message(
        world.channel, lambda m: (m.get("message_reference") or {}).get("message_id") == blank["id"]
    )
    assert told["content"] == "Mencióname con un mensaje, p. ej. `@me resume el plan`."
