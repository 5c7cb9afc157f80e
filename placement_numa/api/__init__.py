"""HTTP layer: routers, request parsing, microversions, error rendering."""
