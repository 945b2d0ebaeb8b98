"""Config validation: every bad key gets its own message naming it; secrets come from the environment."""

import re
from decimal import Decimal
from pathlib import Path

import pytest

from bot.config import ConfigError, check_secrets, load_config, missing_secrets, parse_config, secret_values


def error_for(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="config.toml")
    return str(caught.value)


def test_example_config_is_valid_and_offline():
    config = load_config("config.example.toml")
    assert config.providers == {}
    assert config.agents.defaults.subagents.max_concurrent == 8
    assert config.agents.defaults.subagents.run_timeout_seconds == 0
    assert config.discord.api_base_url == "https://discord.com/api/v10"


def test_the_example_configs_dev_guild_id_is_valid_once_uncommented():
    example = Path("config.example.toml").read_text()
    uncommented = re.sub(r"^# (dev_guild_id = )", r"\1", example, count=1, flags=re.MULTILINE)
    assert uncommented != example
    assert parse_config(uncommented).discord.dev_guild_id == 123456789012345678


def test_contract_keys_parse():
    config = parse_config(
        """
        [discord]
        token_env = "TB_TOKEN"
        api_base_url = "http://127.0.0.1:9/api/v10"
        gateway_url = "ws://127.0.0.1:9/"
        dev_guild_id = 123
        [storage]
        path = "x.sqlite3"
        [providers.openai]
        type = "openai"
        base_url = "https://api.openai.com/v1"
        api_key_env = "OPENAI_API_KEY"
        supports_thinking = false
        [providers.anthropic]
        type = "anthropic"
        api_key_env = "ANTHROPIC_API_KEY"
        [agents.defaults]
        model = "openai/gpt-4o-mini"
        [agents.defaults.subagents]
        max_concurrent = 3
        run_timeout_seconds = 30
        [agents.list.main]
        system_prompt = "hi"
        """
    )
    assert config.discord.dev_guild_id == 123
    assert config.providers["anthropic"].type == "anthropic"
    assert config.agents.defaults.subagents.max_concurrent == 3


def test_unknown_key_is_named():
    assert "unknown key 'discord.tokenenv'" in error_for('[discord]\ntokenenv = "X"\n')


def test_unknown_section_is_named():
    assert "unknown key 'sesion'" in error_for("[sesion]\nidle_hours = 1\n")


def test_out_of_range_value_names_key():
    message = error_for("[agents.defaults.subagents]\nmax_concurrent = 0\n")
    assert "'agents.defaults.subagents.max_concurrent'" in message
    assert "greater than or equal to 1" in message


@pytest.mark.parametrize(
    "text",
    ["[session.thread_bindings]\nidle_hours = 8761\n", "[channels.discord.thread_bindings]\nmax_age_hours = 1e12\n"],
)
def test_binding_lifetimes_are_bounded_at_365_days(text):
    message = error_for(text)
    assert "thread_bindings." in message and "less than or equal to 8760" in message


def test_negative_timeout_names_key():
    assert "'agents.defaults.subagents.run_timeout_seconds'" in error_for(
        "[agents.defaults.subagents]\nrun_timeout_seconds = -1\n"
    )


def test_provider_type_must_be_known():
    message = error_for('[providers.x]\ntype = "gemini"\n')
    assert "'providers.x.type'" in message and "'openai' or 'anthropic'" in message


def test_provider_type_is_required():
    assert "missing key 'providers.x.type'" in error_for('[providers.x]\nbase_url = "http://h"\n')


def test_bad_agent_id_is_named():
    assert "agent id 'Bad Id'" in error_for('[agents.list."Bad Id"]\n')


def test_model_must_name_a_configured_provider():
    message = error_for('[providers.openai]\ntype = "openai"\n[agents.defaults]\nmodel = "anthropic/claude"\n')
    assert "agents.defaults.model = 'anthropic/claude' names provider 'anthropic'" in message


def test_default_agent_must_exist():
    assert "default_agent 'boss' is not defined" in error_for('[agents]\ndefault_agent = "boss"\n')


def test_invalid_toml_is_reported():
    assert "config.toml is not valid TOML" in error_for("[discord\n")


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match=r"not found; copy config.example.toml"):
        load_config(tmp_path / "nope.toml")


def test_missing_secret_names_variable_and_key():
    config = parse_config('[providers.openai]\ntype = "openai"\napi_key_env = "OPENAI_API_KEY"\n')
    with pytest.raises(ConfigError, match=r"DISCORD_TOKEN is not set .named by discord.token_env"):
        check_secrets(config, {})
    with pytest.raises(ConfigError, match=r"OPENAI_API_KEY is not set .named by providers.openai.api_key_env"):
        check_secrets(config, {"DISCORD_TOKEN": "t"})
    check_secrets(config, {"DISCORD_TOKEN": "t", "OPENAI_API_KEY": "k"})


