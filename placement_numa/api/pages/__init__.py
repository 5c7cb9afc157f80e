"""Server-rendered HTML pages of the service (no JavaScript framework, no CDN): small
builders over ``html.escape``, one module per page (``fleet_html``, ``host_html``) and the
shared parts (``html_parts``)."""
