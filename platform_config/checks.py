"""Contradictions between config sections and the model repository.

Each check runs when the sections it reads parsed cleanly, so one bad section
never hides the errors of another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from platform_config.cluster_checks import (
    cluster_gpu_pool,
    cluster_serving,
    gpu_capacity,
    node_provisioning,
    pool_at_zero,
    priority_classes_apart,
)
from platform_config.errors import ConfigIssue
from platform_config.model_checks import (
    base_delay_within_slo,
    delay_within_slo,
    deployment_models_exist,
    ensembles_complete,
    model_delivery,
    model_fit,
    model_settings_exist,
    model_settings_served,
)
from platform_config.production_checks import production_deploys, production_drain_floor, production_scaling_path
from platform_config.scaling_checks import (
    daily_floor,
    demand_capacity,
    demand_queue_bound,
    gpu_memory_trigger_reads_engines,
    scaling_bounds,
    simulation_shares,
    static_replicas,
)
from platform_config.sections import Sections
from platform_config.token_checks import token_objectives_fit, token_targets_read
from platform_config.wake_checks import wake, wake_budget, wake_path_open
from triton_platform.model_packaging.source import ModelRepository

Check = Callable[[Sections, ModelRepository], Iterator[ConfigIssue]]


CHECKS: list[tuple[tuple[str, ...], Check]] = [
    (("environment", "kubernetes"), production_deploys),
    (("cluster", "gpu_pool"), cluster_gpu_pool),
    (("cluster", "serving"), cluster_serving),
    (("serving",), deployment_models_exist),
    (("models",), model_settings_exist),
    (("serving", "models"), model_settings_served),
    (("serving", "models"), model_fit),
    (("serving", "models"), delay_within_slo),
    (("serving", "models"), ensembles_complete),
    (("serving", "models"), base_delay_within_slo),
    (("serving",), token_objectives_fit),
    (("serving", "scaling"), token_targets_read),
    (("serving", "gpu_pool"), gpu_capacity),
    (("environment", "serving"), model_delivery),
    (("environment", "serving", "scaling"), scaling_bounds),
    (("serving", "scaling"), static_replicas),
    (("environment", "serving", "scaling"), wake),
    (("serving", "scaling"), wake_path_open),
    (("cluster", "serving", "scaling", "gpu_pool"), wake_budget),
    (("scaling", "gpu_pool"), node_provisioning),
    (("serving", "gpu_pool"), pool_at_zero),
    (("serving", "scaling"), simulation_shares),
    (("serving", "models", "scaling"), demand_capacity),
    (("serving", "models", "scaling"), demand_queue_bound),
    (("serving", "models", "scaling"), gpu_memory_trigger_reads_engines),
    (("serving", "scaling"), daily_floor),
    (("kubernetes", "monitoring", "scaling"), priority_classes_apart),
    (("environment", "serving"), production_drain_floor),
    (("environment", "monitoring", "scaling"), production_scaling_path),
]


"""Each check with the sections it needs."""


def cross_section_issues(sections: Sections, repo: ModelRepository) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    for needs, check in CHECKS:
        if all(name in sections for name in needs):
            issues.extend(check(sections, repo))
    return issues
