"""Every answer a command reads from a server (Triton's HTTP API and metrics for `stackctl profile --url`): read
within a deadline and a size bound, and read as data of a known shape, so a server that answers oddly is named with
its URL and the field, never a traceback.

- A whole answer within DEADLINE_SECONDS: the socket's timeout bounds each read, so a server trickling its body
  byte by byte would otherwise hold the command for ever.
- At most MAX_ANSWER_BYTES: a larger answer is refused, not read whole into memory.
- A stream (`generate_stream`'s server-sent events, `stream_events`) event by event as it comes, each line at most
  MAX_EVENT_BYTES, the whole within STREAM_DEADLINE_SECONDS.
- JSON through `Document`: each field read with its type (a whole number is not a bool, a word is not a number)
  and, where asked, its bounds; a missing or odd field is a `ServerAnswerError` naming the URL and the field's path.
- The server's own text shown only through `shown` (the project's `excerpt`: quoted, control characters escaped,
  cut), so an escape sequence never reaches the terminal and a `::error::` line never becomes a CI command.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from triton_platform.args.excerpts import excerpt

DEADLINE_SECONDS = 30.0
"""How long one whole answer may take: Triton answers its API and metrics in milliseconds."""
READ_TIMEOUT_SECONDS = 10.0
"""How long one read may wait for a byte."""
MAX_ANSWER_BYTES = 16 * 1024 * 1024
"""The largest answer read: Triton's statistics and metrics of a large repository are well below."""
CHUNK = 64 * 1024
STREAM_DEADLINE_SECONDS = 3600.0
"""How long one stream may take whole: the hour the Ingresses leave a stream (docs/streaming.md)."""
MAX_EVENT_BYTES = 1024 * 1024
"""The longest line of a stream read: one token's response is a few hundred bytes."""

T = TypeVar("T")
MISSING: Any = object()
KIND_NAMES = {str: "a string", int: "a whole number", float: "a number", dict: "an object", list: "a list"}


class ServerAnswerError(ValueError):
    """A server's answer the command cannot use. A ValueError: stackctl prints it without a traceback."""


def shown(text: object) -> str:
    """A server's own text as a command prints it: quoted, control characters escaped, cut."""
    return excerpt(text)


Opener = Callable[..., Any]


@contextmanager
def _refusals(url: str, what: str) -> Iterator[None]:
    """A server's refusal (an HTTP error status) or absence as a ServerAnswerError naming `url` and `what`."""
    try:
        yield
    except urllib.error.HTTPError as err:
        body_text = err.read(1024).decode(errors="replace")
        raise ServerAnswerError(f"{url}: HTTP {err.code} reading {what} ({shown(body_text)})") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", None) or err
        raise ServerAnswerError(f"{url}: cannot read {what} ({reason}); is Triton running there?") from None


def read(
    url: str,
    what: str,
    *,
    deadline: float = DEADLINE_SECONDS,
    limit: int = MAX_ANSWER_BYTES,
    opener: Opener = urllib.request.urlopen,
) -> bytes:
    """The body of GET `url` (`what`, for messages), whole within `deadline` seconds and at most `limit` bytes."""
    started = time.monotonic()
    with _refusals(url, what), opener(url, timeout=READ_TIMEOUT_SECONDS) as response:
        body = bytearray()
        while True:
            chunk = response.read1(CHUNK) if hasattr(response, "read1") else response.read(CHUNK)
            if not chunk:
                return bytes(body)
            body += chunk
            if len(body) > limit:
                raise ServerAnswerError(
                    f"{url}: {what} is larger than {limit // (1024 * 1024)} MiB; expected Triton's answer, far "
                    "smaller: is this Triton?"
                )
            if time.monotonic() - started > deadline:
                raise ServerAnswerError(
                    f"{url}: {what} did not arrive whole within {deadline:g} s; expected Triton's answer in "
                    "milliseconds"
                )