def test_missing_secrets_names_each_unset_variable_the_token_first():
    config = parse_config('[providers.openai]\ntype = "openai"\napi_key_env = "OPENAI_API_KEY"\n')
    assert missing_secrets(config, {"OPENAI_API_KEY": ""}) == [
        "environment variable DISCORD_TOKEN is not set (named by discord.token_env in the config)",
        "environment variable OPENAI_API_KEY is not set (named by providers.openai.api_key_env in the config)",
    ]
    assert missing_secrets(config, {"DISCORD_TOKEN": "t", "OPENAI_API_KEY": "k"}) == []


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("max_spawn_depth", 6, "less than or equal to 5"),
        ("max_spawn_depth", 0, "greater than or equal to 1"),
        ("max_children_per_agent", 21, "less than or equal to 20"),
        ("archive_after_minutes", -1, "greater than or equal to 0"),
    ],
)
def test_subagent_limits_out_of_range_are_config_errors(key, value, message):
    error = error_for(f"[agents.defaults.subagents]\n{key} = {value}\n")
    assert f"'agents.defaults.subagents.{key}'" in error and message in error


def test_delivery_give_up_after_is_a_duration_defaulting_to_a_day():
    assert parse_config("").discord.delivery_give_up_after == 24 * 3600
    assert parse_config('[discord]\ndelivery_give_up_after = "90m"\n').discord.delivery_give_up_after == 90 * 60


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("86400", 'must be a duration in quotes such as "24h", "90m" or "1d", not 86400'),
        ('"soon"', '\'soon\' is not a duration; write it like "24h", "90m" or "1d"'),
        ('"off"', 'must be longer than zero, like "24h", "90m" or "1d" (there is no retrying forever)'),
    ],
)
def test_delivery_give_up_after_rejects_what_is_not_a_positive_duration(value, message):
    assert error_for(f"[discord]\ndelivery_give_up_after = {value}\n") == (
        f"config.toml: 'discord.delivery_give_up_after': {message}"
    )


def test_delivery_lease_is_a_positive_duration_defaulting_to_a_minute():
    assert parse_config("").discord.delivery_lease == 60
    assert parse_config('[discord]\ndelivery_lease = "5s"\n').discord.delivery_lease == 5
    assert error_for("[discord]\ndelivery_lease = 60\n") == (
        'config.toml: \'discord.delivery_lease\': must be a duration in quotes such as "24h", "90m" or "1d", not 60'
    )


FAKE_PROVIDER = '[providers.fake]\ntype = "openai"\napi_key_env = "TB_FAKE_KEY"\n[agents.defaults]\nmodel = "fake/a"\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'fallback_models = ["fake/b", "nope/x"]\n',
            "agents.defaults.fallback_models[1] = 'nope/x' names provider 'nope', which is not configured "
            "(configured: fake)",
        ),
        (
            '[agents.list.main]\nfallback_models = ["fake/b", "nope/x"]\n',
            "agents.list.main.fallback_models[1] = 'nope/x' names provider 'nope', which is not configured "
            "(configured: fake)",
        ),
        (
            '[agents.list.main]\nfallback_models = ["gpt-4o"]\n',
            "agents.list.main.fallback_models[0] = 'gpt-4o' must look like '<provider>/<model>'",
        ),
        (
            '[agents.list.main]\napi_key_env = { nope = "TB_MAIN_KEY" }\n',
            "agents.list.main.api_key_env.nope names provider 'nope', which is not configured (configured: fake)",
        ),
        (
            '[pricing."nope/x"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n',
            "[pricing.\"nope/x\"] names provider 'nope', which is not configured (configured: fake)",
        ),
        (
            '[pricing."x"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n',
            "[pricing.\"x\"] must look like '<provider>/<model>'",
        ),
        ('[pricing."fake/x"]\ninput_per_mtok = 1\n', "missing key 'pricing.fake/x.output_per_mtok'"),
        (
            '[pricing."fake/x"]\ninput_per_mtok = -1\noutput_per_mtok = 1\n',
            "'pricing.fake/x.input_per_mtok': Input should be greater than or equal to 0",
        ),
    ],
)
def test_fallback_models_agent_keys_and_prices_are_checked_naming_the_key(text, message):
    assert error_for(FAKE_PROVIDER + text) == f"config.toml: {message}"


