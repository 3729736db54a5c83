"""Object stores on loopback for the publishing and loader tests: a moto S3 server, rclone pointed at it.

The servers are started on 127.0.0.1 on a free port and stopped by their PID.
A missing tool fails the test with what to install; nothing is skipped.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from platform_config.paths import PROJECT_ROOT
from triton_platform.model_packaging.layout import MANIFEST
from triton_platform.model_packaging.store import parse_store_uri, rclone_settings
from triton_platform.serving.triton_serving_args import DEFAULT_LOADER_IMAGE

MOTO_SERVER = Path(sys.executable).parent / "moto_server"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "test-key",
    "AWS_SECRET_ACCESS_KEY": "test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}
"""What moto accepts; the same variables a credentials Secret gives the loader Job."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@functools.cache
def require_rclone() -> str:
    """The rclone on PATH, which must be the loader image's release (tests/conftest.py puts scripts/rclone-release's
    first): what the tests prove of publishing and loading then holds for the loader the platform runs."""
    release = DEFAULT_LOADER_IMAGE.rsplit(":", 1)[1]
    rclone = shutil.which("rclone")
    found = subprocess.run([rclone, "version"], capture_output=True, text=True, check=False) if rclone else None
    first = found.stdout.splitlines()[0] if found is not None and found.stdout else ""
    if first != f"rclone v{release}":
        pytest.fail(
            f"the rclone on PATH ({rclone or 'none'}: {first or 'no version'}) is not rclone v{release}, the loader "
            f"image's ({DEFAULT_LOADER_IMAGE}): scripts/rclone-release builds it (`make tools` runs it)"
        )
    return str(rclone)


def clean_environment(extra: dict[str, str]) -> dict[str, str]:
    """PATH and HOME only, plus `extra`: no ambient AWS_*, RCLONE_* or CA bundle reaches rclone."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"), **extra}


@dataclass(frozen=True)
class LocalS3:
    endpoint: str

    def uri(self, bucket: str, prefix: str) -> str:
        """modelRepository.uri / pvc.origin for this server, in Triton's private-endpoint form."""
        return f"s3://{self.endpoint}/{bucket}/{prefix}"

    def env(self) -> dict[str, str]:
        return clean_environment(CREDENTIALS)

    def rclone(self, *args: str) -> subprocess.CompletedProcess[str]:
        settings = rclone_settings(parse_store_uri(self.uri("any", "where"), "s3"))
        return subprocess.run(
            [require_rclone(), *args], env={**self.env(), **settings}, capture_output=True, text=True, check=False
        )

    def make_bucket(self, bucket: str) -> None:
        made = self.rclone("mkdir", f":s3:{bucket}", "--s3-no-check-bucket=false")  # only the test makes buckets
        assert made.returncode == 0, made.stderr

    def download(self, path: str, target: Path) -> None:
        copied = self.rclone("copy", f":s3:{path}", str(target))
        assert copied.returncode == 0, copied.stderr

    def listing(self, path: str) -> list[str]:
        listed = self.rclone("lsf", "-R", "--files-only", f":s3:{path}")
        if listed.returncode == 3:  # rclone: directory not found
            return []
        assert listed.returncode == 0, listed.stderr
        return sorted(listed.stdout.split())


@contextmanager
def serving(name: str, command: list[str], ready_url: str) -> Iterator[None]:
    """Run a server on loopback until `ready_url` answers; stop it by PID however the test ends."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(ready_url, timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"{name} did not answer {ready_url} (exit {process.poll()})")
                time.sleep(0.2)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def local_s3() -> Iterator[LocalS3]:
    """moto's S3 server on loopback."""
    require_rclone()
    if not MOTO_SERVER.is_file():
        pytest.fail(
            f"missing: {MOTO_SERVER}. Install it with `.venv/bin/pip install -r requirements-dev.txt` (moto[server])"
        )
    port = free_port()
    with serving("moto_server", [str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port)], f"http://127.0.0.1:{port}/"):
        yield LocalS3(f"http://127.0.0.1:{port}")


def tree(root: Path) -> dict[str, bytes]:
    """Every file below root (symlinks followed), by relative path."""
    out = {}
    for folder, _dirs, names in os.walk(root, followlinks=True):
        for name in names:
            path = Path(folder) / name
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


def expected_digest(repository: Path) -> str:
    """The documented digest, computed here on its own: sha256 over each file's path, NUL, and content sha256, by path."""
    sha = hashlib.sha256()
    for path, data in sorted((p, d) for p, d in tree(repository).items() if p != MANIFEST):
        sha.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
    return sha.hexdigest()


FAKE_GCS_SERVER = PROJECT_ROOT / ".tools" / "bin" / "fake-gcs-server"


@dataclass(frozen=True)
class LocalGcs:
    endpoint: str

    def env(self) -> dict[str, str]:
        """rclone's GCS backend against the fake: its endpoint, no credentials (the fake checks none)."""
        return clean_environment(
            {"RCLONE_GCS_ENDPOINT": f"{self.endpoint}/storage/v1/", "RCLONE_GCS_ANONYMOUS": "true"}
        )


@contextmanager
def local_gcs(data: Path, bucket: str) -> Iterator[LocalGcs]:
    """fake-gcs-server on loopback, in memory, starting with an empty `bucket` (a folder under `data`)."""
    require_rclone()
    if not FAKE_GCS_SERVER.is_file():
        pytest.fail(f"missing: {FAKE_GCS_SERVER}. Build it with scripts/fake-gcs-server (Go module proxy)")
    (data / bucket).mkdir(parents=True)
    port = free_port()
    command = [str(FAKE_GCS_SERVER), "-backend", "memory", "-scheme", "http", "-host", "127.0.0.1"]
    with serving(
        "fake-gcs-server", [*command, "-port", str(port), "-data", str(data)], f"http://127.0.0.1:{port}/storage/v1/b"
    ):
        yield LocalGcs(f"http://127.0.0.1:{port}")


def write_published(stack: str) -> Path:
    """`stackctl model-repo --stack` output (every served model) in a fresh folder."""
    from stackctl.main import main  # noqa: PLC0415 - the CLI imports the program; only tests that publish need it

    out = Path(tempfile.mkdtemp(prefix=f"published-{stack}-")) / "repository"
    assert main(["model-repo", "--stack", stack, "--out", str(out)]) == 0
    return out
