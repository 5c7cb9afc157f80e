"""Nova scheduler plugins for placement-numa (Nova 34).

* ``filters.NUMACandidatesFilter`` asks placement-numa, once per scheduling request, for the
  flavor's NUMA candidates in rank order (``POST /allocation_candidates``) and replaces each
  host's ``allocation_candidates`` with that host's aligned ones (Nova claims the first);
  hosts with none are dropped.
* ``weights.NUMARankWeigher`` orders hosts by placement-numa's rank.

The flavor is translated by placement-numa itself (one translator, tested against Nova's own
fitting), so no NUMA logic lives here: this package only builds the request body from Nova's
``RequestSpec`` (``request``) and reads the ranked answer (``ranking``).
"""
