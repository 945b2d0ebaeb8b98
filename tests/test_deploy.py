"""The deployment files (``Dockerfile``, ``compose.yaml``, ``deploy/``) agree with the project: no image or daemon is
built here, so what can drift is checked — the image copies every package the project installs, the compose file's
processes run disjoint shard ranges covering the bot's shards with a config the bot accepts, the systemd unit
starts the bot with arguments it parses, and both stop it with SIGTERM (the image under an init) and wait longer than
the bot's stop bound; the metrics profile's Prometheus scrapes every bot process where its config serves, Grafana
is given that Prometheus and the dashboard, and the dashboard queries only metrics the bot exports."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path

import yaml

from bot.__main__ import _parse_args
from bot.config import load_config
from bot.metrics import Metrics
from bot.shards import parse_shards
from bot.stopping import STOP_BOUND_SECONDS

ROOT = Path(__file__).resolve().parent.parent


def test_the_image_copies_every_package_the_project_installs_and_runs_as_a_non_root_user():
    dockerfile = (ROOT / "Dockerfile").read_text()
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    copied = set(re.findall(r"^COPY (\w+) \./\1$", dockerfile, re.MULTILINE))
    assert copied == {package.rstrip("*") for package in packages}
    assert "COPY pyproject.toml README.md ./" in dockerfile and "RUN pip install . " in dockerfile
    assert re.search(r"^USER threadbound$", dockerfile, re.MULTILINE)
    assert "HEALTHCHECK" in dockerfile and "python -m bot health" in dockerfile
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert "config.toml" in ignored and ".venv" in ignored and "data" in ignored


def test_the_compose_processes_run_disjoint_shard_ranges_covering_every_shard_with_a_valid_config():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    bots = bot_services(compose)
    assert len(bots) == 2
    covered: list[int] = []
    counts = set()
    for service in bots.values():
        args = _parse_args(shlex.split(service["environment"]["BOT_ARGS"]))
        shards = parse_shards(args.shards, args.shard_count)
        assert shards is not None
        covered += shards.ids
        counts.add(shards.count)
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert {"DISCORD_TOKEN", "PGPASSWORD"} <= set(service["environment"])
    (count,) = counts
    assert sorted(covered) == list(range(count))
    mounted = {volume.split(":")[0] for service in bots.values() for volume in service["volumes"]}
    assert mounted == {"./deploy/config.toml"}
    config = load_config(ROOT / "deploy" / "config.toml")
    database = compose["services"]["postgres"]["environment"]["POSTGRES_DB"]
    assert config.storage.url == f"postgresql://threadbound@postgres:5432/{database}"
    assert config.durability.resume_interrupted


def test_the_systemd_unit_starts_the_bot_with_arguments_it_parses():
    unit = (ROOT / "deploy" / "threadbound@.service").read_text()
    (exec_start,) = re.findall(r"^ExecStart=(.+)$", unit, re.MULTILINE)
    command = shlex.split(exec_start.replace("%i", "0-3").replace("${THREADBOUND_SHARD_COUNT}", "8"))
    assert command[1:3] == ["-m", "bot"]
    args = _parse_args(command[3:])
    assert parse_shards(args.shards, args.shard_count) is not None
    assert args.command is None and args.config == "/etc/threadbound/config.toml"


def test_the_image_runs_the_bot_under_tini_and_stops_it_with_sigterm_within_dockers_grace():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"apt-get install -y --no-install-recommends tini\b", dockerfile)
    (entrypoint,) = re.findall(r"^ENTRYPOINT (.+)$", dockerfile, re.MULTILINE)
    command = json.loads(entrypoint)
    assert command[:2] == ["tini", "--"]  # PID 1 forwards the signal; Python as PID 1 would ignore SIGTERM
    assert "exec python -m bot " in command[-2]
    assert re.findall(r"^STOPSIGNAL (\S+)$", dockerfile, re.MULTILINE) == ["SIGTERM"]
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    for service in bot_services(compose).values():
        assert "init" not in service  # the image's tini is the one init
        assert seconds(service.get("stop_grace_period", "10s")) > STOP_BOUND_SECONDS


def test_the_systemd_unit_stops_the_bot_with_sigterm_and_waits_longer_than_its_stop_bound():
    unit = (ROOT / "deploy" / "threadbound@.service").read_text()
    settings = dict(re.findall(r"^(\w+)=(.*)$", unit, re.MULTILINE))
    assert settings["KillSignal"] == "SIGTERM"
    assert settings["KillMode"] == "mixed"  # the bot alone is signalled; it stops what it started
    assert seconds(settings["TimeoutStopSec"]) > STOP_BOUND_SECONDS


def bot_services(compose: dict) -> dict[str, dict]:
    """The compose services that run the bot (built from this repository)."""
    return {name: service for name, service in compose["services"].items() if service.get("build") == "."}


def _mounts(service: dict) -> dict[str, str]:
    """A service's bind mounts: where in the container → the file or folder here."""
    found = {}
    for volume in service["volumes"]:
        source, target = volume.split(":")[:2]
        if source.startswith("./"):
            assert (ROOT / source).exists(), f"{source} is mounted but does not exist"
            found[target] = source
    return found


