"""The fleet page ``GET /numa/fleet`` as HTML (see ``services.fleet_page`` for the data): the
catalogue's flavors and how many more fit, the fleet's stranded capacity, the aggregates, and
one page of hosts with a row of bars per NUMA cell; column headings sort (query parameters,
server side), host names link to the host's page."""

from __future__ import annotations

from dataclasses import asdict

from placement_numa.api.pages.html_parts import amount_cell, document, esc, link, mib
from placement_numa.services.fleet_page import CellRow, FleetPage, GroupRow, HostRow

__all__ = ["render_fleet", "FLEET_PATH", "HOST_PATH"]

FLEET_PATH = "/numa/fleet"
HOST_PATH = "/numa/fleet/hosts/"
_COLUMNS = (
    ("name", "Host"),
    ("free_pcpu", "Free PCPU"),
    ("free_vcpu", "Free VCPU"),
    ("free_memory_mb", "Free memory"),
    ("stranded_pcpu", "Stranded PCPU"),
)


def _params(current: FleetPage, **changes: object) -> dict[str, object]:
    params = asdict(current.query)
    params["order"] = "desc" if params.pop("descending") else "asc"
    params.update(changes)
    return params


def _catalogue(page: FleetPage) -> str:
    note = ""
    if page.counting:
        when = (
            f"these are of revision {page.catalogue_revision}"
            if page.catalogue_revision is not None
            else "none yet"
        )
        note = f'<p class="counting">Counting the flavors at this revision ({when}): reload.</p>'
    if page.stranded is None:
        if note:
            return note
        return (
            '<p class="muted">No flavor catalogue: set <code>[metrics] flavors_file</code> to see'
            " how many more of each flavor fit and what is stranded.</p>"
        )
    rows = "".join(
        f'<tr><td>{esc(f)}</td><td class="n">{n}</td></tr>' for f, n in page.totals.items()
    )
    lost = page.stranded
    classes = "".join(
        f"<tr{' class=stranded' if lost.stranded[rc] else ''}><td>{rc}</td>"
        f'<td class="n">{lost.free[rc]}</td><td class="n">{lost.stranded[rc]}</td>'
        f'<td class="n">{lost.fragmentation[rc]:.1%}</td></tr>'
        for rc in lost.free
    )
    return note + (
        '<h2>Flavors: how many more fit</h2><table id="flavors"><tr><th>Flavor</th>'
        f'<th class="n">More fit</th></tr>{rows}</table>'
        '<h2>Stranded capacity</h2><table id="stranded"><tr><th>Class</th><th class="n">Free</th>'
        f'<th class="n">Stranded</th><th class="n">Fragmentation</th></tr>{classes}</table>'
    )


def _groups(page: FleetPage, groups: list[GroupRow]) -> str:
    flavors = list(page.totals)
    head = "".join(f'<th class="n">{esc(f)}</th>' for f in flavors)
    rows = []
    for g in groups:
        name = link(FLEET_PATH, _params(page, aggregate=g.aggregate, page=1), esc(g.aggregate))
        fits = "".join(f'<td class="n">{g.fits.get(f, 0)}</td>' for f in flavors)
        rows.append(
            f'<tr><td>{name}</td><td class="n">{g.hosts}</td>'
            f'<td class="n">{g.free.get("PCPU", 0)}</td><td class="n">{g.free.get("VCPU", 0)}</td>'
            f'<td class="n">{mib(g.free.get("MEMORY_MB", 0))}</td>{fits}</tr>'
        )
    every = link(FLEET_PATH, _params(page, aggregate=None, page=1), "all hosts")
    return (
        f"<h2>Aggregates</h2><p>Showing: {esc(page.query.aggregate or 'all hosts')} ({every})</p>"
        '<table id="aggregates"><tr><th>Aggregate</th><th class="n">Hosts</th>'
        '<th class="n">Free PCPU</th><th class="n">Free VCPU</th><th class="n">Free memory</th>'
        f"{head}</tr>{''.join(rows)}</table>"
    )


def _page(size_kb: int) -> str:
    """A page size in KiB as 4K, 2M, 1G."""
    for unit, kib in (("G", 1024 * 1024), ("M", 1024)):
        if size_kb >= kib and size_kb % kib == 0:
            return f"{size_kb // kib}{unit}"
    return f"{size_kb}K"


