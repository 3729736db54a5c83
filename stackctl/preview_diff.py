"""`scripts/preview-diff`: what a change does to each stack, as one Markdown comment body per stack.

For every stack the base revision is deployed (render mode) into a scratch backend,
then the head revision is previewed against that state with the real CLI. So a pull
request's preview needs no cluster credentials and no shared state, and shows exactly
the objects the change creates, updates, replaces and deletes. Replacing or deleting
stateful or protected resources is flagged loudly; the batching and scaling settings
that changed are shown side by side, as each revision's own code renders them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

from components.kubernetes_provider import RENDER_OVERRIDE_ENV
from platform_config.paths import PROJECT_ROOT

OPS = ("create", "update", "replace", "delete")
# Steps the engine reports for a replacement, folded into "replace".
REPLACE_OPS = {"replace", "create-replacement", "delete-replaced"}
# Kinds whose loss loses data: model storage, and the namespace that holds it.
STATEFUL_TYPES = {
    "kubernetes:core/v1:PersistentVolumeClaim": "model storage",
    "kubernetes:core/v1:PersistentVolume": "model storage",
    "kubernetes:core/v1:Namespace": "deleting a namespace deletes every claim in it",
    "random:index/randomPassword:RandomPassword": "a new value rotates a credential",
}
# Settings that move latency, throughput and cost: shown side by side when they change.
TUNING_KEYS = re.compile(
    r"(^triton-platform:scaling\.)|(\.replicas\.)|(\.gpusPerPod$)|(maxBatchSize$)|(dynamicBatching\.)|"
    r"(instanceGroup\.)|(\.batching\.)|(sequenceBatching\.)"
)
# scripts/pulumi-env's default; dev's committed encryptionsalt belongs to it.
LOCAL_PASSPHRASE = "local-only-not-secret"


@dataclass(frozen=True)
class Change:
    op: str
    type: str
    name: str
    reasons: tuple[str, ...]
    danger: str | None
    """Why this change can lose data or access; None when it cannot."""


def urn_parts(urn: str) -> tuple[str, str]:
    """(type, name) of a URN; the type is the last of a parent chain."""
    _, _, types, name = urn.split("::", 3)
    return types.split("$")[-1], name


def danger(op: str, step: Mapping[str, Any]) -> str | None:
    if op not in ("replace", "delete"):
        return None
    type_, _ = urn_parts(step["urn"])
    state = {**(step.get("oldState") or {}), **(step.get("newState") or {})}
    reasons = []
    if state.get("protect"):
        reasons.append("protected")
    if state.get("retainOnDelete"):
        reasons.append("retained on delete")
    if type_ in STATEFUL_TYPES:
        reasons.append(STATEFUL_TYPES[type_])
    return "; ".join(reasons) or None


def changes(steps: Iterable[Mapping[str, Any]]) -> list[Change]:
    """The preview's steps that change something, replacements counted once."""
    out: dict[str, Change] = {}
    for step in steps:
        op = "replace" if step["op"] in REPLACE_OPS else step["op"]
        if op not in OPS:
            continue
        type_, name = urn_parts(step["urn"])
        if type_.startswith("pulumi:providers:") and op == "update":
            continue
        detailed = sorted((step.get("detailedDiff") or {}).keys())
        reasons = tuple(step.get("replaceReasons") or step.get("diffReasons") or detailed)
        previous = out.get(step["urn"])
        if previous and previous.op == "replace":
            reasons = tuple(dict.fromkeys(previous.reasons + reasons))
            op = "replace"
        out[step["urn"]] = Change(op, type_, name, reasons, danger(op, step))
    return sorted(out.values(), key=lambda c: (OPS.index(c.op), c.type, c.name))


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        return {
            k: v for key, item in value.items() for k, v in flatten(item, f"{prefix}.{key}" if prefix else key).items()
        }
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in flatten(item, f"{prefix}[{i}]").items()}
    return {prefix: json.dumps(value)}


def stack_settings(tree: Path, stack: str) -> dict[str, str]:
    """Every leaf of the stack file's config, by full key path."""
    path = tree / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.exists():
        return {}
    return flatten((yaml.safe_load(path.read_text()) or {}).get("config") or {})


def model_settings(repository: Path, stack: str) -> dict[str, str]:
    """The stack's rendered config.pbtxt of every model, flattened as `models.<model>.<field>`."""
    out: dict[str, str] = {}
    for config in sorted(repository.glob(f"*/configs/{stack}.pbtxt")):
        message = text_format.Parse(config.read_text(), model_config_pb2.ModelConfig())
        fields = json_format.MessageToDict(message)
        out.update(flatten(fields, f"models.{config.parent.parent.name}"))
    return out


