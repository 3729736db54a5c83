"""`stackctl rules`: the monitoring configuration as the tools that check it read it."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from components.alert_routing import alertmanager_yaml
from components.dashboards import dashboard
from components.monitoring_rules import rule_groups
from components.triton_manifests import deployment_object_name
from platform_config.schema import PlatformConfig

RULES_FILE = "rules.yaml"
ALERTMANAGER_FILE = "alertmanager.yml"
OWN_FILES = (RULES_FILE, ALERTMANAGER_FILE, "dashboards")


def write_monitoring_files(config: PlatformConfig, out: Path) -> list[Path]:
    """rules.yaml (the PrometheusRule's groups, for promtool), alertmanager.yml (credentials redacted, for amtool)
    and dashboards/<deployment>.json; returns the paths written."""
    if out.exists() and any(p.name not in OWN_FILES for p in out.iterdir()):
        raise FileExistsError(f"{out} holds files stackctl rules did not write; choose another --out")
    dashboards = out / "dashboards"
    dashboards.mkdir(parents=True, exist_ok=True)
    for old in dashboards.glob("*.json"):
        old.unlink()
    rules = out / RULES_FILE
    rules.write_text(yaml.safe_dump({"groups": rule_groups(config)}, sort_keys=False), encoding="utf-8")
    alertmanager = out / ALERTMANAGER_FILE
    alertmanager.write_text(yaml.safe_dump(alertmanager_yaml(config), sort_keys=False), encoding="utf-8")
    written = [rules, alertmanager]
    for name in sorted(config.serving.deployments):
        target = dashboards / f"{deployment_object_name(name)}.json"
        target.write_text(json.dumps(dashboard(config, name), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        written.append(target)
    return written
