"""Shared parts of the HTML pages: the document shell (inline CSS, no external asset), usage
bars as inline SVG, links with query strings. Every text from clients (provider names,
aggregate uuids, flavor names, consumer uuids) goes through ``esc``."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from urllib.parse import quote, urlencode

__all__ = ["esc", "bar", "document", "link", "amount_cell", "mib"]

BAR_WIDTH = 60  # px
_CSS = """
body{font:13px/1.35 system-ui,sans-serif;margin:12px 18px;color:#222}
h1{font-size:20px;margin:4px 0 8px}h2{font-size:16px;margin:14px 0 6px}
table{border-collapse:collapse;margin:4px 0 10px}
th,td{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th a{color:#035;text-decoration:none}th a.on{font-weight:bold;text-decoration:underline}
td.n,th.n{text-align:right}.cells td{border:0;padding:1px 4px;white-space:nowrap}
.stranded{background:#ffe2c6}.tag{background:#c4421a;color:#fff;border-radius:3px;padding:0 4px;
font-size:11px}.muted{color:#777}.pager a,.pager span{margin-right:8px}
svg{vertical-align:middle}#hosts a.host,td.own{white-space:nowrap}
"""


def esc(text: object) -> str:
    """``text`` escaped for HTML text and quoted attribute values."""
    return escape(str(text), quote=True)


def mib(amount: int) -> str:
    """An amount of MiB as text (GiB when it is a whole number of GiB from 1 GiB)."""
    return f"{amount // 1024} GiB" if amount >= 1024 and amount % 1024 == 0 else f"{amount} MiB"


def bar(used: int, capacity: int) -> str:
    """An inline SVG bar: used (dark) over capacity (light); a title with the figures."""
    share = 0.0 if capacity <= 0 else min(1.0, max(0.0, used / capacity))
    width = round(BAR_WIDTH * share)
    return (
        f'<svg width="{BAR_WIDTH}" height="10" role="img" aria-label="{used} of {capacity} used">'
        f"<title>{used} used of {capacity}</title>"
        f'<rect width="{BAR_WIDTH}" height="10" fill="#cfe3d4"/>'
        f'<rect width="{width}" height="10" fill="#3d7a52"/></svg>'
    )


def amount_cell(used: int, capacity: int) -> str:
    """A bar and ``free/capacity`` text."""
    free = max(0, capacity - used)
    return f'{bar(used, capacity)} <span title="free/capacity">{free}/{capacity}</span>'


def link(path: str, params: Mapping[str, object], text: str, css: str = "") -> str:
    """``<a href="path?params">text</a>`` (``text`` is HTML already; params URL-encoded)."""
    query = urlencode({k: v for k, v in params.items() if v is not None})
    href = quote(path, safe="/") + ("?" + query if query else "")
    attr = f' class="{css}"' if css else ""
    return f'<a href="{esc(href)}"{attr}>{text}</a>'


def document(title: str, body: str) -> str:
    """A whole HTML document: ``title`` (plain text), ``body`` (HTML)."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>{body}</body></html>"
    )
