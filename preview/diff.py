"""What a change does to each stack: both revisions previewed, one Markdown comment body per stack.

Two modes. `live` previews the head revision against each stack's real state (its backend and
cluster credentials, refreshed first), so drift shows and the comment says what `pulumi up`
would do. `offline` (forks, no credentials) deploys the base revision in render mode into a
scratch backend and previews the head against that, so it needs no credentials or shared
state. Either way, with the policy pack: every changed property's old and new value (secrets
masked), every warning and policy result, chart pins and values, batching and scaling settings
side by side, and the full `pulumi preview --diff` text, collapsed (preview/comment.py).
The command line is stackctl/preview_command.py (`scripts/preview-diff`).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from offline.out_folder import claim
from preview.comment import StackReport, comment
from preview.events import Diagnostic, PreviewEvents, read_event_log
from preview.settings import (
    CHART_KEYS,
    ENVIRONMENT_KEY,
    TUNING_KEYS,
    model_settings,
    renders,
    setting_changes,
    stack_settings,
)
from preview.workspace import Workspace, copy_salt, export_tree, mode_env, tree_env

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


def preview(head: Workspace, stack: str, scratch: Path, *, refresh: bool) -> tuple[PreviewEvents, str]:
    """`pulumi preview --diff` of the stack with the policy pack: what it reported, and its text."""
    log = scratch / f"events-{stack}.jsonl"
    policy = (
        ["--policy-pack", str(head.tree / "policy")] if (head.tree / "policy" / "PulumiPolicy.yaml").exists() else []
    )
    args = ["preview", "--diff", "--color", "never", *policy, *(["--refresh"] if refresh else []), "--stack", stack]
    # PULUMI_DEBUG_COMMANDS registers `--event-log` (see preview/events.py for why).
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