def test_fallback_models_agent_keys_and_prices_parse():
    config = parse_config(
        FAKE_PROVIDER
        + 'fallback_models = ["fake/b"]\n'
        + '[agents.list.main]\nfallback_models = []\napi_key_env = { fake = "TB_MAIN_KEY" }\n'
        + '[pricing."fake/a"]\ninput_per_mtok = 0.15\noutput_per_mtok = 0\n'
    )
    assert config.agents.defaults.fallback_models == ["fake/b"]
    assert config.agents.list["main"].fallback_models == []
    assert config.agents.list["main"].api_key_env == {"fake": "TB_MAIN_KEY"}
    price = config.pricing["fake/a"]
    assert (price.input_per_mtok, price.output_per_mtok) == (Decimal("0.15"), Decimal("0"))


def test_an_agents_own_key_is_a_secret_like_the_providers():
    config = parse_config(FAKE_PROVIDER + '[agents.list.main]\napi_key_env = { fake = "TB_MAIN_KEY" }\n')
    environ = {"DISCORD_TOKEN": "t", "TB_FAKE_KEY": "provider-key"}
    with pytest.raises(ConfigError, match=r"TB_MAIN_KEY is not set .named by agents.list.main.api_key_env.fake in"):
        check_secrets(config, environ)
    environ["TB_MAIN_KEY"] = "main-key"
    check_secrets(config, environ)
    assert sorted(secret_values(config, environ)) == ["main-key", "provider-key", "t"]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[budgets]\nmember_tokens_per_day = -1", "'budgets.member_tokens_per_day'"),
        ("[budgets]\nserver_cost_per_day_usd = -0.5", "'budgets.server_cost_per_day_usd'"),
        ("[budgets]\nmember_cost_per_day_usd = 0.0000001", "'budgets.member_cost_per_day_usd'"),
        ("[budgets]\nmember_runs_per_day = 3", "unknown key 'budgets.member_runs_per_day'"),
        ("[agents.list.main]\ncost_per_day_usd = -1", "'agents.list.main.cost_per_day_usd'"),
    ],
)
def test_budget_caps_are_checked_by_name(text, key):
    with pytest.raises(ConfigError, match=key):
        parse_config(text)


def test_budget_caps_default_to_no_cap_and_keep_cents():
    config = parse_config("[budgets]\nmember_cost_per_day_usd = 2.75\n[agents.list.main]\ntokens_per_day = 9000")
    assert config.budgets.member_cost_per_day_usd == Decimal("2.75") and config.budgets.server_runs_per_hour == 0
    assert config.agents.list["main"].tokens_per_day == 9000


def test_retention_keeps_30_days_by_default_and_checks_its_ranges():
    retention = parse_config("").retention
    assert (retention.archived_sessions_days, retention.transcripts_days, retention.outbox_days) == (30, 30, 30)
    assert (retention.batch_size, retention.interval_minutes, retention.journal_days) == (500, 60, 7)
    assert parse_config("[retention]\ntranscripts_days = 0").retention.transcripts_days == 0  # kept forever
    assert "retention.journal_days" in error_for("[retention]\njournal_days = -1")
    assert "retention.archived_sessions_days" in error_for("[retention]\narchived_sessions_days = -1")
    assert "retention.batch_size" in error_for("[retention]\nbatch_size = 0")
    assert "retention.interval_minutes" in error_for("[retention]\ninterval_minutes = 0")
    assert "retention.outbox_days" in error_for('[retention]\noutbox_days = "30d"')
    assert "retention.delivered_outbox_days" in error_for("[retention]\ndelivered_outbox_days = 30")


@pytest.mark.parametrize(
    ("storage", "local"),
    [
        ('path = "data/x.sqlite3"', "data/x.sqlite3"),
        ('url = "sqlite:///var/tb.sqlite3"', "var/tb.sqlite3"),
        ('url = "postgresql://bot@db:5432/tb"', "data/threadbound.sqlite3"),
    ],
)
def test_local_files_go_next_to_the_sqlite_store_wherever_it_is_named(storage, local):
    assert parse_config(f"[storage]\n{storage}").storage.local_file == local


def test_read_only_tools_are_a_list_of_the_servers_own_tool_names():
    server = '[mcp.servers.calc]\ncommand = "calc"\n'
    assert parse_config(server + 'read_only_tools = ["add"]\n').mcp.servers["calc"].read_only_tools == ["add"]
    assert parse_config(server).mcp.servers["calc"].read_only_tools is None
    assert "mcp.servers.calc.read_only_tools" in error_for(server + 'read_only_tools = "add"\n')
    assert "is not a tool name" in error_for(server + 'read_only_tools = [" "]\n')
    assert "without 'calc__': calc__add" in error_for(server + 'read_only_tools = ["calc__add"]\n')


