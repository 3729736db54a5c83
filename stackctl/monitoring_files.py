"""`stackctl rules`: the monitoring configuration as the tools that check it read it."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from offline.out_folder import claim
from platform_config.loader import StackConfig
from program.platform import monitoring_args, served_plainly
from triton_platform.monitoring.alert_routing import alertmanager_yaml
from triton_platform.monitoring.dashboards import dashboard
from triton_platform.monitoring.monitoring_args import MonitoringArgs
from triton_platform.monitoring.monitoring_rules import rule_groups
from triton_platform.monitoring.monitoring_settings import monitoring_settings

RULES_FILE = "rules.yaml"
ALERTMANAGER_FILE = "alertmanager.yml"
DASHBOARDS_DIR = "dashboards"


def stack_monitoring(stack: StackConfig) -> MonitoringArgs:
    """What the stack's Monitoring component builds from, as it checks its Args."""
    assert stack.rendered is not None, "a stack whose models are left to ESC has no rendered configs"
    args = monitoring_args(stack.config, served_plainly(stack.config, stack.rendered), stack.rendered)
    return monitoring_settings(f"{stack.stack}-monitoring", args)


def write_monitoring_files(stack: StackConfig, out: Path) -> list[Path]:
    """rules.yaml (the PrometheusRule's groups, for promtool), alertmanager.yml (credentials redacted, for amtool)
    and dashboards/<deployment>.json; returns the paths written.

    Only into a new or empty folder, or one an earlier `stackctl rules` wrote (offline/out_folder.py)."""
    settings = stack_monitoring(stack)
    routing = alertmanager_yaml(settings["receivers"], settings["routes"], settings["namespace"])
    files = {
        RULES_FILE: yaml.safe_dump({"groups": rule_groups(settings)}, sort_keys=False).encode(),
        ALERTMANAGER_FILE: yaml.safe_dump(routing, sort_keys=False).encode(),
    }
    for _, deployment in sorted(settings["deployments"].items()):
        text = json.dumps(dashboard(settings, deployment), indent=2, sort_keys=True) + "\n"
        files[f"{DASHBOARDS_DIR}/{deployment['object_name']}.json"] = text.encode()
    return claim(out, "rules").replace(files)