def cell_rows(cells: tuple[CellRow, ...]) -> str:
    """A small table, one row per cell: PCPU, VCPU, memory per page size (MiB), devices."""
    rows = []
    for c in cells:
        cpus = [
            f"<td>{amount_cell(a.used, a.capacity) if a else ''}</td>"
            for a in (c.cpus.get("PCPU"), c.cpus.get("VCPU"))
        ]
        memory = "<br>".join(
            f"{amount_cell(a.used, a.capacity)} {_page(size)}"
            for size, a in sorted(c.memory.items())
        )
        devices = "<br>".join(
            f"{amount_cell(a.used, a.capacity)} {esc(rc)}" for rc, a in sorted(c.devices.items())
        )
        mark = ' <span class="tag">stranded</span>' if c.stranded else ""
        css = ' class="stranded"' if c.stranded else ""
        rows.append(
            f"<tr{css}><td>{c.cell}{mark}</td>{''.join(cpus)}<td>{memory}</td><td>{devices}</td></tr>"
        )
    if not rows:
        return ""
    return (
        '<table class="cells"><tr class="muted"><td>cell</td><td>PCPU</td><td>VCPU</td>'
        f"<td>memory MiB per page size</td><td>devices</td></tr>{''.join(rows)}</table>"
    )


def _host(page: FleetPage, h: HostRow) -> str:
    own = "<br>".join(
        amount_cell(a.used, a.capacity) + f" {esc(rc)}" for rc, a in sorted(h.own.items())
    )
    fits = "".join(f'<td class="n">{h.fits.get(f, 0)}</td>' for f in page.totals)
    lost = ", ".join(f"{n} {rc}" for rc, n in sorted(h.stranded.items()))
    css = ' class="stranded"' if lost else ""
    name = link(HOST_PATH + h.uuid, {}, esc(h.name), "host")
    aggregates = "<br>".join(esc(a) for a in h.aggregates)
    return (
        f'<tr{css}><td>{name}<br><span class="muted">{aggregates}</span></td>'
        f'<td>{cell_rows(h.cells)}</td><td class="own">{own}</td>{fits}'
        f'<td class="lost">{esc(lost)}</td></tr>'
    )


def _hosts(page: FleetPage) -> str:
    q = page.query
    heads = []
    for key, text in _COLUMNS:
        descending = not q.descending if key == q.sort else key != "name"
        params = _params(page, sort=key, flavor=None, order="desc" if descending else "asc", page=1)
        heads.append(f"{link(FLEET_PATH, params, text, 'on' if key == q.sort else '')}")
    head = (
        f"<th>{heads[0]}</th><th>Cells: {' · '.join(heads[1:4])}</th><th>Host's own</th>"
        + "".join(f'<th class="n">{_fits_head(page, f)}</th>' for f in page.totals)
        + f"<th>{heads[4]}</th>"
    )
    rows = "".join(_host(page, h) for h in page.rows)
    return f'<h2>Hosts</h2>{_pager(page)}<table id="hosts"><tr>{head}</tr>{rows}</table>'


def _fits_head(page: FleetPage, flavor: str) -> str:
    """A flavor's column heading: sorts by its count, most first, then fewest."""
    q = page.query
    on = q.sort == "fits" and q.flavor == flavor
    order = "asc" if on and q.descending else "desc"
    params = _params(page, sort="fits", flavor=flavor, order=order, page=1)
    return link(FLEET_PATH, params, esc(flavor), "on" if on else "")


def _pager(page: FleetPage) -> str:
    q = page.query
    parts = [f"<span>page {q.page} of {page.pages} ({page.matching} hosts)</span>"]
    if q.page > 1:
        parts.append(link(FLEET_PATH, _params(page, page=q.page - 1), "previous", "prev"))
    if q.page < page.pages:
        parts.append(link(FLEET_PATH, _params(page, page=q.page + 1), "next", "next"))
    return f'<p class="pager">{"".join(parts)}</p>'


def render_fleet(page: FleetPage) -> str:
    """The whole fleet page."""
    title = f"Fleet: {page.hosts} hosts"
    body = (
        f"<h1>{esc(title)}</h1><p class=muted>fleet revision {page.revision}; bars: used (dark)"
        " of capacity; highlighted: stranded (no catalogue flavor can use it)</p>"
        + _catalogue(page)
        + _groups(page, page.groups)
        + _hosts(page)
    )
    return document(title, body)