def stream_events(
    url: str,
    what: str,
    body: bytes,
    *,
    read_timeout: float = READ_TIMEOUT_SECONDS,
    deadline: float = STREAM_DEADLINE_SECONDS,
    opener: Opener = urllib.request.urlopen,
) -> Iterator[tuple[float, bytes]]:
    """POST the JSON `body` to `url` (`what`, for messages) and yield each server-sent event's payload (what follows
    `data: `) with the time its line arrived (time.monotonic), as each comes: Triton's `generate_stream`. A line over
    MAX_EVENT_BYTES, a stream longer than `deadline` seconds, or a wait for a byte beyond `read_timeout` is a
    ServerAnswerError naming the URL, as a refusal is."""
    started = time.monotonic()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    with _refusals(url, what), opener(request, timeout=read_timeout) as response:
        while line := response.readline(MAX_EVENT_BYTES + 1):
            arrived = time.monotonic()
            if len(line) > MAX_EVENT_BYTES:
                raise ServerAnswerError(
                    f"{url}: {what} sent a line longer than {MAX_EVENT_BYTES // 1024} KiB; expected server-sent "
                    "events of one response each"
                )
            if arrived - started > deadline:
                raise ServerAnswerError(f"{url}: {what} did not end within {deadline:g} s")
            if line.startswith(b"data: "):
                yield arrived, line[len(b"data: ") :].rstrip(b"\r\n")


@dataclass(frozen=True)
class Document:
    """A JSON answer and where it came from: its fields read by path, each with its type."""

    url: str
    what: str
    value: object

    @classmethod
    def parse(cls, url: str, what: str, body: bytes) -> Document:
        try:
            return cls(url, what, json.loads(body.decode("utf-8")))
        except (UnicodeDecodeError, ValueError, RecursionError) as err:
            reason = err.msg if isinstance(err, json.JSONDecodeError) else type(err).__name__
            raise ServerAnswerError(f"{url}: {what} is not JSON ({reason}); expected Triton's HTTP API") from None

    def get(
        self,
        *steps: str | int,
        kind: type[T],
        default: Any = MISSING,
        minimum: float | None = None,
        maximum: float | None = None,
    ) -> T:
        """The field at `steps` (keys and list indexes), of `kind`; `default` where it is missing (else an error)."""
        node: object = self.value
        for depth, step in enumerate(steps):
            container = dict if isinstance(step, str) else list
            if not isinstance(node, container):
                raise self._error(steps[:depth], node, KIND_NAMES[container])
            if isinstance(step, str):
                assert isinstance(node, dict)
                if step not in node:
                    if default is not MISSING:
                        return default  # type: ignore[no-any-return]
                    raise ServerAnswerError(
                        f"{self.url}: {self.what}: {self._path(steps[: depth + 1])} is missing; expected "
                        f"{KIND_NAMES.get(kind, kind.__name__)}"
                    )
                node = node[step]
            else:
                assert isinstance(node, list)
                if not -len(node) <= step < len(node):
                    raise self._error(steps[:depth], node, f"a list of more than {step} items")
                node = node[step]
        if kind is float and isinstance(node, int) and not isinstance(node, bool):
            node = float(node)
        if not isinstance(node, kind) or (isinstance(node, bool) and kind is not bool):
            raise self._error(steps, node, KIND_NAMES.get(kind, kind.__name__))
        if isinstance(node, int | float) and not (
            (minimum is None or node >= minimum) and (maximum is None or node <= maximum)
        ):
            bounds = f"from {minimum:g}" if minimum is not None else ""
            bounds += f" up to {maximum:g}" if maximum is not None else ""
            raise self._error(steps, node, f"{KIND_NAMES.get(kind, kind.__name__)} {bounds.strip()}")
        return node

    def at(self, *steps: str | int) -> Document:
        """The object at `steps`, as a Document of its own fields (its path kept in messages)."""
        return Document(self.url, f"{self.what}: {self._path(steps)}", self.get(*steps, kind=dict))

    def items(self, *steps: str | int) -> list[Document]:
        """The objects of the list at `steps`, each a Document."""
        count = len(self.get(*steps, kind=list))
        return [self.at(*steps, index) for index in range(count)]

    def _path(self, steps: tuple[str | int, ...]) -> str:
        return (
            "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in steps).lstrip(".") or "the answer"
        )

    def _error(self, steps: tuple[str | int, ...], found: object, expected: str) -> ServerAnswerError:
        return ServerAnswerError(f"{self.url}: {self.what}: {self._path(steps)} is {shown(found)}; expected {expected}")