def test_the_metrics_profile_runs_prometheus_scraping_every_bot_and_grafana_with_the_dashboard():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    bots = bot_services(compose)
    assert all("profiles" not in service for name, service in services.items() if name not in ("prometheus", "grafana"))
    for name in ("prometheus", "grafana"):
        assert services[name]["profiles"] == ["metrics"]
        assert re.fullmatch(r"[\w./-]+:v?\d+\.\d+\.\d+", services[name]["image"]), "a pinned image tag"
        assert all(port.startswith("127.0.0.1:") for port in services[name]["ports"])  # never on every interface
    address = load_config(ROOT / "deploy" / "config.toml").metrics.address
    assert address is not None and address[0] == "0.0.0.0"  # on the compose network; the bots publish no port
    assert all("ports" not in service for service in bots.values())
    prometheus = _mounts(services["prometheus"])
    scrape = yaml.safe_load((ROOT / prometheus["/etc/prometheus/prometheus.yml"]).read_text())
    (job,) = scrape["scrape_configs"]
    (targets,) = [group["targets"] for group in job["static_configs"]]
    assert sorted(targets) == sorted(f"{name}:{address[1]}" for name in bots)
    grafana = _mounts(services["grafana"])
    provisioning = ROOT / grafana["/etc/grafana/provisioning"]
    (source,) = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())["datasources"]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090"
    (provider,) = yaml.safe_load((provisioning / "dashboards" / "threadbound.yml").read_text())["providers"]
    dashboard = f"{provider['options']['path']}/threadbound.json"
    assert grafana[dashboard] == "./deploy/grafana/threadbound.json"


def test_the_dashboard_queries_only_what_the_bot_exports_with_a_panel_for_each_of_its_metrics():
    dashboard = json.loads((ROOT / "deploy" / "grafana" / "threadbound.json").read_text())
    (variable,) = dashboard["templating"]["list"]
    assert variable["type"] == "datasource" and variable["query"] == "prometheus"
    targets = [target for panel in dashboard["panels"] for target in panel["targets"]]
    assert all(panel["datasource"]["uid"] == "${datasource}" for panel in dashboard["panels"])
    queried = {name for target in targets for name in re.findall(r"\bthreadbound_\w+", target["expr"])}
    exported = Metrics().names()
    assert queried - exported == set()
    families = {family.name for family in Metrics().registry.collect() if family.name.startswith("threadbound_")}
    shown = {family for family in families if any(name.startswith(family) for name in queried)}
    assert shown == families
    assert len({panel["id"] for panel in dashboard["panels"]}) == len(dashboard["panels"])


def seconds(text: str) -> float:
    """``10s``, ``30`` or ``1m30s`` (Docker's and systemd's durations, as these files write them) in seconds."""
    parts = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s?)?", text.strip())
    assert parts is not None and text.strip(), f"not a duration: {text!r}"
    return int(parts[1] or 0) * 60 + int(parts[2] or 0)
