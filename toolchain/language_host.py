"""`pulumi-language-python`: the language host that runs this project's Python program for the CLI.

Pulumi's own Python language host (Go module
github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3) is not served by
the Go module proxy this project builds from, so the toolchain installs this one in
its place. It speaks the same LanguageRuntime gRPC protocol, using the stubs the
pulumi Python SDK ships, and runs programs exactly as upstream does: through the
SDK's own `pulumi-language-python-exec` (from the sdk/v3 module), in the project's
virtualenv, with the config passed in PULUMI_CONFIG and PULUMI_CONFIG_SECRET_KEYS.

It implements what `preview`, `up`, `destroy` and policy packs use: Handshake,
GetPluginInfo, GetRequiredPlugins/Packages, Run, RunPlugin, About and Cancel.
Plugins are ambient (found on PATH), so no package list is reported. Everything
else answers UNIMPLEMENTED, which the CLI treats as an older host.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import grpc
from google.protobuf import empty_pb2, json_format
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2

from toolchain.plugin_server import serve

# The exec script's code for "the program already reported its error to the engine".
USER_ACTIONABLE_EXIT = 32


def runtime_options(info: language_pb2.ProgramInfo) -> dict[str, Any]:
    return json_format.MessageToDict(info.options) if info.HasField("options") else {}


def interpreter(info: language_pb2.ProgramInfo) -> str:
    """The Python that runs the program: the virtualenv Pulumi.yaml names, else this host's own."""
    venv = runtime_options(info).get("virtualenv")
    if not venv:
        return sys.executable
    root = Path(info.root_directory or ".")
    venv_path = Path(venv) if Path(venv).is_absolute() else root / venv
    python = venv_path / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(
            f"the virtualenv {venv_path} named in the runtime options has no bin/python; "
            "create it (`make venv`, `make tools` for policy/.venv) and retry"
        )
    return str(python)


def program_env(config: Mapping[str, str], secret_keys: list[str]) -> dict[str, str]:
    env = dict(os.environ)
    env["PULUMI_CONFIG"] = json.dumps(dict(config))
    env["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(secret_keys)
    return env


def exec_command(request: language_pb2.RunRequest, engine_address: str, exec_script: str) -> list[str]:
    info = request.info
    program = info.program_directory or request.pwd
    if info.entry_point and info.entry_point != ".":
        program = str(Path(program) / info.entry_point)
    return [
        interpreter(info),
        "-u",
        exec_script,
        "--monitor",
        request.monitor_address,
        "--engine",
        engine_address,
        "--project",
        request.project,
        "--root_directory",
        info.root_directory,
        "--stack",
        request.stack,
        "--pwd",
        request.pwd,
        "--dry_run",
        "true" if request.dryRun else "false",
        "--parallel",
        str(request.parallel),
        "--organization",
        request.organization,
        program,
        *request.args,
    ]


def run_outcome(returncode: int) -> language_pb2.RunResponse:
    """The exec script's exit code as the engine understands it."""
    if returncode == 0:
        return language_pb2.RunResponse()
    if returncode == USER_ACTIONABLE_EXIT:
        # The program logged its own error through the engine: stop without a second message.
        return language_pb2.RunResponse(bail=True)
    return language_pb2.RunResponse(error=f"Program exited with non-zero exit code: {returncode}")


class PythonLanguageHost(language_pb2_grpc.LanguageRuntimeServicer):
    def __init__(self, engine_address: str, exec_script: str, version: str) -> None:
        self.engine_address = engine_address
        self.exec_script = exec_script
        self.version = version
        self.children: set[subprocess.Popen[bytes]] = set()
        self.lock = threading.Lock()

    def _start(self, command: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(command, **kwargs)
        with self.lock:
            self.children.add(child)
        return child

    def _finish(self, child: subprocess.Popen[bytes]) -> int:
        returncode = child.wait()
        with self.lock:
            self.children.discard(child)
        return returncode

    def Handshake(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC method names
        self.engine_address = request.engine_address or self.engine_address
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(self, request: Any, context: Any) -> Any:  # noqa: N802
        return plugin_pb2.PluginInfo(version=self.version)

    def GetRequiredPlugins(self, request: Any, context: Any) -> Any:  # noqa: N802
        return language_pb2.GetRequiredPluginsResponse()

    def GetRequiredPackages(self, request: Any, context: Any) -> Any:  # noqa: N802
        return language_pb2.GetRequiredPackagesResponse()

    def Run(self, request: Any, context: Any) -> Any:  # noqa: N802
        try:
            command = exec_command(request, self.engine_address, self.exec_script)
        except FileNotFoundError as err:
            return language_pb2.RunResponse(error=str(err))
        # The program's own output goes where this host's goes: the CLI shows it.
        child = self._start(
            command, cwd=request.pwd or None, env=program_env(request.config, list(request.configSecretKeys))
        )
        return run_outcome(self._finish(child))

    def RunPlugin(self, request: Any, context: Any) -> Iterator[Any]:  # noqa: N802
        """Run a Python plugin (a policy pack) from its folder, streaming its output back as it comes.

        The first stdout line is the port the engine dials, so nothing is buffered.
        """
        env = dict(os.environ)
        env.update(item.split("=", 1) for item in request.env if "=" in item)
        try:
            python = interpreter(request.info)
        except FileNotFoundError as err:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(err))
        command = [python, "-u", request.info.program_directory or request.pwd, *request.args]
        child = self._start(command, cwd=request.pwd or None, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        chunks: queue.Queue[tuple[str, bytes] | None] = queue.Queue()

        def pump(stream: IO[bytes], field: str) -> None:
            for line in iter(stream.readline, b""):
                chunks.put((field, line))
            chunks.put(None)

        for stream, field in ((child.stdout, "stdout"), (child.stderr, "stderr")):
            assert stream is not None
            threading.Thread(target=pump, args=(stream, field), daemon=True).start()
        open_streams = 2
        while open_streams:
            chunk = chunks.get()
            if chunk is None:
                open_streams -= 1
                continue
            field, data = chunk
            yield (
                language_pb2.RunPluginResponse(stdout=data)
                if field == "stdout"
                else language_pb2.RunPluginResponse(stderr=data)
            )
        yield language_pb2.RunPluginResponse(exitcode=self._finish(child))

    def About(self, request: Any, context: Any) -> Any:  # noqa: N802
        python = interpreter(request.info)
        version = subprocess.run([python, "--version"], capture_output=True, text=True, check=False)
        return language_pb2.AboutResponse(executable=python, version=version.stdout.strip().removeprefix("Python "))

    def Cancel(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self.lock:
            for child in self.children:
                child.send_signal(signal.SIGINT)
        return empty_pb2.Empty()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="pulumi-language-python")
    parser.add_argument("--exec-script", required=True, help="the SDK's pulumi-language-python-exec")
    parser.add_argument("--version", required=True, help="the Pulumi version this host reports")
    parser.add_argument("engine", help="the engine's address (the CLI passes it last)")
    # The CLI may add flags of its own (tracing, root): none changes how a program runs here.
    args, _ = parser.parse_known_args(argv)
    host = PythonLanguageHost(engine_address=args.engine, exec_script=args.exec_script, version=args.version)
    serve(lambda server: language_pb2_grpc.add_LanguageRuntimeServicer_to_server(host, server))


if __name__ == "__main__":
    main(sys.argv[1:])
