"""Streaming dataset uploads: the request body as a sync stream, multipart parsing, sniffing, bounded
decompression.

The upload route runs the whole store-and-register step in a worker thread (the artifact store and the
database are synchronous). That thread pulls the request body chunk by chunk from the event loop
(``BodyPuller``), so nothing is buffered beyond one chunk, and it stops reading the moment a limit is hit:

- the wire size is bounded by the artifact store's streaming ``max_bytes`` (``payload_too_large``, 413);
- ``InspectingReader`` sniffs each file as it passes: gzip and zstd are decompressed on the side, through
  a window of ``DECOMPRESS_WINDOW`` bytes at a time, only to count (and sniff) the decompressed bytes, so
  a zip bomb is refused (413 ``decompressed_too_large``) once it passes ``settings.max_decompressed_bytes``
  or ``settings.max_compression_ratio`` times its compressed size (after ``RATIO_MIN_BYTES``): a few
  MiB of work, whatever the bomb's size;
- the first ``SNIFF_BYTES`` of (decompressed) content must look like text: binaries (images, archives,
  executables) are refused with 415 ``unsupported_media_type``.

The user's file name is display metadata only (``service.datasets.safe_name``); it is never a path.
"""

from __future__ import annotations

import codecs
import zlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio.from_thread

from service.api.errors import ApiError

SNIFF_BYTES = 8192
DECOMPRESS_WINDOW = 1 << 20  # bytes of decompressed output produced per step while counting
MAX_PART_HEADER_BYTES = 16 * 1024
MAX_FILENAME_CHARS = 1024  # a part's file name (metadata only; the stored name is cut to MAX_NAME)
MAX_FORM_FIELD_BYTES = 4096
MAX_PARTS = 200
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

#: Raw-body content types accepted by ``POST /v1/datasets`` (besides multipart/form-data).
RAW_CONTENT_TYPES = frozenset({
    "application/octet-stream", "application/jsonl", "application/x-jsonlines", "application/x-ndjson",
    "application/ndjson", "application/json", "text/plain", "application/gzip", "application/x-gzip",
    "application/zstd", "application/x-zstd",
})

_KNOWN_BINARY = (
    (b"PK\x03\x04", "a zip archive"), (b"BZh", "a bzip2 file"), (b"\xfd7zXZ\x00", "an xz file"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive"), (b"\x89PNG", "a PNG image"), (b"%PDF", "a PDF document"),
    (b"\x7fELF", "an executable"), (b"SQLite format 3", "a SQLite database"),
)


class BodyPuller:
    """A synchronous chunk source over the request's async body, for use in a worker thread started by
    ``anyio.to_thread.run_sync`` (each call hops to the event loop for one chunk)."""

    def __init__(self, stream: AsyncIterator[bytes]):
        self._it = stream.__aiter__()
        self._done = False
        self.bytes_read = 0

    async def _next(self) -> bytes:
        try:
            return await self._it.__anext__()
        except StopAsyncIteration:
            return b""

    def __call__(self) -> bytes:
        """The next non-empty chunk, or b"" at the end of the body."""
        while not self._done:
            chunk = anyio.from_thread.run(self._next)
            if not chunk:
                self._done = True
                return b""
            self.bytes_read += len(chunk)
            return chunk
        return b""


class RawBodyReader:
    """``read(n)`` over a ``BodyPuller`` (a raw upload is one file)."""

    def __init__(self, pull: Callable[[], bytes]):
        self._pull = pull
        self._buf = b""
        self._eof = False

    def read(self, n: int = -1) -> bytes:
        if not self._buf and not self._eof:
            self._buf = self._pull()
            self._eof = not self._buf
        if n is None or n < 0 or n >= len(self._buf):
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:n], self._buf[n:]
        return out


# --- multipart --------------------------------------------------------------------------------------------


