"""Response helpers: orjson rendering, Placement's error body, cache headers (1.15+)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import UTC, datetime
from email.utils import format_datetime
from html import escape
from typing import Any, TypeVar

import orjson
from fastapi import Response
from starlette.responses import JSONResponse, StreamingResponse

from placement_numa.api import microversion as mv
from placement_numa.errors import PlacementError

__all__ = [
    "PlacementJSONResponse",
    "json_response",
    "json_bytes_response",
    "json_pieces_response",
    "STREAM_CHUNK_BYTES",
    "error_body",
    "error_payload",
    "no_content",
    "http_date",
    "newest",
    "bounded_detail",
    "MAX_DETAIL_CHARS",
]

# webob's explanations, which Placement prefixes to every error detail.
_EXPLANATIONS = {
    400: "The server could not comply with the request since it is either malformed or otherwise"
    " incorrect.",
    401: "This server could not verify that you are authorized to access the document you"
    " requested.",
    403: "Access was denied to this resource.",
    404: "The resource could not be found.",
    405: "The server could not comply with the request since it is not allowed for this resource.",
    406: "The resource could not be generated that was acceptable to your browser (content of type"
    " application/json.",
    408: "The server has waited too long for the request to be sent by the client.",
    409: "There was a conflict when trying to complete your request.",
    413: "The body of your request was too large for this server.",
    415: "The request media type is not supported by this server.",
    500: "The server has either erred or is incapable of performing the requested operation.",
    503: "The server is currently unavailable. Please try again at a later time.",
}


# Longest ``detail`` an error body carries: a message never repeats a huge offending value.
MAX_DETAIL_CHARS = 2048


def bounded_detail(detail: str) -> str:
    """``detail`` cut to ``MAX_DETAIL_CHARS`` characters (``... (truncated)`` marks a cut)."""
    if len(detail) <= MAX_DETAIL_CHARS:
        return detail
    return detail[:MAX_DETAIL_CHARS] + "... (truncated)"


class PlacementJSONResponse(JSONResponse):
    """JSON rendered with orjson (no pydantic on the hot path)."""

    def render(self, content: Any) -> bytes:
        """``content`` serialized with orjson (UTF-8 bytes)."""
        return orjson.dumps(content)


def http_date(moment: datetime | None) -> str:
    """Format ``moment`` (naive = UTC) as an RFC 7231 date for ``last-modified``."""
    moment = moment or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return format_datetime(moment.astimezone(UTC), usegmt=True)


def json_response(
    body: Any,
    version: mv.Microversion,
    *,
    status: int = 200,
    last_modified: datetime | None = None,
    cache: bool = True,
    headers: dict[str, str] | None = None,
) -> PlacementJSONResponse:
    """A JSON response; from 1.15 GETs carry ``last-modified`` (``last_modified`` or now) and
    ``cache-control: no-cache`` when ``cache`` is true."""
    response = PlacementJSONResponse(body, status_code=status, headers=headers)
    return _cache_headers(response, version, cache, last_modified)


def json_bytes_response(
    body: bytes,
    version: mv.Microversion,
    *,
    status: int = 200,
    cache: bool = True,
    last_modified: datetime | None = None,
) -> Response:
    """``json_response`` for a body already encoded as JSON bytes (same headers)."""
    response = Response(body, status_code=status, media_type="application/json")
    return _cache_headers(response, version, cache, last_modified)


# Bytes gathered before each send of a streamed body: large enough that a 4 MB answer costs
# ~16 sends through the middleware stack, small enough that the first bytes leave early.
STREAM_CHUNK_BYTES = 256 * 1024


def json_pieces_response(
    pieces: Iterator[bytes], version: mv.Microversion, *, chunk_bytes: int = STREAM_CHUNK_BYTES
) -> Response:
    """A 200 JSON response of the body ``pieces`` yields (consecutive bytes, written lazily),
    with ``json_response``'s headers.

    The first ``chunk_bytes`` are written here (an error raised while writing them is the
    usual error response). When the body ends within them, it is an ordinary response with
    ``content-length``; else Starlette's ``StreamingResponse`` sends that chunk and writes the
    rest on the event loop, ``chunk_bytes`` at a time, while the client reads what was already
    sent (HTTP/1.1 chunked transfer encoding; other requests get a turn between chunks; it
    stops when the client disconnects; an error after the headers cuts the connection: a
    truncated body, never a wrong one).
    """
    first, last = _next_chunk(pieces, chunk_bytes)
    if last:
        return json_bytes_response(first, version)

    async def chunks() -> AsyncIterator[bytes]:
        yield first
        done = False
        while not done:
            await asyncio.sleep(0)  # other requests get a turn between chunks
            chunk, done = _next_chunk(pieces, chunk_bytes)
            yield chunk

    response = StreamingResponse(chunks(), media_type="application/json")
    return _cache_headers(response, version, True, None)


def _next_chunk(pieces: Iterator[bytes], chunk_bytes: int) -> tuple[bytes, bool]:
    """``(chunk, last)``: the next ``chunk_bytes`` or more bytes of ``pieces``; ``last`` when
    ``pieces`` ended."""
    gathered: list[bytes] = []
    size = 0
    for piece in pieces:
        gathered.append(piece)
        size += len(piece)
        if size >= chunk_bytes:
            return b"".join(gathered), False
    return b"".join(gathered), True


_R = TypeVar("_R", bound=Response)


def _cache_headers(
    response: _R, version: mv.Microversion, cache: bool, last_modified: datetime | None
) -> _R:
    """From 1.15 (when ``cache``): ``last-modified`` (``last_modified`` or now) and
    ``cache-control: no-cache`` on ``response``, which is returned."""
    if cache and version >= mv.CACHE_HEADERS:
        response.headers["last-modified"] = http_date(last_modified)
        response.headers["cache-control"] = "no-cache"
    return response


def newest(stamps: Iterable[datetime | None]) -> datetime | None:
    """The latest of ``stamps`` (``None`` entries skipped), or ``None`` when none is known: the
    ``last_modified`` of a collection (a list's ``last-modified`` header, 1.15+)."""
    known = [stamp for stamp in stamps if stamp is not None]
    return max(known) if known else None


def no_content(headers: dict[str, str] | None = None) -> Response:
    """An empty 204."""
    return Response(status_code=204, headers=headers)


def error_body(
    error: PlacementError, request_id: str | None, version: mv.Microversion | None
) -> dict[str, Any]:
    """Placement's error document: ``{"errors": [{status, title, detail, code?, request_id}]}``.

    ``code`` appears from microversion 1.23 (as in Placement); ``extra`` keys (``min_version`` and
    ``max_version`` on a 406) are merged in.
    """
    explanation = error.explanation or _EXPLANATIONS.get(error.status, "")
    item: dict[str, Any] = {
        "status": error.status,
        "title": error.title,
        "detail": f"{explanation}\n\n {bounded_detail(error.detail)}  ",
    }
    if version is not None and version >= mv.ERROR_CODES:
        item["code"] = error.code
    if request_id:
        item["request_id"] = request_id
    item.update(error.extra)
    return {"errors": [item]}


def _accepted_media(accept: str | None) -> list[str]:
    """Media types named by an ``Accept`` header with a non-zero quality, in order."""
    media: list[str] = []
    for part in (accept or "").split(","):
        name, *params = (piece.strip() for piece in part.split(";"))
        quality = next((p[2:] for p in params if p.startswith("q=")), "1")
        try:
            if float(quality) > 0 and name:
                media.append(name.lower())
        except ValueError:
            continue
    return media


def error_payload(
    error: PlacementError,
    request_id: str | None,
    version: mv.Microversion | None,
    accept: str | None,
) -> tuple[bytes, str]:
    """The error response body and its content type, following the ``Accept`` header as
    Placement (webob) does: JSON unless the client accepts neither JSON nor ``*/*`` but does
    accept ``text/html`` or ``text/plain``."""
    media = _accepted_media(accept)
    wants_json = not media or any(m in ("application/json", "application/*", "*/*") for m in media)
    if not wants_json and ("text/html" in media or "text/*" in media):
        title = f"{error.status} {error.title}"
        explanation = error.explanation or _EXPLANATIONS.get(error.status, "")
        html = (
            f"<html>\n <head>\n  <title>{escape(title)}</title>\n </head>\n <body>\n"
            f"  <h1>{escape(title)}</h1>\n  {escape(explanation)}<br /><br />\n"
            f"{escape(bounded_detail(error.detail))}\n\n </body>\n</html>"
        )
        return html.encode(), "text/html; charset=UTF-8"
    if not wants_json and "text/plain" in media:
        explanation = error.explanation or _EXPLANATIONS.get(error.status, "")
        text = f"{error.status} {error.title}\n\n{explanation}\n\n {bounded_detail(error.detail)}  "
        return text.encode(), "text/plain; charset=UTF-8"
    return orjson.dumps(error_body(error, request_id, version)), "application/json"