def tuning_changes(base: Mapping[str, str], head: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(key, base, head) for every batching or scaling setting that differs."""
    keys = sorted(k for k in set(base) | set(head) if TUNING_KEYS.search(k) and base.get(k) != head.get(k))
    return [(k, base.get(k, "—"), head.get(k, "—")) for k in keys]


def markdown(
    stack: str,
    found: Sequence[Change],
    tuning: Sequence[tuple[str, str, str]],
    notes: Sequence[str],
    errors: Sequence[str] = (),
) -> str:
    counts = {op: sum(c.op == op for c in found) for op in OPS}
    lines = [f"### `pulumi preview` — stack **{stack}**", ""]
    if errors:
        lines += ["> [!WARNING]", "> **`pulumi preview` fails: this change cannot be deployed as it is.**"]
        lines += [f"> {line}" for error in errors for line in error.splitlines()]
        lines.append("")
    dangerous = [c for c in found if c.danger]
    if dangerous:
        lines += ["> [!CAUTION]", "> **Stateful or protected resources are replaced or deleted:**"]
        lines += [f"> - **{c.op}** `{c.type}` `{c.name}`: {c.danger}" for c in dangerous]
        lines.append("")
    lines.append(" · ".join(f"{counts[op]} to {op}" for op in OPS) if found else "No changes.")
    lines.append("")
    if found:
        lines += ["| op | type | name | changed |", "|---|---|---|---|"]
        for c in found:
            flag = " ⚠️" if c.danger else ""
            lines.append(f"| {c.op}{flag} | `{c.type}` | `{c.name}` | {', '.join(f'`{r}`' for r in c.reasons)} |")
        lines.append("")
    if tuning:
        lines += ["#### Batching and scaling settings", "", "| setting | base | head |", "|---|---|---|"]
        lines += [f"| `{key}` | `{old}` | `{new}` |" for key, old, new in tuning]
        lines.append("")
    lines += [f"_{note}_" for note in notes]
    return "\n".join(lines).rstrip() + "\n"


@dataclass(frozen=True)
class Workspace:
    """A checked-out revision with the project's virtualenv, and the CLI environment to run it in."""

    tree: Path
    env: dict[str, str]

    def pulumi(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["pulumi", *args, "--non-interactive"],
            cwd=self.tree,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"pulumi {' '.join(args)} failed in {self.tree}:\n{result.stdout}{result.stderr}")
        return result

    def stackctl(self, *args: str) -> None:
        subprocess.run(
            [str(self.tree / ".venv" / "bin" / "python"), "-m", "stackctl", *args],
            cwd=self.tree,
            env=self.env,
            check=True,
            capture_output=True,
        )


def export_tree(repo: Path, ref: str | None, dest: Path) -> Path:
    """The files of `ref` (None: the working tree, tracked and untracked but not ignored) in `dest`."""
    dest.mkdir(parents=True)
    if ref is None:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=repo,
            check=True,
            capture_output=True,
        ).stdout.split(b"\0")
        for name in filter(None, (n.decode() for n in listed)):
            if (repo / name).is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(repo / name, dest / name)
    else:
        archive = subprocess.run(["git", "archive", "--format=tar", ref], cwd=repo, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    # The virtualenvs are not in git: the copy uses this checkout's (program, policy pack).
    for venv in (".venv", "policy/.venv"):
        if (PROJECT_ROOT / venv).exists() and (dest / venv).parent.is_dir():
            (dest / venv).symlink_to(PROJECT_ROOT / venv)
    return dest


def cli_env(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PULUMI_BACKEND_URL=f"file://{scratch / 'state'}",
        PULUMI_CONFIG_PASSPHRASE=env.get("PULUMI_CONFIG_PASSPHRASE", LOCAL_PASSPHRASE),
        PULUMI_SKIP_UPDATE_CHECK="true",
        PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION="true",
        **{RENDER_OVERRIDE_ENV: str(scratch / "rendered")},
    )
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    (scratch / "state").mkdir(parents=True, exist_ok=True)
    return env


def copy_salt(from_tree: Path, to_tree: Path, stack: str) -> None:
    """The head's stack file needs the passphrase salt the base's stack got from `stack init`."""
    source = from_tree / "stacks" / f"Pulumi.{stack}.yaml"
    target = to_tree / "stacks" / f"Pulumi.{stack}.yaml"
    salt = next((line for line in source.read_text().splitlines() if line.startswith("encryptionsalt:")), None)
    if salt and target.exists() and "encryptionsalt:" not in target.read_text():
        target.write_text(f"{salt}\n{target.read_text()}")


@dataclass(frozen=True)
class StackPreview:
    changes: list[Change]
    errors: list[str]
    """Why `pulumi preview` failed (empty when it passed); the steps it planned are still reported."""
    notes: list[str]


def preview_stack(base: Workspace | None, head: Workspace, stack: str) -> StackPreview:
    notes: list[str] = []
    if base and (base.tree / "stacks" / f"Pulumi.{stack}.yaml").exists():
        base.pulumi("stack", "init", stack)
        base.pulumi("up", "--yes", "--skip-preview", "--stack", stack)
        copy_salt(base.tree, head.tree, stack)
        head.pulumi("stack", "select", stack)
    else:
        head.pulumi("stack", "init", stack)
        notes.append("New stack: the base revision has no such stack, so everything is created.")
    policy = (
        ["--policy-pack", str(head.tree / "policy")] if (head.tree / "policy" / "PulumiPolicy.yaml").exists() else []
    )
    result = head.pulumi("preview", "--json", *policy, "--stack", stack, check=False)
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"pulumi preview failed for stack {stack}:\n{result.stdout}{result.stderr}") from None
    errors = [
        d["message"].strip()
        for d in report.get("diagnostics") or []
        if d.get("severity") == "error" and d.get("message")
    ]
    if result.returncode != 0 and not errors:
        errors.append(f"pulumi preview exited with {result.returncode}: {result.stderr.strip()}")
    return StackPreview(changes(report.get("steps") or []), errors, notes)


