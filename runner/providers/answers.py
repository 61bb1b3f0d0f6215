"""Reading a provider's answers as hostile input, the same way in every adapter.

A provider (or whatever answers in its place) may send a listing whose next-page token never
ends, a file or a command output far larger than anything a benchmark writes, a JSON answer
without the key we need, with the key of the wrong type, or an HTML error page. Each of these is
the provider's failure, named: a `ProviderError` (which the lifecycle records as a provider
failure, runner/lifecycle.py `adapter_failure`) whose message says the provider, the call and
what was wrong (the key, the cap, the page count), never a traceback, a hang or unbounded memory.

This module knows no transport: HTTP adapters feed it bytes (runner/providers/http.py streams a
body through `Capped`), SDK adapters feed it the SDK's objects (`Reader.convert` reads their
attributes). Typed answers are msgspec structs declared next to the adapter that reads them.

The bounds, each an adapter setting (docs/providers.md, "Hostile answers"):
- `max_pages` (default 1,000): pages of one listing; a token seen before (a cycle) fails at once;
- `max_download_mib` (default 256): one downloaded file;
- `max_output_mib` (default 64): one command's stdout, and its stderr, each;
- a control-plane JSON answer is read up to ANSWER_BYTES (16 MiB), not configurable.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import msgspec

from runner.providers.base import ProviderError
from runner.providers.credentials import redact

MIB = 1024 * 1024
MAX_PAGES = 1000
MAX_DOWNLOAD_MIB = 256
MAX_OUTPUT_MIB = 64
ANSWER_BYTES = 16 * MIB
PREVIEW_CHARS = 80  # of an answer that is not what we expected, quoted in the message

BAD_ANSWER = "bad_answer"
TOO_LARGE = "too_large"
ENDLESS = "endless_listing"


@dataclass(frozen=True)
class AnswerLimits:
    pages: int = MAX_PAGES
    download_bytes: int = MAX_DOWNLOAD_MIB * MIB
    output_bytes: int = MAX_OUTPUT_MIB * MIB
    answer_bytes: int = ANSWER_BYTES

    @classmethod
    def from_settings(cls, settings: Mapping | None) -> AnswerLimits:
        """The limits an adapter's settings ask for; a setting that is not a positive number
        raises ValueError naming it (the operator's configuration, not the provider's)."""
        settings = settings or {}
        return cls(
            pages=_positive(settings, "max_pages", MAX_PAGES),
            download_bytes=_positive(settings, "max_download_mib", MAX_DOWNLOAD_MIB) * MIB,
            output_bytes=_positive(settings, "max_output_mib", MAX_OUTPUT_MIB) * MIB,
        )

    def exec_answer_bytes(self) -> int:
        """An answer that carries a command's stdout and stderr inside a JSON document: room
        for both, for JSON's escapes and for a combined copy some providers add."""
        return 4 * self.output_bytes + self.answer_bytes


def _positive(settings: Mapping, key: str, default: int) -> int:
    value = settings.get(key, default)
    whole = isinstance(value, int | str) and not isinstance(value, bool)
    if not whole or not str(value).strip().isdigit() or int(value) <= 0:
        raise ValueError(f"provider setting {key} must be a positive whole number, not {value!r}")
    return int(value)


@dataclass(frozen=True)
class Reader:
    """Reads the answers of one call: `provider` and `operation` name it in every failure, and
    `secrets` are removed from any part of an answer quoted there."""

    provider: str
    operation: str
    secrets: tuple[str | None, ...] = ()

    def fail(self, what: str, code: str = BAD_ANSWER) -> ProviderError:
        text = redact(f"{self.provider} {self.operation}: {what}", *self.secrets)
        return ProviderError(text, operation=self.operation, code=code)

    def json(self, body: bytes, kind: Any = Any, what: str = "the answer") -> Any:
        """`body` decoded as JSON of `kind` (Any, dict, a msgspec struct...)."""
        try:
            return msgspec.json.decode(body, type=kind)
        except msgspec.ValidationError as exc:
            raise self.fail(f"{what} does not fit: {exc}") from None
        except msgspec.DecodeError:
            raise self.fail(f"{what} is not JSON: {self.preview(body)}") from None

    def convert(self, value: Any, kind: Any, what: str = "the answer") -> Any:
        """An already decoded answer (a dict, or an SDK's object read by attribute) as `kind`."""
        try:
            return msgspec.convert(value, kind, from_attributes=True)
        except msgspec.ValidationError as exc:
            raise self.fail(f"{what} does not fit: {exc}") from None

    def key(self, answer: Any, key: str, kind: type = str, what: str = "the answer") -> Any:
        """answer[key], present and of `kind` (a non-empty string when `kind` is str)."""
        if not isinstance(answer, Mapping):
            raise self.fail(f"{what} is a {type(answer).__name__}, not an object (wanted `{key}`)")
        if key not in answer:
            raise self.fail(f"{what} has no `{key}`")
        value = answer[key]
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise self.fail(f"`{key}` in {what} is a {type(value).__name__}, not {kind.__name__}")
        if kind is str and not value:
            raise self.fail(f"`{key}` in {what} is empty")
        return value

    def preview(self, body: bytes | str) -> str:
        """The start of an unexpected answer, secrets removed before it is cut."""
        text = body.decode(errors="replace") if isinstance(body, bytes) else body
        text = redact(text, *self.secrets)
        cut = text[:PREVIEW_CHARS]
        return f"{len(body)} bytes starting {cut!r}" if text else "an empty body"