def test_an_acp_agent_needs_a_command_and_an_existing_working_directory(tmp_path):
    table = f'[acp_agents.coder]\ncommand = "codex-acp"\ncwd = "{tmp_path}"\n'
    agent = parse_config(table + 'env_from = { OPENAI_API_KEY = "CODER_KEY" }\n').acp_agents["coder"]
    assert (agent.command, agent.args, agent.cwd, agent.timeout_seconds) == ("codex-acp", [], str(tmp_path), 30)
    assert missing_secrets(parse_config(table + 'env_from = { K = "CODER_KEY" }\n'), {})[1:] == [
        "environment variable CODER_KEY is not set (named by acp_agents.coder.env_from.K in the config)"
    ]
    assert "is not an existing directory" in error_for(table.replace(str(tmp_path), str(tmp_path / "missing")))
    assert "acp_agents.coder.cwd" in error_for('[acp_agents.coder]\ncommand = "codex-acp"\n')
    assert "acp_agents.coder.command" in error_for(f'[acp_agents.coder]\ncwd = "{tmp_path}"\n')
    assert "must match" in error_for(table.replace("coder]", "Coder]"))


def test_memory_is_off_by_default_and_its_limits_and_allowlists_are_checked():
    memory = parse_config("").memory
    assert (memory.enabled, memory.auto_save, memory.inject_tokens) == (False, False, 400)
    assert (memory.max_rows_per_agent, memory.max_content_chars, memory.recall_limit) == (500, 2000, 5)
    assert parse_config("").retention.memory_days == 180
    listed = parse_config('[agents.list.main.workspace]\nread_memory_from = ["helper"]\n[agents.list.helper]\n')
    assert listed.agents.list["main"].workspace.read_memory_from == ["helper"]
    assert error_for('[agents.list.main.workspace]\nread_memory_from = ["ghost"]\n') == (
        'config.toml: agents.list.main.workspace.read_memory_from[0] = "ghost" but agents.list.ghost is not '
        "configured (configured: main)"
    )
    assert "memory.max_rows_per_agent" in error_for("[memory]\nmax_rows_per_agent = 0\n")


def test_tracing_is_off_by_default_and_its_endpoint_a_base_url():
    assert parse_config("").tracing.otlp_endpoint == ""
    assert parse_config("").tracing.include_content is False
    tracing = parse_config('[tracing]\notlp_endpoint = "https://otel.example:4318/"\n').tracing
    assert (tracing.otlp_endpoint, tracing.traces_url) == (
        "https://otel.example:4318",
        "https://otel.example:4318/v1/traces",
    )
    assert parse_config('[tracing]\notlp_endpoint = "http://c:4318/v1/traces"\n').tracing.traces_url == (
        "http://c:4318/v1/traces"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('otlp_endpoint = "127.0.0.1:4318"', "'127.0.0.1:4318' is not an http:// or https:// URL, like \"http://"),
        ('otlp_endpoint = "http://"', "'http://' is not an http:// or https:// URL"),
        ('otlp_endpoint = "https://me:pw@otel.example"', "the URL holds credentials; put the collector's key in OTEL_"),
        ('service_name = ""', "String should have at least 1 character"),
    ],
)
def test_tracing_keys_are_checked_by_name(text, message):
    key = text.split(" ")[0]
    assert error_for(f"[tracing]\n{text}\n").startswith(f"config.toml: 'tracing.{key}': {message}")


def test_metrics_are_off_by_default_and_listen_must_be_host_and_port():
    assert parse_config("").metrics.address is None
    assert parse_config('[metrics]\nlisten = ""\n').metrics.address is None
    assert parse_config('[metrics]\nlisten = "127.0.0.1:9108"\n').metrics.address == ("127.0.0.1", 9108)
    assert parse_config('[metrics]\nlisten = "[::1]:9108"\n').metrics.address == ("::1", 9108)
    for bad in ("9108", "localhost", ":9108", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:70000", "host:port"):
        error = error_for(f'[metrics]\nlisten = "{bad}"\n')
        assert "'metrics.listen'" in error and "is not host:port" in error and "127.0.0.1:9108" in error
    assert "'metrics.refresh_seconds'" in error_for("[metrics]\nrefresh_seconds = 0\n")
