"""Publishing to a real S3 API (moto on loopback) with the real rclone, and the PVC loader's real script.

`stackctl publish-models` uploads `<uri>/<digest>/` once; the loader Job's script
(triton_platform.serving.model_loader_job.loader_script, run here by /bin/sh against a folder
standing for the claim) copies it into `repositories/<digest>`; the init
container's script assembles it; a real tritonserver loads the result.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from model_publishing.publish import write_model_repository
from platform_config.loader import StackConfig, load_stack_file
from platform_config.model_settings import render_stack
from platform_config.paths import DEFAULT_MODEL_REPO, stack_file
from stackctl.main import main
from tests.support.local_triton.server import TritonServer, free_ports
from tests.support.model_store import CREDENTIALS, LocalS3, expected_digest, local_gcs, local_s3, require_rclone, tree
from triton_platform.model_packaging.layout import MANIFEST, assemble_script
from triton_platform.model_packaging.source import read_repository
from triton_platform.model_packaging.store import parse_store_uri, rclone_settings
from triton_platform.serving.model_loader_job import loader_script
from triton_platform.serving.triton_server_args import tritonserver_args

pytestmark = pytest.mark.real_tools  # moto_server, fake-gcs-server, rclone and tritonserver

BUCKET = "models"


@pytest.fixture(scope="module")
def s3() -> Iterator[LocalS3]:
    with local_s3() as server:
        server.make_bucket(BUCKET)
        yield server


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """The publisher's environment: moto's credentials, and nothing ambient that redirects rclone."""
    for name in [n for n in os.environ if n.startswith(("AWS_", "RCLONE_"))]:
        monkeypatch.delenv(name)
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)


def stack_copy(tmp_path: Path, stack: str, edit: Any) -> Path:
    """stacks/Pulumi.<stack>.yaml with `edit` applied to its config, in a folder of its own."""
    document = yaml.safe_load(stack_file(stack).read_text())
    edit(document["config"])
    path = tmp_path / stack / f"Pulumi.{stack}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    return path


def staging_on(s3: LocalS3, tmp_path: Path, prefix: str, delay: int | None = None) -> Path:
    def edit(config: dict[str, Any]) -> None:
        serving = config["triton-platform:serving"]
        serving["modelRepository"]["uri"] = s3.uri(BUCKET, prefix)
        if delay is not None:
            serving["modelDefaults"]["dynamicBatching"]["maxQueueDelayMicroseconds"] = delay

    return stack_copy(tmp_path, "staging", edit)


def published_locally(path: Path, out: Path) -> tuple[StackConfig, Path]:
    """`stackctl model-repo` output of a stack file: what the bucket must hold."""
    assert main(["model-repo", "--config", str(path), "--out", str(out)]) == 0
    return load_stack_file(path), out


def test_publishing_uploads_the_repository_under_its_digest_once(
    s3: LocalS3, tmp_path: Path, aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    path = staging_on(s3, tmp_path, "staging")
    _, local = published_locally(path, tmp_path / "local")
    digest = expected_digest(local)
    capsys.readouterr()

    assert main(["publish-models", "--config", str(path), "--dry-run"]) == 0
    assert capsys.readouterr().out == (
        f"{path}: dry run: would publish 4 models to {s3.uri(BUCKET, 'staging')}/{digest}\n"
    )
    assert s3.listing(f"{BUCKET}/staging") == []

    assert main(["publish-models", "--config", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: published 4 models to {s3.uri(BUCKET, 'staging')}/{digest}\n"
    assert s3.listing(f"{BUCKET}/staging") == sorted(f"{digest}/{p}" for p in tree(local))
    s3.download(f"{BUCKET}/staging/{digest}", tmp_path / "downloaded")
    assert tree(tmp_path / "downloaded") == tree(local)

    assert main(["publish-models", "--config", str(path)]) == 0
    assert capsys.readouterr().out == (
        f"{path}: {s3.uri(BUCKET, 'staging')}/{digest} is already published (digest {digest}); nothing uploaded\n"
    )


def test_a_changed_model_config_publishes_a_new_digest_beside_the_old(
    s3: LocalS3, tmp_path: Path, aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    before = staging_on(s3, tmp_path / "before", "changes")
    after = staging_on(s3, tmp_path / "after", "changes", delay=3000)
    digests = [expected_digest(published_locally(p, p.parent / "local")[1]) for p in (before, after)]
    assert digests[0] != digests[1]
    for path in (before, after):
        assert main(["publish-models", "--config", str(path)]) == 0
    assert sorted({p.split("/")[0] for p in s3.listing(f"{BUCKET}/changes")}) == sorted(digests)
    capsys.readouterr()


def test_a_half_upload_is_never_taken_for_a_published_version(
    s3: LocalS3, tmp_path: Path, aws: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """rclone dies before the manifest goes up: the rerun uploads again, the manifest last."""
    path = staging_on(s3, tmp_path, "half")
    digest = expected_digest(published_locally(path, tmp_path / "local")[1])
    failing = tmp_path / "bin"
    failing.mkdir()
    real = shutil.which("rclone")
    (failing / "rclone").write_text(
        f'#!/bin/sh\n[ "$1" = copyto ] && {{ echo killed >&2; exit 1; }}\nexec {real} "$@"\n'
    )
    (failing / "rclone").chmod(0o755)
    monkeypatch.setenv("PATH", f"{failing}:{os.environ['PATH']}")
    # rclone failing is what the command needs from the machine: exit 2, as an input (docs/stackctl.md).
    assert main(["publish-models", "--config", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"stackctl publish-models: rclone copyto to :s3:{BUCKET}/half/{digest} failed: killed\n"
    )
    assert MANIFEST not in {p.split("/", 1)[1] for p in s3.listing(f"{BUCKET}/half")}

    monkeypatch.setenv("PATH", os.environ["PATH"].removeprefix(f"{failing}:"))
    assert main(["publish-models", "--config", str(path)]) == 0
    assert "published 4 models" in capsys.readouterr().out
    assert f"{digest}/{MANIFEST}" in s3.listing(f"{BUCKET}/half")


# --- the PVC loader ------------------------------------------------------------------------


def production_on(s3: LocalS3, tmp_path: Path) -> Path:
    def edit(config: dict[str, Any]) -> None:
        config["triton-platform:serving"]["modelRepository"]["pvc"]["origin"] = s3.uri(BUCKET, "production")

    return stack_copy(tmp_path, "production", edit)


def run_loader(
    base_env: dict[str, str], origin: str, digest: str, claim: Path, stack: str = "production"
) -> subprocess.CompletedProcess[str]:
    """The Job's script with the Job's environment (rclone settings of the origin, the Secret's keys)."""
    store = parse_store_uri(origin, "gcs" if origin.startswith("gs://") else "s3")
    claim.mkdir(parents=True, exist_ok=True)
    env = {
        **base_env,
        **rclone_settings(store),
        "SOURCE": store.rclone_path(digest),
        "DIGEST": digest,
        "CLAIM_DIR": str(claim),
        "STACK": stack,
        "HOME": "/nonexistent",  # the Job's root filesystem is read-only: rclone must not need a home
    }
    return subprocess.run(["/bin/sh", "-c", loader_script()], env=env, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def production(s3: LocalS3, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """Production's repository published to the local S3: (stack file, digest, local copy)."""
    tmp = tmp_path_factory.mktemp("production")
    path = production_on(s3, tmp)
    local = published_locally(path, tmp / "local")[1]
    env = {**s3.env(), **rclone_settings(parse_store_uri(s3.uri(BUCKET, "production"), "s3"))}
    digest = expected_digest(local)
    for step in (
        ["copy", str(local), f":s3:{BUCKET}/production/{digest}", "--exclude", f"/{MANIFEST}"],
        ["copyto", str(local / MANIFEST), f":s3:{BUCKET}/production/{digest}/{MANIFEST}"],
    ):
        subprocess.run(["rclone", *step], env=env, check=True, capture_output=True)
    return path, digest, local


def test_the_loader_fills_the_claim_once(s3: LocalS3, production: tuple[Path, str, Path], tmp_path: Path) -> None:
    _, digest, local = production
    claim = tmp_path / "claim"
    first = run_loader(s3.env(), s3.uri(BUCKET, "production"), digest, claim)
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"loaded repositories/{digest} from :s3:{BUCKET}/production/{digest}\n"
    assert sorted(p.name for p in (claim / "repositories").iterdir()) == [digest]
    assert tree(claim / "repositories" / digest) == tree(local)

    second = run_loader(s3.env(), s3.uri(BUCKET, "production"), digest, claim)
    assert (second.returncode, second.stdout) == (0, f"repositories/{digest} is already loaded\n")


def test_a_crash_mid_copy_leaves_only_the_partial_folder(
    s3: LocalS3, production: tuple[Path, str, Path], tmp_path: Path
) -> None:
    _, digest, local = production
    claim = tmp_path / "claim"
    # rclone stops hard after 1 KiB (--max-transfer, --cutoff-mode HARD): the copy dies half done.
    crashed = run_loader({**s3.env(), "RCLONE_MAX_TRANSFER": "1K"}, s3.uri(BUCKET, "production"), digest, claim)
    assert crashed.returncode != 0
    assert sorted(p.name for p in (claim / "repositories").iterdir()) == [f"{digest}.partial"]
    assert tree(claim / "repositories" / f"{digest}.partial") != tree(local)

    resumed = run_loader(s3.env(), s3.uri(BUCKET, "production"), digest, claim)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(p.name for p in (claim / "repositories").iterdir()) == [digest]
    assert tree(claim / "repositories" / digest) == tree(local)


def test_the_loader_refuses_an_unpublished_digest(
    s3: LocalS3, production: tuple[Path, str, Path], tmp_path: Path
) -> None:
    missing = "0" * 64
    run = run_loader(s3.env(), s3.uri(BUCKET, "production"), missing, tmp_path)
    assert run.returncode == 1
    assert run.stderr.endswith(
        f":s3:{BUCKET}/production/{missing} is not a complete published repository (no {MANIFEST}): "
        "run stackctl publish-models --stack production\n"
    )
    assert not (tmp_path / "repositories").exists()


def test_triton_serves_what_the_loader_put_in_the_claim(
    s3: LocalS3, production: tuple[Path, str, Path], tmp_path: Path
) -> None:
    """The claim's `repositories/<digest>` (the pods' subPath) through the init container's script into Triton."""
    path, digest, _ = production
    claim = tmp_path / "claim"
    assert run_loader(s3.env(), s3.uri(BUCKET, "production"), digest, claim).returncode == 0
    stack = load_stack_file(path)
    rendered = render_stack(
        "production", stack.config.serving, stack.config.models, read_repository(DEFAULT_MODEL_REPO)
    )
    for name, deployment in sorted(stack.config.serving.deployments.items()):
        configs, assembled = tmp_path / f"{name}-rendered", tmp_path / f"{name}-models"
        configs.mkdir()
        for model in deployment.models:
            (configs / f"{model}.pbtxt").write_text(rendered.models[model].text)  # the ConfigMap's keys
        env = {
            "STACK": "production",
            "MODELS_DIR": str(assembled),
            "STORE_DIR": str(claim / "repositories" / digest),
            "RENDERED_DIR": str(configs),
            "PATH": "/usr/bin:/bin",
        }
        assembled.mkdir()
        subprocess.run(["/bin/sh", "-c", assemble_script(deployment.models)], env=env, check=True)
        expected = tmp_path / f"{name}-expected"
        write_model_repository(rendered, expected, deployment.models)
        assert {p: d for p, d in tree(assembled).items()} == {p: d for p, d in tree(expected).items() if p != MANIFEST}
        ports = free_ports()
        args = tritonserver_args(
            "production",
            deployment.models,
            source=stack.config.serving.model_repository.source,
            exit_timeout_seconds=stack.config.serving.drain.exit_timeout_seconds,
            model_repository=str(assembled),
            ports=ports,
        )
        with TritonServer(args, ports) as server:
            for model in deployment.models:
                url = f"http://{server.http_url}/v2/models/{model}/ready"
                with urllib.request.urlopen(url, timeout=10) as response:
                    assert response.status == 200, (name, model)


# --- GCS: rclone's gcs backend against fake-gcs-server ---------------------------------------


def test_gcs_publishing_and_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Publish to gs:// once, then the loader fills a claim from it. (Triton's own GCS reads are not run here.)"""
    with local_gcs(tmp_path / "gcs", BUCKET) as gcs:
        for name in [n for n in os.environ if n.startswith(("AWS_", "RCLONE_", "GOOGLE_"))]:
            monkeypatch.delenv(name)
        for name, value in gcs.env().items():
            monkeypatch.setenv(name, value)

        def edit(config: dict[str, Any]) -> None:
            config["triton-platform:serving"]["modelRepository"] = {"source": "gcs", "uri": f"gs://{BUCKET}/staging"}

        path = stack_copy(tmp_path, "staging", edit)
        digest = expected_digest(published_locally(path, tmp_path / "local")[1])
        capsys.readouterr()
        assert main(["publish-models", "--config", str(path)]) == 0
        assert capsys.readouterr().out == f"{path}: published 4 models to gs://{BUCKET}/staging/{digest}\n"
        assert main(["publish-models", "--config", str(path)]) == 0
        assert "is already published" in capsys.readouterr().out

        claim = tmp_path / "claim"
        run = run_loader(gcs.env(), f"gs://{BUCKET}/staging", digest, claim, "staging")
        assert run.returncode == 0, run.stderr
        assert tree(claim / "repositories" / digest) == tree(tmp_path / "local")


def test_every_rclone_setting_is_a_flag_of_the_loaders_rclone() -> None:
    """Each RCLONE_* variable the platform sets is an `rclone help flags` flag of the loader image's release (rclone
    reads `RCLONE_<FLAG>` for `--<flag>`); an unknown one would be ignored without a word."""
    listed = subprocess.run([require_rclone(), "help", "flags"], capture_output=True, text=True, check=True).stdout
    flags = {word.rstrip(",") for line in listed.splitlines() for word in line.split() if word.startswith("--")}
    stores = [
        parse_store_uri("s3://bucket/models", "s3"),
        parse_store_uri("s3://http://minio:9000/bucket/models", "s3"),
    ]
    stores.append(parse_store_uri("gs://bucket/models", "gcs"))
    settings = {key for store in stores for key in rclone_settings(store)}
    assert {"RCLONE_CONFIG", "RCLONE_S3_ENDPOINT", "RCLONE_GCS_BUCKET_POLICY_ONLY"} <= settings
    unknown = {key for key in settings if "--" + key.removeprefix("RCLONE_").lower().replace("_", "-") not in flags}
    assert unknown == set(), unknown
