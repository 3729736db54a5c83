"""The node time of each platform's node autoscalers (platform_config/node_provisioning.py): a stated default for
every autoscaler a platform offers, overridden by `scaling.simulation.nodeProvisionSeconds`, and the one figure the
wake estimate (tests/program/test_scale_to_zero.py) and the simulator read."""

from __future__ import annotations

from platform_config.cluster import PROFILES
from platform_config.loader import StackConfig, load_stack
from platform_config.node_provisioning import DEFAULTS, kept_nodes, node_provisioning
from simulator.scenario import scenario
from tests.conftest import SCALING, setting, validate

# Seconds from a pod pending on a missing node to a node that schedules it, as docs/scale-to-zero.md states them.
STATED = {
    ("generic", "static"): 0,
    ("generic", "cluster-autoscaler"): 270,
    ("generic", "external"): 270,
    ("eks", "karpenter"): 110,
    ("eks", "cluster-autoscaler"): 270,
    ("eks", "external"): 270,
    ("eks", "static"): 0,
    ("gke", "external"): 270,
    ("gke", "static"): 0,
    ("aks", "karpenter"): 110,
    ("aks", "external"): 270,
    ("aks", "static"): 0,
}


def test_every_autoscaler_a_platform_offers_has_its_stated_default() -> None:
    offered = {(platform, mode) for platform, profile in PROFILES.items() for mode in profile.autoscalers}
    assert set(DEFAULTS) == offered
    assert {key: node_provisioning(*key, None).seconds for key in DEFAULTS} == STATED


def test_each_default_names_who_brings_the_node_up_and_its_sources() -> None:
    gke = node_provisioning("gke", "external", None)
    assert gke.why == (
        "GKE's cluster autoscaler: scale-up decision 30 s (cluster-autoscaler FAQ) + node group to a schedulable "
        "node 240 s (cluster-autoscaler FAQ, on GCE); set scaling.simulation.nodeProvisionSeconds to yours"
    )
    assert node_provisioning("aks", "karpenter", None).why.startswith(
        "AKS node auto-provisioning (Karpenter, AKSNodeClass): batch window 10 s"
    )
    assert node_provisioning("eks", "static", None).provisions is False


def test_a_stack_s_own_figure_replaces_the_default_except_on_a_static_pool() -> None:
    measured = node_provisioning("eks", "karpenter", 75)
    assert (measured.seconds, measured.why, measured.provisions) == (
        75,
        "scaling.simulation.nodeProvisionSeconds",
        True,
    )
    # Validation refuses the figure there (tests/program/test_scale_to_zero.py); no node is ever provisioned.
    assert node_provisioning("generic", "static", 75).seconds == 0


def test_a_combination_the_platform_refuses_still_computes_for_its_error_run() -> None:
    # generic + karpenter is refused by validation (no node class); the run that reports it reads Karpenter's.
    assert node_provisioning("generic", "karpenter", None).seconds == 110


def test_the_simulator_waits_the_same_node_time() -> None:
    assert scenario(load_stack("staging")).node_provision_seconds == 270  # cluster-autoscaler
    assert scenario(load_stack("production")).node_provision_seconds == 110  # Karpenter on EKS
    measured = validate("staging", setting(SCALING, "simulation", "nodeProvisionSeconds", value=90))
    loaded = StackConfig("staging", "stacks/Pulumi.staging.yaml", measured)
    assert scenario(loaded).node_provision_seconds == 90


def test_the_pool_keeps_min_nodes_or_what_its_pods_and_placeholders_fill() -> None:
    pool = validate("production").gpu_pool.model_copy(update={"gpus_per_node": 4, "overprovisioning_replicas": 2})
    assert pool.min_nodes == 0
    # 4 GPUs of Triton pods and 2 placeholders of one GPU each fill 2 nodes of 4.
    assert kept_nodes(pool, 4) == 2
    assert kept_nodes(pool, 2) == 1
    assert kept_nodes(pool.model_copy(update={"min_nodes": 3}), 2) == 3
    # Nothing held, no placeholders: nothing kept (the pool can drop to zero nodes).
    assert kept_nodes(pool.model_copy(update={"overprovisioning_replicas": 0}), 0) == 0
