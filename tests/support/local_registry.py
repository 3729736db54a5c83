"""go-containerregistry's registry on loopback, and a stack pinned from it as the deploy workflow pins one.

The deploy workflow runs `stackctl pin-images` before its preview, whose policy pack refuses a production image
by tag (docs/deploying.md, "Images by digest"). Tests that preview or deploy production do the same, against this
registry: each image the stack runs by tag is pushed there as a small image of its own, and every registry the
stack names is mirrored to it (`--mirror`), so the digests written are crane's answers, never written by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from offline import image_digests as pins
from offline.chart_template import HELM_ENV, PROJECT_HELM
from platform_config.paths import PROJECT_ROOT

CRANE = PROJECT_ROOT / ".tools" / "bin" / f"crane-{pins.CRANE_VERSION}"
REGISTRY = PROJECT_ROOT / ".tools" / "bin" / f"registry-{pins.CRANE_VERSION}"
SERVING = re.compile(r"serving on port (\d+)")


@contextmanager
def loopback_registry() -> Iterator[str]:
    """`registry -port 0`: an in-memory OCI registry on localhost at a free port (cmd/registry/main.go logs it),
    stopped by its PID. Yields its `host:port`."""
    server = subprocess.Popen([REGISTRY, "-port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        found = SERVING.search(line)
        assert found, f"{REGISTRY} printed {line!r}, not its port"
        yield f"127.0.0.1:{found[1]}"
    finally:
        os.kill(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def push(registry: str, path: str, folder: Path) -> str:
    """A one-layer image of its own (the layer names it) pushed as `<registry>/<path>`; crane's digest for it."""
    layer = folder / f"{hashlib.sha256(path.encode()).hexdigest()[:16]}.tar"
    content = folder / "content"
    shutil.rmtree(content, ignore_errors=True)
    content.mkdir()
    (content / "image.txt").write_text(path)
    subprocess.run(["tar", "-cf", layer, "-C", content, "image.txt"], check=True)
    ref = f"{registry}/{path}"
    subprocess.run([CRANE, "append", "-f", layer, "-t", ref], check=True, capture_output=True)
    return subprocess.run([CRANE, "digest", ref], check=True, capture_output=True, text=True).stdout.strip()


def tool_environment(environment: dict[str, str]) -> dict[str, str]:
    """`environment` with the project's crane and Helm named, as the deploy workflow names them."""
    return {**os.environ, **environment, pins.CRANE_ENV: str(CRANE), HELM_ENV: str(PROJECT_HELM)}


def serve_unpinned(stack_file: Path, registry: str, folder: Path, environment: dict[str, str]) -> list[str]:
    """Each image `stack_file`'s stack runs by tag pushed to `registry` as a small image of its own; the
    `--mirror` options that send each of their registries there."""
    command = [str(PROJECT_ROOT / ".venv" / "bin" / "stackctl"), "pin-images", "--config", str(stack_file)]
    env = tool_environment(environment)
    listed = subprocess.run([*command, "--check", "--json"], capture_output=True, text=True, env=env, check=False)
    unpinned = [row["image"] for row in json.loads(listed.stdout)["images"] if row["state"] == "unpinned"]
    folder.mkdir(parents=True, exist_ok=True)
    paths = {image: pins.registry_and_path(image) for image in unpinned}
    for _, path in paths.values():
        push(registry, path, folder)
    return [f"--mirror={name}={registry}" for name in sorted({name for name, _ in paths.values()})]


def pin_images(stack_file: Path, folder: Path, environment: dict[str, str]) -> None:
    """`stackctl pin-images` on `stack_file`, as the deploy workflow's preview job runs it, with every image the
    stack runs by tag served by a loopback registry. `environment` gives the chart mirror."""
    command = [str(PROJECT_ROOT / ".venv" / "bin" / "stackctl"), "pin-images", "--config", str(stack_file)]
    with loopback_registry() as registry:
        mirrors = serve_unpinned(stack_file, registry, folder, environment)
        env = tool_environment(environment)
        pinned = subprocess.run([*command, *mirrors], capture_output=True, text=True, env=env, check=False)
    assert pinned.returncode == 0, pinned.stderr
