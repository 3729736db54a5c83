"""The stackctl CLI as a user runs it: exit codes, messages, files written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from offline.out_folder import MANIFEST
from offline.synth import manifest_filename
from platform_config.paths import PROJECT_ROOT
from platform_config.plaintext_secrets import SECRET_PLACEHOLDER
from platform_config.stack_document import pulumi_config_from_stack_file
from stackctl.main import main
from tests.conftest import STACKS, synth_stack


@pytest.mark.parametrize("stack", STACKS)
def test_validate_stack_prints_a_one_line_summary(stack: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--stack", stack]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"stacks/Pulumi.{stack}.yaml: OK: stack {stack} ({stack}, ")
    # Production's more lines: Triton's image, which the deploy workflow pins (no public digest to commit), and the
    # capacity per pod of each model its demand signal reads (three); dev's, the wake estimate of its deployment at
    # zero.
    assert out.count("\n") == {"staging": 1, "dev": 2, "production": 5}[stack]


def test_validate_config_file_anywhere_lists_every_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (PROJECT_ROOT / "stacks/Pulumi.dev.yaml").read_text()
    text = text.replace("maxNodes: 2", "maxNodes: 0").replace("count: 1", "count: many")
    bad = tmp_path / "Pulumi.mine.yaml"
    bad.write_text(text)
    assert main(["validate", "--config", str(bad)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"{bad}: 2 config errors",
        f"{bad}:20:5: triton-platform:gpuPool.maxNodes: Input should be greater than or equal to 1; got 0",
        f"{bad}:60:9: triton-platform:serving.modelDefaults.instanceGroup.count: Input should be a valid integer; got 'many'",
    ]


def test_unknown_stack_lists_known_stacks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--stack", "prod"]) == 2
    assert "no stack 'prod'; known stacks: dev, production, staging" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "code", "expected"),
    [
        # Not YAML: a finding at its line and column.
        ("config: [\n", 1, "{bad}:2:1: (yaml): not valid YAML: expected the node content, but found '<stream end>'"),
        ("config:\n  a: 1\n  a: 2\n", 1, "{bad}:3:3: (yaml): not valid YAML: key 'a' appears twice in one mapping"),
        (
            "config:\n\ta: 1\n",
            1,
            "{bad}:2:1: (yaml): not valid YAML: found character '\\t' that cannot start any token",
        ),
        # YAML without the stack's mapping: a finding, at the file's first key.
        ("encryptionsalt: abc\n", 1, "{bad}: config: the stack file needs a top-level `config:` mapping"),
    ],
)
def test_malformed_stack_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, code: int, expected: str
) -> None:
    bad = tmp_path / "Pulumi.x.yaml"
    bad.write_text(content)
    assert main(["validate", "--config", str(bad)]) == code
    assert expected.format(bad=bad) in capsys.readouterr().err


@pytest.mark.parametrize("command", ["validate", "model-repo", "publish-models"])
def test_a_model_repo_that_is_no_folder_is_one_usage_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "models.tar"
    file.write_text("")
    extra = ["--out", str(tmp_path / "out")] if command == "model-repo" else []
    for given, what in ((file, "is not a folder"), (tmp_path / "nowhere", "does not exist")):
        with pytest.raises(SystemExit) as exit_:
            main([command, "--stack", "dev", "--model-repo", str(given), *extra])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert err.endswith(
            f"stackctl {command}: error: argument --model-repo: '{given}' {what}; give the model repository's folder\n"
        )


def test_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--config", str(tmp_path / "nope.yaml")]) == 2
    assert "(file): cannot read the stack file: No such file or directory" in capsys.readouterr().err


def test_a_user_mistake_never_shows_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "Pulumi.x.yaml"
    bad.write_text("config:\n  triton-platform:environment: 7\n")
    run = subprocess.run(
        [sys.executable, "-m", "stackctl", "synth", "--config", str(bad), "--out", str(tmp_path / "out")],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert "triton-platform:environment: Input should be 'dev', 'staging' or 'production'; got '7'" in run.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("stack", STACKS)
def test_synth_writes_plain_manifests_and_the_resource_list(stack: str, tmp_path: Path) -> None:
    # The program's own objects, as synth_stack has them (test_chart_template.py covers the charts').
    assert main(["synth", "--stack", stack, "--out", str(tmp_path), "--no-charts"]) == 0
    result = synth_stack(stack)
    manifests = result.manifests()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == sorted([*(manifest_filename(m) for m in manifests), "resources.json", MANIFEST])
    assert f"namespace-_-triton-{stack}.yaml" in files
    assert f"deployment-triton-{stack}-triton-general.yaml" in files
    for manifest in manifests:
        written = yaml.safe_load((tmp_path / manifest_filename(manifest)).read_text())
        assert written == manifest
        assert list(written)[:3] == ["apiVersion", "kind", "metadata"]
    listing = json.loads((tmp_path / "resources.json").read_text())
    assert sorted((r["type"], r["name"]) for r in listing) == sorted((r.type, r.name) for r in result.resources)
    urns = {r["name"]: r["urn"] for r in listing}
    parents = {r["name"]: r["parent"] for r in listing}
    assert parents[f"{stack}-namespace"] == urns[stack]
    assert parents[f"{stack}-serving-general-deployment"] == urns[f"{stack}-serving"]


def test_synth_output_is_deterministic_and_replaces_its_own_files(tmp_path: Path) -> None:
    assert main(["synth", "--stack", "dev", "--out", str(tmp_path)]) == 0
    first = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    # An object an earlier synth wrote and this one no longer has: listed in synth's manifest, so removed.
    (tmp_path / "deployment-stale-x.yaml").write_text("stale")
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    (tmp_path / MANIFEST).write_text(json.dumps({**manifest, "files": [*manifest["files"], "deployment-stale-x.yaml"]}))
    assert main(["synth", "--stack", "dev", "--out", str(tmp_path)]) == 0
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == first


def test_synth_refuses_a_folder_it_did_not_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["synth", "--stack", "dev", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"stackctl synth: {tmp_path} is not empty and was not written by stackctl synth (unexpected: notes.txt); "
        "use a new or empty folder, or one stackctl synth wrote\n"
    )
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_secure_values_validate_offline_and_are_marked_secret(tmp_path: Path) -> None:
    text = (PROJECT_ROOT / "stacks/Pulumi.staging.yaml").read_text()
    text = text.replace(
        "    context: staging",
        "    context:\n      secure: v1:UfxlPt7ZpznUyuPE:H2gRqqVIuGcU12I3Lm2Cf3+1WLqmW68BiuZJzyGGx30mrjXJPwLGHw==",
    )
    path = tmp_path / "Pulumi.staging.yaml"
    path.write_text(text)
    flat, secret_keys = pulumi_config_from_stack_file(path)
    assert secret_keys == ["triton-platform:kubernetes"]
    assert json.loads(flat["triton-platform:kubernetes"])["context"] == SECRET_PLACEHOLDER
    assert main(["validate", "--config", str(path)]) == 0


def test_an_out_that_is_a_file_is_refused_without_a_traceback(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("mine")
    for command in (["rules", "--stack", "dev"], ["synth", "--stack", "dev"]):
        run = subprocess.run(
            [sys.executable, "-m", "stackctl", *command, "--out", str(target)],
            cwd=PROJECT_ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert run.returncode == 2
        assert run.stderr == (
            f"stackctl {command[0]}: --out {target} is a file; "
            f"use a new or empty folder, or one stackctl {command[0]} wrote\n"
        )
        assert target.read_text() == "mine"


@pytest.mark.parametrize(
    ("trace", "expected"),
    [
        ("t_seconds,rps\n0,x\n", "{path}:2: '0,x' is not a row of t_seconds,rps (two numbers, the header naming them)"),
        ("t_seconds,rps\n0,-5\n", "{path}:2: t_seconds and rps must be finite and non-negative; got 0.0, -5.0"),
        ("t_seconds,rps\n0,5\n10,5\n5,5\n", "{path}:4: t_seconds must increase; 5.0 follows 10.0"),
    ],
)
def test_a_bad_trace_names_its_file_and_line(tmp_path: Path, trace: str, expected: str) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(trace)
    run = subprocess.run(
        [sys.executable, "-m", "stackctl", "simulate", "--stack", "dev", "--trace", str(path), "--no-plot",
         "--out", str(tmp_path / "sim")],
        cwd=PROJECT_ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 2
    assert run.stderr.strip() == "stackctl simulate: " + expected.format(path=path)
    assert "Traceback" not in run.stderr


def test_publish_models_of_a_bundled_stack_is_a_no_op(capsys: pytest.CaptureFixture[str]) -> None:
    """The deploy workflow publishes every stack: dev's bundled files have nowhere to go, and that is fine."""
    assert main(["publish-models", "--stack", "dev"]) == 0
    assert capsys.readouterr().out == (
        "stacks/Pulumi.dev.yaml: nothing to publish: modelRepository source 'bundled' is not read from object "
        "storage (publishing is for sources s3 and gcs, and for a pvc with origin)\n"
    )