@dataclass
class Part:
    """One multipart part: its form field name, file name (None for a plain field) and a ``read``."""

    name: str
    filename: str | None
    content_type: str | None
    _stream: MultipartStream = field(repr=False)
    _ended: bool = False

    def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes of this part (any amount for n < 0); b"" at its end."""
        return self._stream._read_part(self, n)

    def read_all(self, limit: int, *, status: int = 422, code: str = "invalid_value") -> bytes:
        """The whole part, refusing more than ``limit`` bytes (a plain form field, or a small file such as a
        mapping: 413 ``payload_too_large`` there) with ``status`` and ``code`` as soon as it passes."""
        out = bytearray()
        while chunk := self.read():
            out += chunk
            if len(out) > limit:
                raise ApiError(status, code, f"form field {self.name!r} is longer than {limit} bytes", self.name)
        return bytes(out)


class MultipartStream:
    """Pull-based multipart/form-data parsing over a chunk source (python-multipart's push parser inside).

    ``parts()`` yields ``Part``s in order; a part must be read to its end (or abandoned) before the next.
    Malformed multipart answers 400 ``invalid_multipart``.
    """

    def __init__(self, pull: Callable[[], bytes], boundary: bytes):
        from python_multipart.multipart import MultipartParser

        self._pull = pull
        self._events: deque[tuple[str, Any]] = deque()
        self._done = False
        self._hfield = bytearray()
        self._hvalue = bytearray()
        self._headers: dict[str, bytes] = {}
        self._header_bytes = 0
        self._parts = 0
        callbacks = {
            "on_part_begin": self._on_part_begin,
            "on_part_data": self._on_part_data,
            "on_part_end": lambda: self._events.append(("end", None)),
            "on_header_field": self._on_header_field,
            "on_header_value": self._on_header_value,
            "on_header_end": self._on_header_end,
            "on_headers_finished": self._on_headers_finished,
        }
        try:  # our own header budget (_grow) speaks first, with a coded error
            self._parser = MultipartParser(boundary, callbacks, max_header_size=4 * MAX_PART_HEADER_BYTES)
        except TypeError:  # python-multipart before 0.0.13 has no header limit of its own
            self._parser = MultipartParser(boundary, callbacks)

    # parser callbacks (called inside parser.write)
    def _on_part_begin(self) -> None:
        self._headers = {}
        self._header_bytes = 0
        self._parts += 1
        if self._parts > MAX_PARTS:
            raise ApiError(400, "invalid_multipart", f"more than {MAX_PARTS} multipart parts", "file")

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        if end > start:
            self._events.append(("data", bytes(data[start:end])))

    def _grow(self, n: int) -> None:
        self._header_bytes += n
        if self._header_bytes > MAX_PART_HEADER_BYTES:
            raise ApiError(400, "header_too_large", f"a multipart part's headers exceed {MAX_PART_HEADER_BYTES} "
                           f"bytes (file names are limited to {MAX_FILENAME_CHARS} characters)", "file")

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._grow(end - start)
        self._hfield += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._grow(end - start)
        self._hvalue += data[start:end]

    def _on_header_end(self) -> None:
        self._headers[bytes(self._hfield).decode("latin-1").strip().lower()] = bytes(self._hvalue).strip()
        self._hfield.clear()
        self._hvalue.clear()

    def _on_headers_finished(self) -> None:
        from python_multipart.multipart import parse_options_header

        _, opts = parse_options_header(self._headers.get("content-disposition", b""))
        name = opts.get(b"name", b"").decode("utf-8", "replace")
        filename = opts.get(b"filename")
        if filename is not None and len(filename.decode("utf-8", "replace")) > MAX_FILENAME_CHARS:
            raise ApiError(400, "filename_too_long", f"the file name of part {name!r} has "
                           f"{len(filename.decode('utf-8', 'replace'))} characters; at most {MAX_FILENAME_CHARS}",
                           "file")
        ctype = self._headers.get("content-type")
        self._events.append(("begin", (name, filename.decode("utf-8", "replace") if filename is not None else None,
                                       ctype.decode("latin-1") if ctype else None)))

    def _feed(self) -> bool:
        """Parse one more chunk of the body; False once the body ended."""
        if self._done:
            return False
        chunk = self._pull()
        try:
            if not chunk:
                self._done = True
                self._parser.finalize()
                return False
            self._parser.write(chunk)
        except ApiError:
            raise
        except Exception as exc:  # noqa: BLE001 - python-multipart's MultipartParseError and friends
            # The parser's own words (a position, a missing boundary): never the body's content.
            detail = str(exc)[:200] or type(exc).__name__
            if "header size" in detail:  # the parser's own header limit: the same answer as _grow's
                raise ApiError(400, "header_too_large", f"a multipart part's headers exceed "
                               f"{MAX_PART_HEADER_BYTES} bytes (file names are limited to {MAX_FILENAME_CHARS} "
                               "characters)", "file") from None
            raise ApiError(400, "invalid_multipart", f"malformed multipart body: {detail}", "file") from None
        return True

    def parts(self) -> Iterator[Part]:
        current: Part | None = None
        while True:
            if current is not None and not current._ended:
                while current.read(-1):  # skip the rest of an abandoned part
                    pass
            while not self._events:
                if not self._feed() and not self._events:
                    return
            kind, payload = self._events.popleft()
            if kind == "begin":
                name, filename, ctype = payload
                current = Part(name, filename, ctype, self)
                yield current
            # stray data/end events (before the first part) are ignored

    def _read_part(self, part: Part, n: int) -> bytes:
        if part._ended:
            return b""
        while not self._events:
            if not self._feed():
                part._ended = True
                raise ApiError(400, "invalid_multipart", "the multipart body ended inside a part", part.name)
        kind, payload = self._events[0]
        if kind == "end":
            self._events.popleft()
            part._ended = True
            return b""
        if kind != "data":
            part._ended = True
            return b""
        data: bytes = payload
        if n is not None and 0 <= n < len(data):
            self._events[0] = ("data", data[n:])
            return data[:n]
        self._events.popleft()
        return data


def multipart_boundary(content_type: str) -> bytes:
    """The boundary of a multipart/form-data Content-Type. Raises ApiError 400 when missing."""
    from python_multipart.multipart import parse_options_header

    _, opts = parse_options_header(content_type)
    boundary = opts.get(b"boundary")
    if not boundary or len(boundary) > 200:
        raise ApiError(400, "invalid_multipart", "multipart/form-data without a valid boundary", "Content-Type")
    return boundary


# --- sniffing and bounded decompression ---------------------------------------------------------------


RATIO_MIN_BYTES = 8 << 20  # decompressed bytes before the compression ratio is enforced
FEED_SLICE = 16 << 10  # compressed bytes inflated per step (counted first: see InspectingReader._feed)


class Budget:
    """Decompressed bytes allowed across all files of one upload: at most ``limit`` in all, and at most
    ``max_ratio`` times the compressed bytes read so far once past ``RATIO_MIN_BYTES`` (a bomb stops
    after a few MiB of work instead of at the limit)."""

    def __init__(self, limit: int, max_ratio: float | None = None):
        self.limit = limit
        self.max_ratio = max_ratio
        self.used = 0
        self.compressed = 0

    def take_compressed(self, n: int) -> None:
        """Count ``n`` compressed input bytes (the ratio's denominator)."""
        self.compressed += n

    def take(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            raise ApiError(413, "decompressed_too_large",
                           f"the upload decompresses to more than the limit of {self.limit} bytes", "file")
        if self.max_ratio is not None and self.used > RATIO_MIN_BYTES and \
                self.used > self.max_ratio * max(self.compressed, 1):
            raise ApiError(413, "decompressed_too_large",
                           f"the upload decompresses to over {self.max_ratio:g} times its compressed size "
                           f"({self.used} bytes from {self.compressed}); refused as a decompression bomb", "file")


def binary_reason(head: bytes, final: bool) -> str | None:
    """Why ``head`` (the first bytes of the decompressed content) is not a text trace file, or None.

    Text means: no NUL byte, and at most 2% of the characters are undecodable UTF-8 or control characters
    (other than tab, newline, carriage return, form feed, escape).
    """
    for magic, what in _KNOWN_BINARY:
        if head.startswith(magic):
            return what
    if b"\x00" in head:
        return "binary content (NUL bytes)"
    head = head.removeprefix(codecs.BOM_UTF8)
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(head, final=final)
    if not text:
        return None
    bad = sum(1 for ch in text if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\n\r\f\x1b"))
    if bad > max(2, len(text) // 50):
        return "binary content (not UTF-8 text)"
    return None


class InspectingReader:
    """Wraps one file's stream: passes the bytes through unchanged, and on the side sniffs the compression
    (gzip/zstd by magic number), counts the decompressed size against a shared ``Budget``, and checks
    that the decompressed head is text.

    Raises (from ``read``) ApiError 413 ``decompressed_too_large``, 415 ``unsupported_media_type``, 400
    ``invalid_compression`` (a corrupt gzip/zstd stream).
    """

    def __init__(self, inner: Any, budget: Budget, name: str):
        self._inner = inner
        self._budget = budget
        self.name = name
        self.compression: str | None = None
        self.size = 0
        self.decompressed_size = 0
        self.truncated = False
        self._magic = b""
        self._decided = False
        self._head = bytearray()
        self._head_checked = False
        self._gz: Any = None
        self._zw: Any = None
        self._pending: list[bytes] = []
        self._carry = b""

    # -- plumbing
    def read(self, n: int = -1) -> bytes:
        data = self._inner.read(n)
        if data:
            self.size += len(data)
            self._inspect(data)
        else:
            self._finish()
        return data

    def _emit(self, out: bytes) -> None:
        """Decompressed (or plain) content produced: count it, collect the sniffing head."""
        if not out:
            return
        self.decompressed_size += len(out)
        if self.compression is not None:
            self._budget.take(len(out))
        if not self._head_checked:
            self._head += out[: SNIFF_BYTES - len(self._head)]
            if len(self._head) >= SNIFF_BYTES:
                self._check_head(final=False)

    def _check_head(self, final: bool) -> None:
        self._head_checked = True
        reason = binary_reason(bytes(self._head), final)
        if reason:
            raise ApiError(415, "unsupported_media_type",
                           f"file {self.name!r} is {reason}; upload trace files as text (JSON/JSONL), "
                           "optionally gzip or zstd compressed", "file")

    # -- decisions
    def _inspect(self, data: bytes) -> None:
        if not self._decided:
            self._magic += data[:4]
            self._pending.append(data)
            if len(self._magic) < 4:
                return
            self._decide()
            data = b"".join(self._pending)
            self._pending.clear()
        self._feed(data)

    def _decide(self) -> None:
        self._decided = True
        if self._magic.startswith(GZIP_MAGIC):
            self.compression = "gzip"
            self._gz = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self._magic.startswith(ZSTD_MAGIC):
            import zstandard

            self.compression = "zstd"
            self._zw = zstandard.ZstdDecompressor().stream_writer(
                _Counter(self._emit), write_size=DECOMPRESS_WINDOW, write_return_read=True
            )

    def _feed(self, data: bytes) -> None:
        if self.compression is None:
            self._emit(data)
            return
        # Compressed input goes in slices, each counted before it is inflated: the ratio check then sees
        # the input actually consumed, not a whole chunk that a bomb inflates 1000-fold.
        for i in range(0, len(data), FEED_SLICE):
            piece = data[i : i + FEED_SLICE]
            self._budget.take_compressed(len(piece))
            self._feed_compressed(piece)

    def _feed_compressed(self, data: bytes) -> None:
        if self.compression == "gzip":
            self._feed_gzip(data)
        else:
            try:
                self._zw.write(data)
            except ApiError:
                raise
            except Exception as exc:  # noqa: BLE001 - zstandard.ZstdError
                raise ApiError(400, "invalid_compression", f"file {self.name!r} is not a valid zstd stream: "
                               f"{exc}", "file") from None

    def _feed_gzip(self, data: bytes) -> None:
        buf = self._carry + data
        self._carry = b""
        try:
            while buf or (self._gz is not None and not self._gz.eof):
                if self._gz is None:  # between members: only another member or zero padding may follow
                    if buf == GZIP_MAGIC[:1]:
                        self._carry = buf  # a member's magic split across chunks
                        return
                    if buf.startswith(GZIP_MAGIC):
                        self._gz = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    elif not buf.strip(b"\x00"):
                        return
                    else:
                        raise ApiError(400, "invalid_compression",
                                       f"file {self.name!r} has trailing bytes after its gzip data", "file")
                out = self._gz.decompress(buf, DECOMPRESS_WINDOW)
                self._emit(out)
                buf = self._gz.unconsumed_tail
                if self._gz.eof:
                    buf = self._gz.unused_data + buf
                    self._gz = None
                    continue
                if not buf and len(out) < DECOMPRESS_WINDOW:
                    return  # all input consumed, no output pending: wait for more input
        except zlib.error as exc:
            raise ApiError(400, "invalid_compression", f"file {self.name!r} is not a valid gzip stream: {exc}",
                           "file") from None

    def _finish(self) -> None:
        if not self._decided:
            self._decide()
            data = b"".join(self._pending)
            self._pending.clear()
            if data:
                self._feed(data)
        if self.compression == "zstd" and self._zw is not None:
            try:
                self._zw.flush()
            except ApiError:
                raise
            except Exception:  # noqa: BLE001 - a cut zstd frame: the validator reports it
                self.truncated = True
        elif self.compression == "gzip" and self._gz is not None and not self._gz.eof:
            self.truncated = True  # the validator reports the cut; what came before is usable
        if not self._head_checked:
            self._check_head(final=True)


class _Counter:
    def __init__(self, sink: Callable[[bytes], None]):
        self._sink = sink

    def write(self, b: bytes) -> int:
        self._sink(bytes(b))
        return len(b)
