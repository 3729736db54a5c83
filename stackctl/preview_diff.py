"""`scripts/preview-diff`: what a change does to each stack, as one Markdown comment body per stack.

Two modes. `live` previews the head revision against each stack's real state (its backend and
cluster credentials, refreshed first), so drift shows and the comment says what `pulumi up`
would do. `offline` (forks, no credentials) deploys the base revision in render mode into a
scratch backend and previews the head against that, so it needs no credentials or shared
state. Either way, with the policy pack: every changed property's old and new value (secrets
masked), every warning and policy result, chart pins and values, batching and scaling settings
side by side, and the full `pulumi preview --diff` text, collapsed (stackctl/preview_comment.py).
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

from offline.out_folder import OutputFolderError, claim
from platform_config.kubernetes import RENDER_OVERRIDE_ENV
from platform_config.paths import PROJECT_ROOT
from platform_config.secrets_provider import LOCAL_PASSPHRASE
from stackctl.preview_comment import StackReport, comment
from stackctl.preview_events import MASK, Diagnostic, PreviewEvents, read_event_log
from stackctl.terminal import guarded
from triton_platform.model_packaging.layout import config_path

# Settings that move latency, throughput and cost: shown side by side when they change
# (KEDA's own installation is not one: its chart has the table below).
TUNING_KEYS = re.compile(
    r"(^triton-platform:scaling\.(?!keda\.))|(\.replicas\.)|(\.gpusPerPod$)|(maxBatchSize$)|(dynamicBatching\.)|"
    r"(instanceGroup\.)|(\.batching\.)|(sequenceBatching\.)"
)
# The installed charts' pins and values (`keda.chart`, `monitoring.chart`: triton_platform/helm_chart.py).
CHART_KEYS = re.compile(r"(^|\.)chart\.")
MODES = ("live", "offline", "auto")
MODE_TEXT = {
    "live": "**Mode: live.** Previewed against the stack's real state in its backend, refreshed from the "
    "cluster first (`--refresh`) unless noted below: drift is included, and this is what `pulumi up` would change.",
    "offline": "**Mode: offline.** The base revision was deployed in render mode into scratch state and the head "
    "revision previewed against it, with no backend or cluster credentials: this is what the change does, "
    "not what `pulumi up` would do to a stack that has drifted.",
}


# Refreshing a render-mode stack fails: the provider's Read needs a cluster ("unreachable cluster").
RENDER_NOT_REFRESHED = (
    "Not refreshed: this stack renders manifests (`kubernetes.mode: render`), so there is no cluster to read "
    "drift from; its state is still the backend's."
)


class PreviewDiffError(Exception):
    """A mistake in how preview-diff was called: reported as `preview-diff: ...`, exit 1."""


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        return {
            k: v for key, item in value.items() for k, v in flatten(item, f"{prefix}.{key}" if prefix else key).items()
        }
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in flatten(item, f"{prefix}[{i}]").items()}
    return {prefix: json.dumps(value)}


ENVIRONMENT_KEY = "triton-platform:environment"


def stack_settings(tree: Path, stack: str) -> dict[str, str]:
    """Every leaf of the stack file's config, by full key path."""
    path = tree / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.exists():
        return {}
    flat = flatten((yaml.safe_load(path.read_text()) or {}).get("config") or {})
    # A `secure:` value is ciphertext: shown as what it is, never as its text.
    return {key.removesuffix(".secure"): MASK if key.endswith(".secure") else value for key, value in flat.items()}


def model_settings(repository: Path, stack: str) -> dict[str, str]:
    """The stack's rendered config.pbtxt of every model, flattened as `models.<model>.<field>`."""
    out: dict[str, str] = {}
    for config in sorted(repository.glob(config_path("*", stack))):
        message = text_format.Parse(config.read_text(), model_config_pb2.ModelConfig())
        fields = json_format.MessageToDict(message)
        out.update(flatten(fields, f"models.{config.parent.parent.name}"))
    return out


