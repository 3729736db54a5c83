"""`stackctl rules`: the monitoring configuration as the tools that check it read it."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from components.alert_routing import alertmanager_yaml
from components.dashboards import dashboard
from components.monitoring_rules import rule_groups
from components.platform import monitoring_args
from components.scaling_signal import stack_signals
from platform_config.loader import StackConfig
from stackctl.out_folder import claim

RULES_FILE = "rules.yaml"
ALERTMANAGER_FILE = "alertmanager.yml"
DASHBOARDS_DIR = "dashboards"


def write_monitoring_files(stack: StackConfig, out: Path) -> list[Path]:
    """rules.yaml (the PrometheusRule's groups, for promtool), alertmanager.yml (credentials redacted, for amtool)
    and dashboards/<deployment>.json; returns the paths written.

    Only into a new or empty folder, or one an earlier `stackctl rules` wrote (stackctl/out_folder.py)."""
    args = monitoring_args(stack.config, stack_signals(stack))
    files = {
        RULES_FILE: yaml.safe_dump({"groups": rule_groups(args)}, sort_keys=False).encode(),
        ALERTMANAGER_FILE: yaml.safe_dump(alertmanager_yaml(args.monitoring, args.namespace), sort_keys=False).encode(),
    }
    for _, deployment in sorted(args.deployments.items()):
        text = json.dumps(dashboard(args, deployment), indent=2, sort_keys=True) + "\n"
        files[f"{DASHBOARDS_DIR}/{deployment.object_name}.json"] = text.encode()
    return claim(out, "rules").replace(files)