class Capped:
    """Bytes gathered up to a cap: `add` fails with `too_large` the moment the cap would be
    passed, so a hostile stream costs at most `cap` bytes of memory."""

    def __init__(self, reader: Reader, cap: int, what: str, setting: str = ""):
        self.reader, self.cap, self.what, self.setting = reader, cap, what, setting
        self._chunks: list[bytes] = []  # joined once at the end: appending copies nothing
        self.size = 0

    @property
    def data(self) -> bytes:
        return b"".join(self._chunks)

    def too_large(self, size: int | None = None) -> ProviderError:
        told = f" (it announced {size} bytes)" if size is not None else ""
        where = f"; setting {self.setting}" if self.setting else ""
        return self.reader.fail(
            f"{self.what} is larger than the cap of {self.cap} bytes{told}{where}", TOO_LARGE
        )

    def announced(self, size: int | None) -> None:
        """Fail early when the other side announces more than the cap (Content-Length): a hint
        only, the count of what arrives is what holds."""
        if size is not None and size > self.cap:
            raise self.too_large(size)

    def add(self, chunk: bytes) -> None:
        self.count(len(chunk))
        self._chunks.append(chunk)

    def count(self, size: int) -> None:
        """Count `size` bytes that something else holds (an SDK's decoded answer)."""
        if self.size + size > self.cap:
            raise self.too_large()
        self.size += size

    def read(self, chunks: Iterable[bytes]) -> bytes:
        for chunk in chunks:
            self.add(chunk)
        return self.data


class Streamed(Capped):
    """A command's stdout handed chunk by chunk to `sink` and kept nowhere, so an output larger
    than any cap (the output-stream benchmark's 1 GiB) passes through; the sink counts it and
    raises a ProviderError past what it expects, which ends the command as the cap would."""

    def __init__(self, reader: Reader, what: str, sink: Callable[[bytes], None]):
        super().__init__(reader, 0, what)
        self.sink = sink

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        self.sink(chunk)


_stdout_sink: ContextVar[Callable[[bytes], None] | None] = ContextVar("stdout_sink", default=None)


@contextlib.contextmanager
def stdout_streamed_to(sink: Callable[[bytes], None]) -> Iterator[None]:
    """Within this block, a command run in this thread by an adapter that declares
    `output_stream` hands its stdout to `sink` as it arrives instead of gathering it."""
    token = _stdout_sink.set(sink)
    try:
        yield
    finally:
        _stdout_sink.reset(token)


def command_stdout(reader: Reader, cap: int) -> Capped:
    """Where an adapter gathers a command's stdout: in memory up to `cap` (max_output_mib), or
    inside `stdout_streamed_to`, its sink. Called in the thread that called exec."""
    sink = _stdout_sink.get()
    if sink is not None:
        return Streamed(reader, "the command's stdout", sink)
    return Capped(reader, cap, "the command's stdout", "max_output_mib")


class Listing:
    """The guard of one paginated listing: at most `max_pages` pages, and a next-page token (or
    an item) seen before means the provider is going round in circles."""

    def __init__(self, reader: Reader, max_pages: int, items_per_page: int = 100):
        self.reader, self.max_pages = reader, max_pages
        self.max_items = max_pages * items_per_page
        self.pages = 0
        self._tokens: set[Hashable] = set()
        self._items: set[Hashable] = set()

    def more(self, token: Hashable | None) -> bool:
        """After each page, with the token of the next one (None or "" when there is none):
        whether to fetch it."""
        self.pages += 1
        if not token:
            return False
        if token in self._tokens:
            raise self.reader.fail(
                f"the listing repeats a next-page token after {self.pages} pages", ENDLESS
            )
        if self.pages >= self.max_pages:
            raise self.reader.fail(
                f"the listing did not end within {self.max_pages} pages (setting max_pages)",
                ENDLESS,
            )
        self._tokens.add(token)
        return True

    def item(self, key: Hashable) -> None:
        """For a listing an SDK pages by itself: each item's id, which must not come twice, and
        at most `max_pages` pages' worth of them."""
        if key in self._items:
            raise self.reader.fail(f"the listing names {key!r} twice", ENDLESS)
        if len(self._items) >= self.max_items:
            raise self.reader.fail(
                f"the listing did not end within {self.max_pages} pages "
                f"({self.max_items} items; setting max_pages)",
                ENDLESS,
            )
        self._items.add(key)
