"""A compute node's page ``GET /numa/fleet/hosts/{uuid}`` as HTML: its cells (bars, as on the
fleet page) and its guests cell by cell."""

from __future__ import annotations

from placement_numa.api.pages.fleet_html import FLEET_PATH, cell_rows
from placement_numa.api.pages.html_parts import amount_cell, document, esc, link
from placement_numa.services.fleet_host_page import Guest
from placement_numa.services.fleet_page import HostRow

__all__ = ["render_host"]


def _guests(host: HostRow, guests: list[Guest]) -> str:
    if not guests:
        return '<p class="muted">No guests.</p>'
    cells: list[int | None] = [c.cell for c in host.cells]
    cells.append(None)
    head = "".join(
        f"<th>cell {c}</th>" if c is not None else "<th>outside cells</th>" for c in cells
    )
    rows = []
    for g in guests:
        tds = "".join(
            "<td>"
            + "<br>".join(f"{n} {esc(label)}" for label, n in sorted(g.cells.get(c, {}).items()))
            + "</td>"
            for c in cells
        )
        rows.append(f'<tr class="guest"><td>{esc(g.consumer)}</td>{tds}</tr>')
    return f'<table id="guests"><tr><th>Consumer</th>{head}</tr>{"".join(rows)}</table>'


def render_host(host: HostRow, guests: list[Guest]) -> str:
    """The whole host page."""
    own = "<br>".join(
        amount_cell(a.used, a.capacity) + f" {esc(rc)}" for rc, a in sorted(host.own.items())
    )
    fits = "".join(f"<li>{esc(f)}: {n} more fit</li>" for f, n in host.fits.items())
    lost = ", ".join(f"{n} {rc}" for rc, n in sorted(host.stranded.items()))
    body = (
        f'<p>{link(FLEET_PATH, {}, "&larr; fleet")}</p><h1 id="host">{esc(host.name)}</h1>'
        f'<p class="muted">{esc(host.uuid)}; aggregates: '
        f"{esc(', '.join(host.aggregates) or 'none')}</p>"
        f"<h2>Cells</h2>{cell_rows(host.cells)}<p>Host's own: {own or 'none'}</p>"
        + (f"<ul>{fits}</ul>" if fits else "")
        + (f'<p class="stranded">Stranded: {esc(lost)}</p>' if lost else "")
        + f"<h2>Guests, cell by cell</h2>{_guests(host, guests)}"
    )
    return document(f"Host {host.name}", body)
