"""Helm templating for `stackctl synth`: a chart's objects as a preview would register them.

The program asks the Kubernetes provider's `kubernetes:helm:template` function for a chart's objects
(triton_platform/kube/helm_chart.py). Under mocks there is no provider, so synth answers that call here by
running `helm template` with the same options the provider hands Helm's install action
(pulumi-kubernetes provider/pkg/provider/invoke_helm_template.go: client-only dry run, CRDs included,
hooks included, test hooks left out, the given `kube_version`), then decodes the objects as the
provider does (invoke_decode_yaml.go: empty documents skipped, the release namespace set on namespaced
objects that name none).

Helm: `TRITON_HELM` names the binary; else the one `make tools` builds into .tools/bin at the version the
provider embeds (HELM_VERSION); else a Helm 3 on PATH (Helm 3 is what the provider embeds; another major is
refused by name). A chart pinned to a repository is pulled from it once, at its pinned version, into
`.tools/charts/<chart>-<version>/` (CHART_CACHE), and templated from there, so a second synth needs no network;
`TRITON_CHART_MIRROR` may name a folder of unpacked charts holding it at the pinned version instead, for machines
that cannot reach the repository: `<mirror>/<chart>-<version>/<chart>/` where it holds several versions of a
chart, else `<mirror>/<chart>/`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from platform_config.paths import PROJECT_ROOT

HELM_ENV = "TRITON_HELM"
HELM_VERSION = "v3.18.6"
"""The Helm pulumi-kubernetes 4.25.0 templates with (helm.sh/helm/v3 in its provider's go.mod); the Makefile's
HELM_VERSION builds it."""
PROJECT_HELM = PROJECT_ROOT / ".tools" / "bin" / f"helm-{HELM_VERSION}"
MIRROR_ENV = "TRITON_CHART_MIRROR"
CHART_CACHE = PROJECT_ROOT / ".tools" / "charts"
"""Charts pulled from their repositories, one folder per chart and version (ignored, like all of .tools)."""

CLUSTER_SCOPED = frozenset(
    {
        ("v1", "Namespace"),
        ("v1", "Node"),
        ("v1", "PersistentVolume"),
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("apiregistration.k8s.io/v1", "APIService"),
        ("networking.k8s.io/v1", "IngressClass"),
        ("node.k8s.io/v1", "RuntimeClass"),
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ("scheduling.k8s.io/v1", "PriorityClass"),
        ("storage.k8s.io/v1", "CSIDriver"),
        ("storage.k8s.io/v1", "CSINode"),
        ("storage.k8s.io/v1", "StorageClass"),
        ("storage.k8s.io/v1", "VolumeAttachment"),
    }
)
"""The built-in cluster-scoped kinds (the provider's pkg/kinds table). Any other kind is namespaced: without a
cluster to ask, the provider assumes so too (clients.IsNamespacedKind's NoNamespaceInfoErr)."""


def mirrored_chart(mirror: Path, chart: str, version: str) -> Path | None:
    """The mirror's copy of `chart` at `version`: `<mirror>/<chart>-<version>/<chart>/` where the mirror holds
    several versions, else `<mirror>/<chart>/`; None where it holds neither; ChartTemplateError where the one copy
    it holds is another version (a chart is never templated at another version than the stack pins)."""
    for name in (chart, version):
        if not name or name in (".", "..") or "/" in name or "\\" in name:
            raise ChartTemplateError(f"{MIRROR_ENV}: {chart!r} {version!r} names no chart folder of the mirror")
    for folder in (mirror / f"{chart}-{version}" / chart, mirror / chart):
        manifest = folder / "Chart.yaml"
        if manifest.is_file():
            try:
                document = yaml.safe_load(manifest.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
                raise ChartTemplateError(f"{MIRROR_ENV}: {manifest} cannot be read: {type(err).__name__}") from None
            found = document.get("version") if isinstance(document, dict) else None
            if str(found) == version:
                return folder
            if folder.parent != mirror:
                raise ChartTemplateError(f"{MIRROR_ENV}: {manifest} is version {found}, but its folder names {version}")
            raise ChartTemplateError(
                f"{MIRROR_ENV}: {manifest} is version {found}, but the stack pins {chart} {version}, and "
                f"{mirror / f'{chart}-{version}' / chart} holds no copy of it"
            )
    return None


class ChartTemplateError(ValueError):
    """Helm is missing, the chart cannot be found at its pin, or Helm refused to template it."""


@dataclass(frozen=True)
class HelmTemplater:
    helm: str | None
    """The Helm binary; None when none was found (`missing` says where it looked)."""

    mirror: Path | None = None
    """A folder of unpacked charts standing in for their repositories; None: fetch from the repository."""

    missing: str = ""
    """Why there is no Helm: reported when a chart is templated, so a stack without charts needs none."""

    @classmethod
    def from_environment(cls, environment: Mapping[str, str] | None = None) -> HelmTemplater:
        env = os.environ if environment is None else environment
        mirror = Path(env[MIRROR_ENV]) if env.get(MIRROR_ENV) else None
        named = env.get(HELM_ENV)
        if named:
            return (
                cls(named, mirror) if Path(named).is_file() else cls(None, mirror, f"{HELM_ENV}={named} is not a file")
            )
        if PROJECT_HELM.is_file():
            return cls(str(PROJECT_HELM), mirror)
        found = shutil.which("helm", path=env.get("PATH"))
        if found is None:
            return cls(None, mirror, f"{HELM_ENV} is unset, {PROJECT_HELM} is not built and no `helm` is on PATH")
        version = helm_version(found)
        if not version.startswith("v3."):
            return cls(None, mirror, f"the `helm` on PATH ({found}) is {version or 'not a working helm'}, not Helm 3")
        return cls(found, mirror)

    def template(self, options: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The objects of `kubernetes:helm:template` for these options (its `jsonOpts`, decoded)."""
        namespace = options.get("namespace") or "default"
        with tempfile.TemporaryDirectory(prefix="stackctl-helm-") as scratch:
            command, env = self.command(options, Path(scratch))
            done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise ChartTemplateError(f"`helm template` of {self.describe(options)} failed: {done.stderr.strip()}")
        return decoded(done.stdout, namespace)

    def command(self, options: Mapping[str, Any], scratch: Path) -> tuple[list[str], dict[str, str]]:
        """`helm template` for these options, and its environment; its values file and caches go in `scratch`."""
        if self.helm is None:
            raise ChartTemplateError(
                f"stackctl synth templates {self.describe(options)} with Helm, as a preview does, but {self.missing}: "
                "run `make tools`, or put Helm 3 on PATH, or pass --no-charts for the program's own objects only"
            )
        values = scratch / "values.json"
        values.write_text(json.dumps(options.get("values") or {}))
        command = [
            self.helm,
            "template",
            options["release_name"],
            *self._chart(options),
            "--namespace",
            options.get("namespace") or "default",
            "--values",
            str(values),
            "--include-crds",
        ]
        if not options.get("include_test_hook_resources"):
            command.append("--skip-tests")
        if options.get("kube_version"):
            command += ["--kube-version", options["kube_version"]]
        # Helm's caches and repository config in the scratch folder: never the user's own.
        env = {**os.environ, **{v: str(scratch) for v in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME")}}
        return command, env

    def _chart(self, options: Mapping[str, Any]) -> list[str]:
        """Helm's chart arguments: a local folder, the mirror's copy, or the repository and version."""
        chart = options["chart"]
        if options.get("path"):
            return [str(Path(options["path"]) / chart)]
        fetch = options.get("fetch_opts") or {}
        version = fetch.get("version")
        if self.mirror is not None:
            folder = mirrored_chart(self.mirror, chart, str(version))
            if folder is not None:
                return [str(folder)]
        return [str(self._pulled(chart, str(fetch.get("repo")), str(version), options))]

    def _pulled(self, chart: str, repo: str, version: str, options: Mapping[str, Any]) -> Path:
        """The chart's folder in CHART_CACHE, pulled from its repository on first use (into a scratch folder, then
        moved in whole, so a failed pull leaves nothing half-written)."""
        folder = CHART_CACHE / f"{chart}-{version}" / chart
        if (folder / "Chart.yaml").is_file():
            return folder
        folder.parent.mkdir(parents=True, exist_ok=True)
        # Beside its destination, so the move is one rename; another synth pulling the same chart meanwhile
        # wins or loses that rename, and either way the folder is whole.
        with tempfile.TemporaryDirectory(prefix=".pull-", dir=folder.parent) as scratch:
            env = {**os.environ, **{v: scratch for v in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME")}}
            into = Path(scratch) / "chart"
            assert self.helm is not None  # command() refused a missing Helm
            done = subprocess.run(
                [self.helm, "pull", chart, "--repo", repo, "--version", version, "--untar", "--untardir", str(into)],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            if done.returncode != 0 or not (into / chart / "Chart.yaml").is_file():
                raise ChartTemplateError(f"`helm pull` of {self.describe(options)} failed: {done.stderr.strip()}")
            try:
                (into / chart).rename(folder)
            except OSError:
                if not (folder / "Chart.yaml").is_file():
                    raise
        return folder

    @staticmethod
    def describe(options: Mapping[str, Any]) -> str:
        fetch = options.get("fetch_opts") or {}
        source = options.get("path") or fetch.get("repo")
        return f"chart {options['chart']} {fetch.get('version') or ''} from {source}".replace("  ", " ")


def helm_version(helm: str) -> str:
    """`helm version`'s version (`v3.18.6`), or "" when it does not answer."""
    try:
        done = subprocess.run(
            [helm, "version", "--template", "{{.Version}}"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


class _ManifestLoader(yaml.SafeLoader):
    """YAML 1.1 as Kubernetes reads it, except that a plain `=` is the string it is to go-yaml, not PyYAML's
    unconstructable `value` tag (kube-prometheus-stack's CRDs hold `- =` in an enum)."""


def _equals_sign(_loader: yaml.SafeLoader, _node: yaml.Node) -> str:
    """PyYAML resolves exactly one plain scalar, `=`, to the `value` tag (yaml/resolver.py)."""
    return "="


_ManifestLoader.add_constructor("tag:yaml.org,2002:value", _equals_sign)


def decoded(text: str, namespace: str) -> list[dict[str, Any]]:
    """Helm's multi-document output as objects, as the provider decodes it."""
    objects = []
    for document in yaml.load_all(text, Loader=_ManifestLoader):
        if not isinstance(document, dict) or not document.get("kind") or not document.get("apiVersion"):
            continue
        metadata = document["metadata"] = document.get("metadata") or {}
        if (document["apiVersion"], document["kind"]) not in CLUSTER_SCOPED and not metadata.get("namespace"):
            metadata["namespace"] = namespace
        objects.append(document)
    return objects
