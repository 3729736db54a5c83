"""How a Pulumi plugin process serves: gRPC on a loopback port the CLI reads from stdout."""

from __future__ import annotations

import signal
from collections.abc import Callable
from concurrent import futures
from types import FrameType

import grpc


def serve(register: Callable[[grpc.Server], None], workers: int = 8) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
    register(server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    # The CLI reads the port from the first line of stdout.
    print(port, flush=True)

    # The CLI stops its plugins with SIGINT/SIGTERM when it is done: that is a normal exit.
    def stop(signum: int, frame: FrameType | None) -> None:
        server.stop(grace=1)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    server.wait_for_termination()
