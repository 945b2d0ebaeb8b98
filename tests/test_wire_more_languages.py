"""The rest of what members read follows their language: ``/agents``, target autocomplete, budget caps, run details.

English stays as it was; a Spanish member of the same server reads Spanish; the model still reads English."""

from __future__ import annotations

from tests.harness import announcement_for
from tests.test_wire_control import member
from tests.test_wire_delegate import AGENTS, ANALYST, BOSS
from tests.test_wire_delegate import ask as ask_agent
from tests.test_wire_languages import SPANISH, ask, run_of
from tests.test_wire_mcp import with_mcp
from tests.test_wire_threads import THREADS_ON


async def test_agents_and_target_choices_are_worded_for_whoever_asks(world):
    world.extra_config = THREADS_ON
    world.llm.hang()
    await world.start_bot()
    bob = member(world, "bob")  # speaks Spanish; not the run's owner
    await ask(world, world.alice, "subagents spawn", agent="researcher", task="Summarise the plan")
    await world.llm.wait_hanging(1)

    assert (await ask(world, world.alice, "agents")).splitlines() == [
        "agents:",
        "-----",
        "1. Summarise the plan (unbound) running",
    ]
    assert (await ask(world, bob, "agents", locale=SPANISH)).splitlines() == [
        "agentes:",
        "-----",
        "1. Summarise the plan (sin vincular) en curso",
    ]

    english = await world.discord.autocomplete(world.alice, world.channel, "subagents kill", focused="target")
    assert [c["value"] for c in english] == ["1"]
    assert english[0]["name"].startswith("#1 Summarise the plan — running, ")
    assert english[0]["name"].endswith(" ago")
    spanish = await world.discord.autocomplete(
        bob, world.channel, "subagents kill", focused="target", locale=SPANISH, target="en curso"
    )
    assert [c["value"] for c in spanish] == ["1"]
    assert spanish[0]["name"].startswith("#1 Summarise the plan — en curso, hace ")

    # from a thread, after a restart: the same words, each in their own language
    thread = world.discord.add_thread(world.channel, "discussion")
    await world.stop_bot(world.bots[0])
    await world.start_bot()
    assert (await ask(world, bob, "agents", channel=thread, locale="es-419")).splitlines()[0] == "agentes:"
    choices = await world.discord.autocomplete(bob, thread, "focus", focused="target", locale=SPANISH)
    assert choices[0]["name"].startswith("#1 Summarise the plan — ")
    assert ", hace " in choices[0]["name"]
    assert (await ask(world, world.alice, "agents", channel=thread)).splitlines()[0] == "agents:"


async def test_budget_caps_read_in_the_members_language_and_warnings_in_the_servers(world):
    world.extra_config = "[budgets]\nmember_tokens_per_day = 1000\n"
    world.llm.reply("first result", prompt_tokens=700, completion_tokens=150)
    world.llm.reply("second result", prompt_tokens=700, completion_tokens=150)
    world.llm.reply("third result", prompt_tokens=700, completion_tokens=150)
    spanish_server = world.discord.add_guild("Servidor", owner=world.alice, locale=SPANISH)
    plaza = world.discord.add_text_channel(spanish_server, "plaza")
    bob = member(world, "bob")  # speaks Spanish; a member of both servers, not an admin
    world.discord.add_member(spanish_server, bob)
    await world.start_bot()

    # Bob crosses 80% of his daily tokens in the Spanish server (a mention: no interaction): warned there in Spanish
    await world.discord.send_user_message(bob, plaza, f"<@{world.discord.bot_user_id}> hola")
    await world.discord.wait_for_message(plaza, lambda m: m["content"] == "first result")
    warned = await world.discord.wait_for_message(plaza, lambda m: "⚠️" in m["content"])
    assert warned["content"].startswith(
        f"<@{bob.id}> ⚠️ Has usado el 85 % de tus tokens de hoy en este servidor: 850 de 1,000 tokens "
        "(member_tokens_per_day). Se reinicia a las 00:00 UTC, dentro de "
    ), warned["content"]
    assert world.discord.message_meta(warned).allowed_mentions["users"] == [bob.id]

    # Alice crosses hers in the English server, and is warned there in English
    run = run_of(await ask(world, world.alice, "subagents spawn", agent="researcher", task="B"))
    await world.discord.wait_for_message(world.channel, announcement_for(run))
    warned = await world.discord.wait_for_message(world.channel, lambda m: "⚠️" in m["content"])
    assert warned["content"].startswith(
        f"<@{world.alice.id}> ⚠️ You have used 85% of your tokens today on this server: 850 of 1,000 tokens "
        "(member_tokens_per_day). It resets at 00:00 UTC, in "
    ), warned["content"]

    # /usage's caps, after a restart: each reads them in their own language, in either server
    await world.stop_bot(world.bots[0])
    await world.start_bot()
    mine = (await ask(world, bob, "usage", locale=SPANISH)).splitlines()  # here Bob spent nothing
    assert "Límites ahora:" in mine
    assert "- tus ejecuciones en curso en este servidor: 0 de 10 ejecuciones (`member_concurrent_runs`)" in mine
    assert "- tus tokens de hoy en este servidor: 0 de 1,000 tokens (`member_tokens_per_day`)" in mine
    run = run_of(await ask(world, bob, "subagents spawn", locale=SPANISH, agent="researcher", task="C"))
    await world.discord.wait_for_message(world.channel, announcement_for(run))
    # a warning is the server's words, whatever its member's client speaks
    await world.discord.wait_for_message(world.channel, lambda m: m["content"].startswith(f"<@{bob.id}> ⚠️ You have"))
    mine = (await ask(world, bob, "usage", locale="es-419")).splitlines()
    [tokens] = [line for line in mine if "member_tokens_per_day" in line]
    assert tokens.startswith(
        "- tus tokens de hoy en este servidor: 850 de 1,000 tokens (`member_tokens_per_day`). Se reinicia a las "
    ), tokens
    theirs = (await ask(world, world.alice, "usage")).splitlines()
    [tokens] = [line for line in theirs if "member_tokens_per_day" in line]
    assert tokens.startswith(
        "- your tokens today on this server: 850 of 1,000 tokens (`member_tokens_per_day`). It resets at "
    ), tokens
    assert len([m for m in world.bot_messages() if "⚠️" in m["content"]]) == 2  # once a day each