def setting_changes(
    base: Mapping[str, str], head: Mapping[str, str], keys: re.Pattern[str]
) -> list[tuple[str, str, str]]:
    """(key, base, head) for every setting matching `keys` that differs."""
    changed = sorted(k for k in set(base) | set(head) if keys.search(k) and base.get(k) != head.get(k))
    return [(k, base.get(k, "—"), head.get(k, "—")) for k in changed]


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
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True, capture_output=True)
    # The virtualenvs are not in git: the copy uses this checkout's (program, policy pack).
    for venv in (".venv", "policy/.venv"):
        if (PROJECT_ROOT / venv).exists() and (dest / venv).parent.is_dir():
            (dest / venv).symlink_to(PROJECT_ROOT / venv)
    return dest


def tree_env(tree: Path, env: Mapping[str, str]) -> dict[str, str]:
    """`env` for running the program of an exported tree: that tree's component package first on the path.

    The virtualenv installs the package editable from the checkout that built it (requirements.txt,
    `-e ./components`); without this, every revision's program would import the checkout's package, and a
    change inside components/ would never show between two revisions.
    """
    path = [str(tree / "components"), *filter(None, [env.get("PYTHONPATH")])]
    return {**env, "PYTHONPATH": os.pathsep.join(path)}


def cli_env(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PULUMI_BACKEND_URL=f"file://{scratch / 'state'}",
        PULUMI_CONFIG_PASSPHRASE=env.get("PULUMI_CONFIG_PASSPHRASE", LOCAL_PASSPHRASE),
        PULUMI_SKIP_UPDATE_CHECK="true",
        PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION="true",
        # Scratch state is thrown away: only the final state is saved. A file backend otherwise rewrites the whole
        # state after every step, and production's holds its charts' CRDs (about 100 s of a 140 s `up` here; pulumi
        # sdk/go/common/env/env.go, SkipCheckpoints, pulumi/pulumi#10668).
        PULUMI_SKIP_CHECKPOINTS="true",
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


def mode_env(mode: str, scratch: Path) -> dict[str, str]:
    """Live: the caller's backend, secrets provider and kubeconfig, as given. Offline: scratch state."""
    env = dict(os.environ) if mode == "live" else cli_env(scratch)
    # Plugin acquisition as the caller's CLI has it (scripts/pulumi-env): the stock CLI fetches
    # the providers, the offline toolchain must not.
    if "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION" not in os.environ:
        env.pop("PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", None)
    return {**env, "PULUMI_SKIP_UPDATE_CHECK": "true"}


def preview(head: Workspace, stack: str, scratch: Path, *, refresh: bool) -> tuple[PreviewEvents, str]:
    """`pulumi preview --diff` of the stack with the policy pack: what it reported, and its text."""
    log = scratch / f"events-{stack}.jsonl"
    policy = (
        ["--policy-pack", str(head.tree / "policy")] if (head.tree / "policy" / "PulumiPolicy.yaml").exists() else []
    )
    args = ["preview", "--diff", "--color", "never", *policy, *(["--refresh"] if refresh else []), "--stack", stack]
    # PULUMI_DEBUG_COMMANDS registers `--event-log` (see stackctl/preview_events.py for why).
    events_env = Workspace(head.tree, {**head.env, "PULUMI_DEBUG_COMMANDS": "true"})
    result = events_env.pulumi(*args, "--event-log", str(log), check=False)
    events = read_event_log(log)
    if result.returncode != 0 and not events.errors:
        message = f"pulumi preview exited with {result.returncode}: {result.stderr.strip()}"
        events.diagnostics.append(Diagnostic("error", "", message))
    return events, result.stdout + (f"\n{result.stderr}" if result.stderr.strip() else "")


def pin_images(workspace: Workspace, stack: str, mirrors: Sequence[str]) -> None:
    """A production stack's images by digest, as the deploy workflow pins them before its preview
    (`stackctl pin-images`): its policy pack refuses a production image by tag. Other tiers may run tags."""
    stack_file = workspace.tree / "stacks" / f"Pulumi.{stack}.yaml"
    if not stack_file.exists() or stack_settings(workspace.tree, stack).get(ENVIRONMENT_KEY) != '"production"':
        return
    command = ["-m", "stackctl", "pin-images", "--config", str(stack_file), *(f"--mirror={m}" for m in mirrors)]
    done = subprocess.run(
        [str(workspace.tree / ".venv" / "bin" / "python"), *command],
        cwd=workspace.tree,
        env=workspace.env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise PreviewDiffError(f"stackctl pin-images for {stack} failed in {workspace.tree}: {done.stderr.strip()}")


def prepare_offline(base: Workspace, head: Workspace, stack: str) -> list[str]:
    """Deploy the base revision's stack into scratch state (render mode) and select it for the head."""
    if (base.tree / "stacks" / f"Pulumi.{stack}.yaml").exists():
        base.pulumi("stack", "init", stack)
        base.pulumi("up", "--yes", "--skip-preview", "--stack", stack)
        copy_salt(base.tree, head.tree, stack)
        head.pulumi("stack", "select", stack)
        return []
    head.pulumi("stack", "init", stack)
    return ["New stack: the base revision has no such stack, so everything is created."]


def prepare_live(head: Workspace, stack: str) -> list[str]:
    selected = head.pulumi("stack", "select", stack, check=False)
    if selected.returncode != 0:
        raise PreviewDiffError(
            f"stack {stack!r} is not in the backend PULUMI_BACKEND_URL names (live mode previews existing stacks "
            f"only; create it with `make up STACK={stack}` or use --mode offline): {selected.stderr.strip()}"
        )
    if renders(head.tree, stack):
        return [RENDER_NOT_REFRESHED]
    return []


def renders(tree: Path, stack: str) -> bool:
    """Whether the stack writes manifests rather than deploying: its provider cannot read a cluster back."""
    return stack_settings(tree, stack).get("triton-platform:kubernetes.mode") == json.dumps("render")


def model_repo_settings(workspace: Workspace, stack: str, scratch: Path) -> dict[str, str]:
    out = scratch / f"model-repo-{stack}"
    if not (workspace.tree / "stacks" / f"Pulumi.{stack}.yaml").exists():
        return {}
    workspace.stackctl("model-repo", "--stack", stack, "--out", str(out))
    return model_settings(out, stack)


@dataclass(frozen=True)
class Revision:
    ref: str | None
    """What the caller named; None for the working tree."""
    sha: str
    """The commit: for the working tree, HEAD's."""
    dirty: bool

    def describe(self) -> str:
        if self.ref is None:
            state = " + uncommitted changes" if self.dirty else " (no uncommitted changes)"
            return f"the working tree: `HEAD` at `{self.sha}`{state}"
        return f"`{self.ref}` at `{self.sha}`"


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)


def revision(repo: Path, option: str, ref: str | None) -> Revision:
    found = git(repo, "rev-parse", "--verify", "--end-of-options", f"{ref or 'HEAD'}^{{commit}}")
    if found.returncode != 0:
        raise PreviewDiffError(
            f"{option} {ref or 'HEAD'!r} is not a commit of the git repository {repo}: "
            f"{found.stderr.strip() or 'git rev-parse found nothing'}"
        )
    dirty = ref is None and bool(git(repo, "status", "--porcelain").stdout.strip())
    return Revision(ref, found.stdout.strip(), dirty)


def resolve_mode(mode: str, env: Mapping[str, str]) -> str:
    """`auto`: live when a backend is given (same-repository pull requests in CI), else offline."""
    if mode == "auto":
        return "live" if env.get("PULUMI_BACKEND_URL") else "offline"
    if mode == "live" and not env.get("PULUMI_BACKEND_URL"):
        raise PreviewDiffError(
            "--mode live needs PULUMI_BACKEND_URL (the backend holding the stacks' state, e.g. "
            "s3://bucket/triton-platform) and its secrets provider; without credentials use --mode offline"
        )
    return mode


def run(
    repo: Path,
    base_ref: str,
    head_ref: str | None,
    stacks: Sequence[str],
    out: Path,
    *,
    mode: str = "offline",
    mirrors: Sequence[str] = (),
) -> dict[Path, bool]:
    """Write `<stack>.md` (and the full text as `<stack>.diff.txt`) per stack; each path maps to whether it passed."""
    base_rev, head_rev = revision(repo, "--base", base_ref), revision(repo, "--head", head_ref)
    revisions = f"Base: {base_rev.describe()}. Head: {head_rev.describe()}."
    written: dict[Path, bool] = {}
    files: dict[str, bytes] = {}
    folder = claim(out, "preview-diff")  # before the previews run: a folder of other files is refused at once
    with tempfile.TemporaryDirectory(prefix="preview-diff-") as tmp:
        scratch = Path(tmp)
        env = mode_env(mode, scratch)
        base_tree = export_tree(repo, base_rev.sha, scratch / "base")
        head_tree = export_tree(repo, head_ref and head_rev.sha, scratch / "head")
        base, head = Workspace(base_tree, tree_env(base_tree, env)), Workspace(head_tree, tree_env(head_tree, env))
        for stack in stacks:
            # Both revisions pinned alike, so an offline diff shows only what the change changes.
            for workspace in (head, base) if mode == "offline" else (head,):
                pin_images(workspace, stack, mirrors)
            notes = prepare_live(head, stack) if mode == "live" else prepare_offline(base, head, stack)
            events, text = preview(head, stack, scratch, refresh=mode == "live" and not renders(head.tree, stack))
            base_settings, head_settings = stack_settings(base.tree, stack), stack_settings(head.tree, stack)
            tuning = setting_changes(
                {**base_settings, **model_repo_settings(base, stack, scratch / "base-out")},
                {**head_settings, **model_repo_settings(head, stack, scratch / "head-out")},
                TUNING_KEYS,
            )
            report = StackReport(
                stack=stack,
                mode=MODE_TEXT[mode],
                revisions=revisions,
                events=events,
                settings=[
                    ("Chart versions and values", setting_changes(base_settings, head_settings, CHART_KEYS)),
                    ("Batching and scaling settings", tuning),
                ],
                notes=notes,
                full_diff=text,
                appendix=scaling_impact(base.tree, head.tree, stack) if tuning else "",
            )
            files[f"{stack}.diff.txt"] = text.encode("utf-8")
            files[f"{stack}.md"] = comment(report).encode("utf-8")
            written[out / f"{stack}.md"] = not events.errors
    folder.replace(files)
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
    # Twice the load that fires the scaling trigger on the floor: both revisions must scale.
    peak = 2 * trigger_rps(head)
    return (
        f"\n#### Scaling impact (`stackctl simulate`, {head.deployment}/{head.model}, "
        f"{IMPACT_SHAPE} trace peaking at {peak:.0f} req/s over {IMPACT_HOURS:g} h)\n\n"
        + compare(base, head, shaped_trace(IMPACT_SHAPE, peak, IMPACT_HOURS), IMPACT_SEED)
    )


def stacks_of(repo: Path) -> list[str]:
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (repo / "stacks").glob("Pulumi.*.yaml"))


