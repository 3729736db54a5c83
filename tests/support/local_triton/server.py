"""Start and stop the tritonserver from the nvidia-pytriton wheel on loopback."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

BACKENDS = Path(__file__).resolve().parent / "backends"
INSTALL_HINT = "install it with `make test` (requirements.txt pins nvidia-pytriton==0.7.0)"


class TritonUnavailableError(RuntimeError):
    """The bundled tritonserver cannot be found or does not start."""


def _pytriton_dir() -> Path:
    try:
        import pytriton  # noqa: PLC0415 - optional at import time of this module
    except ImportError as err:
        raise TritonUnavailableError(f"the nvidia-pytriton package is missing: {INSTALL_HINT}") from err
    server = Path(pytriton.__file__).parent / "tritonserver"
    if not (server / "bin" / "tritonserver").is_file():
        raise TritonUnavailableError(f"no tritonserver binary in {server}: {INSTALL_HINT}")
    return server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def site_packages_view(target: Path) -> Path:
    """A folder of links to this venv's site-packages, to be the server's working directory.

    The Python backend stub runs an isolated interpreter (PyConfig_InitIsolatedConfig):
    it ignores PYTHONPATH and sees only the system's site folders, but it puts its
    working directory first on sys.path. Running the server from this folder lets
    models import numpy and onnxruntime from the venv, with every package's
    relative layout (vendored `*.libs` folders) intact.
    """
    target.mkdir(parents=True, exist_ok=True)
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(("_", ".")) and not entry.name.endswith(".pth"):
            (target / entry.name).symlink_to(entry)
    return target


def backend_directory(target: Path) -> Path:
    """Triton's backend folder: the wheel's Python backend, its stub, and our Python-based backends."""
    server = _pytriton_dir()
    python = target / "python"
    shutil.copytree(server / "backends" / "python", python, dirs_exist_ok=True)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub = server / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.is_file():
        raise TritonUnavailableError(f"the wheel has no Python backend stub for Python {version}")
    shutil.copy2(stub, python / "triton_python_backend_stub")
    for backend in BACKENDS.iterdir():
        shutil.copytree(backend, target / backend.name, dirs_exist_ok=True)
    return target


def free_ports() -> tuple[int, int, int]:
    """HTTP, gRPC and metrics ports free on loopback right now."""
    return _free_port(), _free_port(), _free_port()


@dataclass
class TritonServer:
    """A running tritonserver on loopback; use as a context manager so it always stops.

    `args` are the server's own flags (model repository, ports, model control...);
    this adds only what a CPU test machine needs: the backend folder and loopback
    addresses. `ports` must match the port flags in `args`.
    """

    args: Sequence[str]
    ports: tuple[int, int, int]
    startup_timeout_s: float = 180.0
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    _workdir: tempfile.TemporaryDirectory[str] | None = None

    @classmethod
    def for_repository(cls, repository: Path, *extra: str) -> TritonServer:
        """A plain server on a local repository, for experiments and benchmarks."""
        http, grpc, metrics = free_ports()
        args = [f"--model-repository={repository}", f"--http-port={http}", f"--grpc-port={grpc}"]
        return cls([*args, f"--metrics-port={metrics}", *extra], (http, grpc, metrics))

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.ports[0]}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.ports[1]}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.ports[2]}/metrics"

    def command(self, backend_dir: Path) -> list[str]:
        return [
            str(_pytriton_dir() / "bin" / "tritonserver"),
            *self.args,
            f"--backend-directory={backend_dir}",
            "--http-address=127.0.0.1",
            "--grpc-address=127.0.0.1",
            "--metrics-address=127.0.0.1",
        ]

    def environment(self) -> dict[str, str]:
        libs = Path(_pytriton_dir()).parent.parent / "nvidia_pytriton.libs"
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(libs), env.get("LD_LIBRARY_PATH")]))
        return env

    def start(self) -> TritonServer:
        self._workdir = tempfile.TemporaryDirectory(prefix="tritonserver-")
        work = Path(self._workdir.name)
        backend_dir = backend_directory(work / "backends")
        self.log_path = work / "tritonserver.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command(backend_dir),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.environment(),
                cwd=site_packages_view(work / "site-packages"),
            )
        self._wait_ready()
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def errors(self) -> str:
        """The log's error lines and model status rows: what a failed start needs to show."""
        keep = [line for line in self.log().splitlines() if line.startswith("E") or "UNAVAILABLE" in line]
        return "\n".join(keep[-40:]) or self.log()[-4000:]

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        assert self.process is not None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise TritonUnavailableError(f"tritonserver exited with {self.process.returncode}:\n{self.errors()}")
            try:
                with urllib.request.urlopen(f"http://{self.http_url}/v2/health/ready", timeout=2) as response:
                    ready = response.status == 200
                # The metrics endpoint is a server of its own, which may start listening after HTTP is ready.
                if ready and "--allow-metrics=false" not in self.args:
                    with urllib.request.urlopen(self.metrics_url, timeout=2) as response:
                        ready = response.status == 200
                if ready:
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.25)
        self.stop()
        raise TritonUnavailableError(f"tritonserver not ready after {self.startup_timeout_s} s:\n{self.errors()}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._workdir:
            self._workdir.cleanup()
            self._workdir = None

    def __enter__(self) -> TritonServer:
        return self.start()

    def __exit__(self, *exc: object | TracebackType) -> None:
        self.stop()