def test_validate_names_every_production_image_still_to_pin_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not an error: the deploy workflow pins them before its preview, whose policy pack refuses a tag."""
    text = (PROJECT_ROOT / "stacks/Pulumi.production.yaml").read_text()
    pause = "    registry.k8s.io/pause:3.10: sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a\n"
    assert pause in text
    bad = tmp_path / "Pulumi.production.yaml"
    bad.write_text(text.replace(pause, ""))
    assert main(["validate", "--config", str(bad)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        f"{bad}: still by tag, to pin before deploy: docker.io/rclone/rclone:1.76.0, "
        "nvcr.io/nvidia/tritonserver:24.10-py3, registry.k8s.io/pause:3.10 (`stackctl pin-images --stack production` resolves them and the charts' images into "
        "triton-platform:imageDigests; the deploy workflow runs it before its preview, whose policy pack refuses any "
        "production image by tag)"
    )
    assert main(["validate", "--config", str(bad), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["unpinned"] == [
        "docker.io/rclone/rclone:1.76.0",
        "nvcr.io/nvidia/tritonserver:24.10-py3",
        "registry.k8s.io/pause:3.10",
    ]


def test_an_unexpected_error_is_one_line_and_debug_shows_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(_path: Path, _stack: str | None = None, _charts: object = None) -> None:
        raise RuntimeError("x" * 5000)

    monkeypatch.setattr("offline.synth.synthesize", broken)
    assert main(["synth", "--stack", "dev", "--out", "/nonexistent-parent/out"]) == 3
    [line] = capsys.readouterr().err.splitlines()
    assert line == (
        "stackctl synth: unexpected error: RuntimeError: " + "x" * 2000 + "… (5,000 characters in all); "
        "this is a bug in stackctl; rerun with --debug for the traceback"
    )
    # --debug: the whole traceback, printed through the terminal's rule, and the bug's exit code.
    assert main(["synth", "--stack", "dev", "--out", "/nonexistent-parent/out", "--debug"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert err.rstrip().endswith("RuntimeError: " + "x" * 5000)


def test_a_stack_name_pulumi_refuses_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "Pulumi.my stack.yaml"
    bad.write_text((PROJECT_ROOT / "stacks/Pulumi.dev.yaml").read_text())
    assert main(["validate", "--config", str(bad)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{bad}: 1 config error",
        f"{bad}: (stack): stack name 'my stack' has characters Pulumi does not allow; Pulumi stack names are 1-100 "
        "letters, digits, '-', '_' and '.'",
    ]


def test_kube_context_prints_the_context_the_ci_names_its_kubeconfig_after(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kube-context", "--stack", "production"]) == 0
    assert capsys.readouterr().out == "production\n"


def test_kube_context_refuses_a_stack_that_renders(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kube-context", "--stack", "dev"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "stacks/Pulumi.dev.yaml: triton-platform:kubernetes.context: unset: mode 'render' reaches no cluster, so its "
        "GitHub environment needs no cluster credentials (leave CLOUD unset, or none, and no KUBECONFIG_CONTENT)"
    )


def test_kube_context_refuses_a_context_left_to_esc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text("environment:\n  - myorg/prod\nconfig:\n  triton-platform:environment: production\n")
    assert main(["kube-context", "--config", str(path)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"{path}: triton-platform:kubernetes: left to ESC; the CI reads the cluster's context from the stack file: "
        "write it there"
    )


def test_kube_context_refuses_a_context_that_could_forge_a_line_showing_it_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CI writes what kube-context prints into its step outputs: a context with a newline or an escape
    sequence is an input error, never printed raw."""
    document = yaml.safe_load((PROJECT_ROOT / "stacks/Pulumi.production.yaml").read_text())
    document["config"]["triton-platform:kubernetes"]["context"] = "production\ncloud=none\x1b[2K"
    path = tmp_path / "Pulumi.production.yaml"
    path.write_text(yaml.safe_dump(document))
    assert main(["kube-context", "--config", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "\x1b" not in captured.err
    assert captured.err.splitlines()[-1] == (
        rf"{path}: triton-platform:kubernetes.context: 'production\ncloud=none\x1b[2K' holds the control character "
        r"'\n' at position 10; give printable text: no newline, carriage return, escape sequence or other control "
        "character"
    )


def test_validate_says_what_a_streaming_deployment_scales_on_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(PROJECT_ROOT / "model_repo", repo)
    shutil.copytree(PROJECT_ROOT / "tests/fixtures/streaming_repo/tokens", repo / "tokens")
    (repo / "llama" / "1").mkdir(parents=True)
    (repo / "llama" / "config.pbtxt").write_text(
        'backend: "vllm"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: true }\n'
        'parameters { key: "REPORT_CUSTOM_METRICS" value: { string_value: "yes" } }\n'
    )
    # A share below dev's gpuMemoryRatioTarget (0.9), which an engine's preallocation must stay under.
    (repo / "llama" / "1" / "model.json").write_text(
        '{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu_memory_utilization": 0.5}'
    )
    document = yaml.safe_load((PROJECT_ROOT / "stacks/Pulumi.dev.yaml").read_text())
    document["config"].pop("triton-platform:models", None)
    serving = document["config"]["triton-platform:serving"]
    serving["image"] = "nvcr.io/nvidia/tritonserver:24.11-py3"
    serving["deployments"]["general"]["models"] += ["tokens", "llama"]
    serving["tokenObjectives"] = {"tokens": {"timeToFirstTokenP95Ms": 500}, "llama": {"timeToFirstTokenP95Ms": 800}}
    stack = tmp_path / "Pulumi.dev.yaml"
    stack.write_text(yaml.safe_dump(document))
    assert main(["validate", "--config", str(stack), "--model-repo", str(repo)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"{stack}: deployment general scales on its tokens too: time-to-first-token against 0.8 (its p95 time to "
        "first token over the objective, worst model first: the wait before the first token grows with the requests "
        "queued ahead of prefill, past what a busy ratio can show); not on waiting requests and KV-cache use, which "
        "the vLLM backend (r24.10) does not report"
    )


@pytest.fixture
def streaming_stack(tmp_path: Path) -> tuple[Path, Path]:
    """Staging's copy serving the streaming `tokens` model with a 500 ms p95 TTFT objective, and its repository."""
    repo = tmp_path / "repo"
    shutil.copytree(PROJECT_ROOT / "model_repo", repo)
    shutil.copytree(PROJECT_ROOT / "tests/fixtures/streaming_repo/tokens", repo / "tokens")
    document = yaml.safe_load((PROJECT_ROOT / "stacks/Pulumi.staging.yaml").read_text())
    serving = document["config"]["triton-platform:serving"]
    serving["image"] = "nvcr.io/nvidia/tritonserver:24.11-py3"
    serving["deployments"]["general"]["models"].append("tokens")
    serving["tokenObjectives"] = {"tokens": {"timeToFirstTokenP95Ms": 500}}
    stack = tmp_path / "Pulumi.staging.yaml"
    stack.write_text(yaml.safe_dump(document, sort_keys=False))
    return stack, repo


STREAM_PROFILE = PROJECT_ROOT / "bench/results/profiles/tokens.stream.json"


def test_plan_holds_a_streaming_models_ttft_objective_and_patches_the_stack(
    streaming_stack: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack, repo = streaming_stack
    out = tmp_path / "plan"
    args = ["plan", "--config", str(stack), "--model-repo", str(repo), "--stream-profile", str(STREAM_PROFILE)]
    assert main([*args, "--profile", "diurnal", "--peak-rps", "8", "--out", str(out), "--apply"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"{stack}: general/tokens, 16 stream candidates; outputs in {out}"  # floors 1-2: fallback 2
    plan = json.loads((out / "plan.json").read_text())
    chosen = plan["chosen"]
    assert chosen["ttft_p95_ms"] <= 500
    assert plan["current"]["ttft_p95_ms"] > 500  # the stack's 0.8 target and floor of 1 miss it
    assert chosen["gpu_hours"] >= plan["oracle_gpu_hours"]
    config = yaml.safe_load(stack.read_text())["config"]
    assert config["triton-platform:serving"]["deployments"]["general"]["replicas"]["min"] == chosen["min_replicas"]
    assert config["triton-platform:scaling"].get("timeToFirstTokenTarget", 0.8) == chosen["target"]
    assert printed[-1] == f"  applied to {stack}"
    assert main(["validate", "--config", str(stack), "--model-repo", str(repo)]) == 0


def test_plan_refuses_a_stream_profile_of_a_model_without_objectives(
    streaming_stack: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack, repo = streaming_stack
    other = tmp_path / "chat.stream.json"
    other.write_text(STREAM_PROFILE.read_text().replace('"model": "tokens"', '"model": "chat"'))
    args = ["plan", "--config", str(stack), "--model-repo", str(repo), "--stream-profile", str(other)]
    assert main([*args, "--profile", "step", "--peak-rps", "8", "--out", str(tmp_path / "plan")]) == 2
    assert capsys.readouterr().err == (
        "stackctl plan: --stream-profile measured model 'chat', which deployment 'general' does not serve with "
        "serving.tokenObjectives (its models with token objectives are tokens); profile one of its streaming models\n"
    )
    assert main(["plan", "--stack", "dev", "--model-repo", str(repo), "--profile", "step", "--out", "x"]) == 2
    assert capsys.readouterr().err == (
        "stackctl plan: --model-repo is read with --stream-profile only; the request plan reads model_repo/\n"
    )
