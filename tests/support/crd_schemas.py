"""CRD schemas of the pinned operators, from their Go modules via the Go module proxy.

The CRD YAMLs ship inside the modules : KEDA's in
config/crd/bases, the Prometheus Operator's in example/prometheus-operator-crd.
They are downloaded once into .tools/go (ignored) and cached there. The KEDA HTTP add-on's module is not
served by the proxy: its CRDs are read from its v0.15.0 source in ../shared/http-add-on (SOURCES).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from offline.chart_template import mirrored_chart
from platform_config.paths import PROJECT_ROOT
from triton_platform.monitoring.monitoring_args import DEFAULT_CHART
from triton_platform.scaling.keda_scaling_args import KEDA_CHART

MODULES = {
    # The release the stacks install and the local cluster runs: KEDA's chart version is its appVersion.
    "keda.sh": ("github.com/kedacore/keda/v2", f"v{KEDA_CHART['version']}", "config/crd/bases"),
    # The newest release `go mod download` takes with the Go here (1.26.8): v1.14.3 needs Go >= 1.26.10, v1.15.0 >= 1.26.9.
    "karpenter.sh": ("sigs.k8s.io/karpenter", "v1.14.1", "pkg/apis/crds"),
}
SHARED = PROJECT_ROOT.parent / "shared"
SOURCES = {
    "http.keda.sh": SHARED / "http-add-on" / "config" / "crd" / "bases",
    # The Prometheus Operator's CRDs as the kube-prometheus-stack release production installs ships them (79.7.1:
    # operator v0.86.2); the proxy serves only v0.85.0, which the local cluster lays for an existing operator,
    # so the real API server checks the objects against that one too.
    "monitoring.coreos.com": (
        mirrored_chart(SHARED / "charts", "kube-prometheus-stack", DEFAULT_CHART["version"])
        or SHARED / "charts" / "kube-prometheus-stack"
    )
    / "charts"
    / "crds"
    / "crds",
}
"""CRD folders of groups taken from the unmodified upstream source at its pinned tag, or from the pinned chart."""

GOPATH = PROJECT_ROOT / ".tools" / "go"


class Yaml12Loader(yaml.SafeLoader):
    """YAML 1.2 reads a bare `=` (an enum value in the CRDs) as a string; PyYAML's 1.1 rules do not."""


def _plain_scalar(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    assert isinstance(node, yaml.ScalarNode)
    return str(loader.construct_scalar(node))


Yaml12Loader.add_constructor("tag:yaml.org,2002:value", _plain_scalar)


@functools.cache
def crd_folder(group: str) -> Path:
    if group in SOURCES:
        assert SOURCES[group].is_dir(), f"no CRDs of {group} in {SOURCES[group]}"
        return SOURCES[group]
    module, version, folder = MODULES[group]
    go = shutil.which("go")
    assert go, "the `go` toolchain is needed to fetch CRDs from the Go module proxy: install Go (golang.org/dl)"
    env = {**os.environ, "GOPATH": str(GOPATH), "GOFLAGS": "-mod=mod"}
    run = subprocess.run(
        [go, "mod", "download", "-json", f"{module}@{version}"], capture_output=True, text=True, env=env, check=False
    )
    info = json.loads(run.stdout or "{}")
    assert "Dir" in info, f"cannot download {module}@{version}: {info.get('Error') or run.stderr}"
    return Path(info["Dir"]) / folder


def _python_patterns(node: Any) -> Any:
    """Go's RE2 allows `^(?i)...`; Python wants inline flags first. Same meaning, moved."""
    if isinstance(node, dict):
        fixed = {k: _python_patterns(v) for k, v in node.items()}
        pattern = fixed.get("pattern")
        if isinstance(pattern, str) and "(?i)" in pattern and not pattern.startswith("(?i)"):
            fixed["pattern"] = "(?i)" + pattern.replace("(?i)", "")
        return fixed
    if isinstance(node, list):
        return [_python_patterns(v) for v in node]
    return node


def validate(manifest: dict[str, Any]) -> None:
    """Raise jsonschema.ValidationError when the manifest breaks its CRD's schema."""
    jsonschema.Draft7Validator(crd_schema(manifest["apiVersion"], manifest["kind"])).validate(manifest)


@functools.cache
def crd_schema(api_version: str, kind: str) -> dict[str, Any]:
    group, version = api_version.split("/")
    for path in sorted(crd_folder(group).glob("*.yaml")):
        for crd in yaml.load_all(path.read_text(), Loader=Yaml12Loader):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            spec = crd["spec"]
            if spec["group"] != group or spec["names"]["kind"] != kind:
                continue
            for served in spec["versions"]:
                if served["name"] == version:
                    schema: dict[str, Any] = _python_patterns(served["schema"]["openAPIV3Schema"])
                    return schema
    raise KeyError(f"no CRD for {api_version} {kind} in {crd_folder(group)}")


def defaults_left_in_atomic_lists(manifest: dict[str, Any]) -> list[str]:
    """Paths the API server would fill with a schema default inside an atomic list of this custom resource.

    Server-side apply compares an atomic list whole (a CRD's lists are atomic unless marked
    `x-kubernetes-list-type: map` or `set`), defaults included: a second field manager applying the same
    manifest conflicts with the first on that list. That second manager is the next `pulumi up` after an
    interrupted one whose create reached the API server but not the state (pulumi-kubernetes names each
    resource's manager at random). Stating every such default keeps the two applies equal."""
    found: list[str] = []

    def walk(value: Any, schema: dict[str, Any], path: str, in_atomic: bool) -> None:
        if isinstance(value, dict):
            properties = schema.get("properties", {})
            for key, child in properties.items():
                if key not in value:
                    if in_atomic and "default" in child:
                        found.append(f"{path}.{key} (default {child['default']!r})")
                    continue
                walk(value[key], child, f"{path}.{key}", in_atomic)
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                for key in value.keys() - properties.keys():
                    walk(value[key], extra, f"{path}.{key}", in_atomic)
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            atomic = in_atomic or schema.get("x-kubernetes-list-type", "atomic") == "atomic"
            for index, item in enumerate(value):
                walk(item, schema["items"], f"{path}[{index}]", atomic)

    walk(manifest, crd_schema(manifest["apiVersion"], manifest["kind"]), manifest["kind"], False)
    return found