async def test_subagents_info_words_a_runs_recorded_values_for_whoever_asks(world):
    world.llm.hang()
    await world.start_bot()
    bob = member(world, "bob")  # speaks Spanish; not the run's owner
    await ask(world, world.alice, "subagents spawn", agent="researcher", task="Summarise the plan")
    await world.llm.wait_hanging(1)

    english = (await ask(world, world.alice, "subagents info", target="1")).splitlines()
    assert "Agent: researcher (depth 1, leaf)" in english
    assert "Cleanup: keep" in english
    assert "Outcome: running" in english
    spanish = (await ask(world, bob, "subagents info", locale=SPANISH, target="1")).splitlines()
    assert "Agente: researcher (profundidad 1, hoja)" in spanish
    assert "Limpieza: conservar" in spanish
    assert "Resultado final: en curso" in spanish

    await ask(world, world.alice, "subagents kill", target="1")
    await world.stop_bot(world.bots[0])
    await world.start_bot()
    assert "Outcome: killed (killed)" in (await ask(world, world.alice, "subagents info", target="1")).splitlines()
    spanish = await ask(world, bob, "subagents info", locale="es-419", target="1")
    assert "Resultado final: detenida (killed)" in spanish.splitlines()  # the recorded reason as it was written


async def test_a_delegates_kind_is_worded_in_the_members_language(world):
    world.extra_config = AGENTS
    world.llm.tool_call("delegate", {"agent": "analyst", "prompt": "Sum up Q3 revenue"}, model=BOSS)
    world.llm.reply("Revenue grew 12% in Q3.", model=ANALYST)
    world.llm.reply("My analyst says: revenue grew 12% in Q3.", model=BOSS)
    await world.start_bot()
    bob = member(world, "bob")
    await ask_agent(world, "how did Q3 go?")
    await world.quiescent()
    [task_id] = [row[0] for row in world.rows("SELECT task_id FROM delegate_tasks")]

    listing = await ask(world, bob, "subagents list", locale=SPANISH)
    assert f"1. Sum up Q3 revenue [delegado analyst, tarea {task_id[:8]}] (fake/gpt-4o" in listing
    info = await ask(world, bob, "subagents info", locale=SPANISH, target="1")
    assert f"Tipo: delegado analyst, tarea {task_id} (acotado)" in info.splitlines()
    info = await ask(world, world.alice, "subagents info", target="1")
    assert f"Kind: delegate analyst, task {task_id} (bounded)" in info.splitlines()


async def test_tools_places_and_reasons_are_worded_for_whoever_asks(world, tmp_path):
    with_mcp(world, tmp_path / "calls.jsonl")
    world.extra_config += (
        '[risk_profiles.careful]\nexcluded_tools = ["calc__die", "sessions_history"]\n'
        "[agents.defaults.subagents]\nmax_spawn_depth = 2\n"
    )
    world.extra_config = world.extra_config.replace(
        'mcp_servers = ["calc"]\n', 'mcp_servers = ["calc"]\nrisk_profile = "careful"\n', 1
    )
    await world.start_bot()
    bob = member(world, "bob")

    spanish = (await ask(world, bob, "subagents tools", locale=SPANISH, agent="researcher")).splitlines()
    assert spanish[0] == "🧰 Herramientas de **researcher** (perfil de riesgo: careful · perfil de ejecución: ninguno)"
    assert spanish[1] == "Servidores MCP: calc — 4 herramientas"
    assert spanish[2].startswith("**Como agente principal de una conversación:** agents_list, delegate, ")
    assert spanish[3] == ("-# no ofrecidas — excluidas por el perfil de riesgo 'careful': sessions_history, calc__die")
    assert spanish[4].startswith("**Como sub-agente a profundidad 1 (orquestador):** delegate, ")
    assert spanish[5].startswith("-# no ofrecidas — solo el agente principal: agents_list, model_switch, ")
    assert spanish[6].startswith("**Como sub-agente a profundidad 2 (hoja):** calc__add, ")
    assert spanish[7].startswith("-# no ofrecidas — un sub-agente hoja no recibe herramientas de sesión: ")

    english = (await ask(world, world.alice, "subagents tools", agent="researcher")).splitlines()
    assert english[1] == "MCP servers: calc — 4 tool(s)"
    assert english[4].startswith("**As a sub-agent at depth 1 (orchestrator):** delegate, ")
    plain = (await ask(world, bob, "subagents tools", locale="es-419", agent="main")).splitlines()
    assert plain[2] == "-# no ofrecidas — necesita un risk_profile y otro agente en quien delegar: delegate"
