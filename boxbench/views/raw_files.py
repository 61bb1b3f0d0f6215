"""A published run's raw downloads, exported once per publication and then served from a file.

Exporting a large run costs seconds of database and CPU time (bench/bench_rawdata.py), and a
published run's trials never change. So each (run, form, format) is exported once per publication
of the run into settings.RAW_EXPORT_DIR, and every later request streams that file: a visitor
cannot make the server export the run again by asking again. The file's name holds the run's
last publication time and the schema version, so a republication (or a run deleted and imported
again, then published) names a new file; the run's older file of that form and format is removed
once the new one is complete. An unpublished run (its reviewers only) is exported per request, as
it still changes.

The first request streams the export to its visitor and into a temporary file at once, renamed
into place at the end. A visitor who leaves early does not stop it: the rest is written on that
request's thread, so the file is finished once and leaving cannot make the export start over.
One export of a file at a time per host (an flock on a lock file beside it): a request that comes
meanwhile gets 503 with Retry-After. HEAD never starts an export.
"""

import fcntl
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, HttpResponse, StreamingHttpResponse

from boxbench.holdbacks import last_publications
from boxbench.models import Run
from boxbench.rawdata import SCHEMA_VERSION

RETRY_AFTER_S = 30


def serve(
    request,
    run: Run,
    form: str,
    extension: str,
    export: Callable[[], Iterable],
    content_type: str,
    filename: str,
):
    """The run's `form` of the raw data as `extension`: from its file once published, else
    `export()` streamed."""
    if not run.published:
        return _streamed(export(), content_type, filename)
    path = file_path(run, form, extension)
    response = _from_file(path, content_type, filename)
    if response is not None:
        return response
    if request.method == "HEAD":
        return _streamed(export(), content_type, filename)  # the body is never started
    lock = _lock(path)
    if lock is None:
        busy = HttpResponse(
            "this download is being prepared; ask again in a moment\n",
            status=503,
            content_type="text/plain; charset=utf-8",
        )
        busy["Retry-After"] = str(RETRY_AFTER_S)
        return busy
    response = _from_file(path, content_type, filename)  # finished while we waited for the lock
    if response is not None:
        os.close(lock)
        return response
    return _streamed(_Written(export(), path, lock), content_type, filename)


def file_path(run: Run, form: str, extension: str) -> Path:
    published = last_publications([run.id])[run.id].astimezone(UTC)
    stamp = published.strftime("%Y%m%dT%H%M%S%fZ")
    return (
        Path(settings.RAW_EXPORT_DIR)
        / str(run.id)
        / f"{form}-v{SCHEMA_VERSION}-{stamp}.{extension}"
    )


def _from_file(path: Path, content_type: str, filename: str) -> FileResponse | None:
    try:
        handle = open(path, "rb")  # noqa: SIM115 - FileResponse closes it
    except FileNotFoundError:
        return None
    return FileResponse(handle, as_attachment=True, filename=filename, content_type=content_type)


def _streamed(chunks: Iterable, content_type: str, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _lock(path: Path) -> int | None:
    """An exclusive lock on writing `path`'s form and format of the run (its descriptor), or
    None while another request holds it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = path.name.split("-v", 1)[0] + path.suffix  # the same lock for every publication
    descriptor = os.open(path.parent / f".{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return descriptor


class _Written:
    """Chunks passed on as they come and written to `path` at once, renamed into place when
    complete. Closing the response (the visitor may have left) finishes the file all the same,
    and always releases the lock, even for a response that was never read."""

    def __init__(self, chunks: Iterable, path: Path, lock: int):
        self.chunks, self.path, self.lock = chunks, path, lock
        self.source: Iterator | None = None
        self.out = None
        self.partial = ""
        self.state = "waiting"  # then "writing", and "done" or "failed"

    def __iter__(self) -> Iterator:
        descriptor, self.partial = tempfile.mkstemp(dir=self.path.parent, suffix=".partial")
        self.out = os.fdopen(descriptor, "wb")
        self.source = iter(self.chunks)
        self.state = "writing"
        try:
            for chunk in self.source:
                self._write(chunk)
                yield chunk
            self._finish()
        except BaseException:
            if self.state == "writing":
                self.state = "failed"
            raise

    def _write(self, chunk) -> None:
        self.out.write(chunk.encode() if isinstance(chunk, str) else chunk)

    def _finish(self) -> None:
        self.out.flush()
        os.fsync(self.out.fileno())
        self.out.close()
        os.replace(self.partial, self.path)
        self.state = "done"
        _remove_older(self.path)

    def close(self) -> None:
        try:
            if self.state == "writing":
                for chunk in self.source:  # the visitor left before the end
                    self._write(chunk)
                self._finish()
        finally:
            if self.out is not None and not self.out.closed:
                self.out.close()
            if self.partial and self.state != "done" and os.path.exists(self.partial):
                os.unlink(self.partial)
            if self.lock is not None:
                os.close(self.lock)
                self.lock = None


def _remove_older(path: Path) -> None:
    """The run's files of this form and format from earlier publications."""
    form = path.name.split("-v", 1)[0]
    for older in path.parent.glob(f"{form}-v*{path.suffix}"):
        if older != path:
            older.unlink(missing_ok=True)