def model_repo_settings(workspace: Workspace, stack: str, scratch: Path) -> dict[str, str]:
    out = scratch / f"model-repo-{stack}"
    if not (workspace.tree / "stacks" / f"Pulumi.{stack}.yaml").exists():
        return {}
    workspace.stackctl("model-repo", "--stack", stack, "--out", str(out))
    return model_settings(out, stack)


def run(repo: Path, base_ref: str, head_ref: str | None, stacks: Sequence[str], out: Path) -> dict[Path, bool]:
    """Write `<stack>.md` per stack; each path maps to whether that stack's preview passed."""
    written: dict[Path, bool] = {}
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="preview-diff-") as tmp:
        scratch = Path(tmp)
        env = cli_env(scratch)
        base = Workspace(export_tree(repo, base_ref, scratch / "base"), env)
        head = Workspace(export_tree(repo, head_ref, scratch / "head"), env)
        for stack in stacks:
            preview = preview_stack(base, head, stack)
            tuning = tuning_changes(
                {**stack_settings(base.tree, stack), **model_repo_settings(base, stack, scratch / "base-out")},
                {**stack_settings(head.tree, stack), **model_repo_settings(head, stack, scratch / "head-out")},
            )
            notes = [*preview.notes, f"Base `{base_ref}`, head `{head_ref or 'working tree'}`; rendered offline."]
            text = markdown(stack, preview.changes, tuning, notes, preview.errors)
            if tuning:
                text += scaling_impact(base.tree, head.tree, stack)
            target = out / f"{stack}.md"
            target.write_text(text, encoding="utf-8")
            written[target] = not preview.errors
    return written


# The load both revisions meet: a compressed day with a 3x burst, the same seed.
IMPACT_SHAPE, IMPACT_HOURS, IMPACT_SEED = "spike", 0.25, 1


def scaling_impact(base_tree: Path, head_tree: Path, stack: str) -> str:
    """`stackctl simulate`'s deltas between the two revisions' configs of the stack, as Markdown."""
    from platform_config.errors import ConfigError  # noqa: PLC0415
    from platform_config.loader import load_stack_file  # noqa: PLC0415
    from simulator.report import compare  # noqa: PLC0415
    from simulator.scenario import scenario, shaped_trace, trigger_rps  # noqa: PLC0415

    try:
        runs = [
            scenario(load_stack_file(tree / "stacks" / f"Pulumi.{stack}.yaml", stack), repo=tree / "model_repo")
            for tree in (base_tree, head_tree)
        ]
    except (ConfigError, FileNotFoundError, ValueError) as err:
        return f"\n#### Scaling impact\n\nNot simulated: {str(err).splitlines()[0]}\n"
    base, head = runs
    # Twice the load that fires the queue trigger on the floor: both revisions must scale.
    peak = 2 * trigger_rps(head)
    return (
        f"\n#### Scaling impact (`stackctl simulate`, {head.deployment}/{head.model}, "
        f"{IMPACT_SHAPE} trace peaking at {peak:.0f} req/s over {IMPACT_HOURS:g} h)\n\n"
        + compare(base, head, shaped_trace(IMPACT_SHAPE, peak, IMPACT_HOURS), IMPACT_SEED)
    )


def stacks_of(repo: Path) -> list[str]:
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (repo / "stacks").glob("Pulumi.*.yaml"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="preview-diff", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", required=True, help="git revision the change is compared against (e.g. origin/main)")
    parser.add_argument("--head", help="git revision to preview (default: the working tree)")
    parser.add_argument("--repo", type=Path, default=PROJECT_ROOT, help="the repository (default: this project)")
    parser.add_argument("--out", type=Path, default=Path("preview-diff"), help="folder for <stack>.md")
    parser.add_argument("stacks", nargs="*", help="stacks to preview (default: every stacks/Pulumi.<stack>.yaml)")
    args = parser.parse_args(argv)
    stacks = args.stacks or stacks_of(args.repo)
    try:
        written = run(args.repo.resolve(), args.base, args.head, stacks, args.out)
    except (RuntimeError, subprocess.CalledProcessError) as err:
        print(f"preview-diff: {err}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    failed = [path.stem for path, passed in written.items() if not passed]
    if failed:
        print(f"preview-diff: pulumi preview fails for {', '.join(failed)} (see their reports)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
