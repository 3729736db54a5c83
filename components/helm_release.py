"""Helm releases the platform installs (KEDA, kube-prometheus-stack), and what render mode does with them."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s


def install_release(
    name: str, args: k8s.helm.v3.ReleaseArgs, opts: pulumi.ResourceOptions, renders: bool
) -> pulumi.Resource | None:
    """A Helm release, or None when the stack renders manifests.

    Helm installs a release into a live cluster, fetching the chart from its
    repository; render mode has neither. The warning keeps the gap visible in
    every preview instead of writing a half-rendered chart.
    """
    if renders:
        pulumi.log.warn(
            f"render mode: Helm release {args.name} (chart {args.chart} {args.version}) is not rendered; "
            "Helm installs it when the stack deploys to a cluster"
        )
        return None
    return k8s.helm.v3.Release(name, args, opts)