def main(argv: Sequence[str] | None = None) -> int:
    with guarded():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="preview-diff", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", required=True, help="git revision the change is compared against (e.g. origin/main)")
    parser.add_argument("--head", help="git revision to preview (default: the working tree)")
    parser.add_argument("--repo", type=Path, default=PROJECT_ROOT, help="the repository (default: this project)")
    parser.add_argument("--out", type=Path, default=Path("preview-diff"), help="folder for <stack>.md")
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="live: against the stacks' real state (needs PULUMI_BACKEND_URL and credentials); offline: base "
        "deployed into scratch state; auto (default): live when PULUMI_BACKEND_URL is set",
    )
    parser.add_argument(
        "--mirror",
        action="append",
        default=[],
        metavar="REGISTRY=HOST[:PORT]",
        help="passed to `stackctl pin-images`, which pins a production stack's images before its preview",
    )
    parser.add_argument("stacks", nargs="*", help="stacks to preview (default: every stacks/Pulumi.<stack>.yaml)")
    args = parser.parse_args(argv)
    stacks = args.stacks or stacks_of(args.repo)
    try:
        mode = resolve_mode(args.mode, os.environ)
        written = run(args.repo.resolve(), args.base, args.head, stacks, args.out, mode=mode, mirrors=args.mirror)
    except OutputFolderError as err:
        print(err.report(), file=sys.stderr)
        return 2
    except (PreviewDiffError, RuntimeError, subprocess.CalledProcessError) as err:
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
