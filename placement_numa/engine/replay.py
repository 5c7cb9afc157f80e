"""Searching roots one at a time for one plan, replaying the answer of look-alike roots.

``RootSearch`` turns each root's options (``engine/options.py``) and full assignments
(``engine/search.py``) into ``Candidate`` objects. Two roots whose slot options, ancestry among
those options, room per requested class and relevant traits look the same (by position) have
the same candidates up to renaming providers: the first root's answer is kept as a template of
positions (``TemplateEntry``) and replayed for the others; answers per tree profile outlive
the search (``engine/answers.py``). ``RootView`` is what a rank bound
may read about a root before it is searched (``RankBoundFn``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from placement_numa.engine.amount_patterns import pattern_answers, pattern_key, translated
from placement_numa.engine.answers import (
    amounts_key,
    keep_per_amounts,
    memo_of,
    per_snapshot,
    query_key,
    root_answers,
)
from placement_numa.engine.answers import lazy_room_codes as room_codes  # coded as read
from placement_numa.engine.candidates import (
    Candidate,
    ReplayedRun,
    TemplateEntry,
    replayed_candidates,
)
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.options import slot_options
from placement_numa.engine.orderings import expand
from placement_numa.engine.plan import QueryPlan, group_signature
from placement_numa.engine.protocol import RankBoundFn
from placement_numa.engine.root_classes import profile_classes
from placement_numa.engine.search import search_assignments

__all__ = ["RootSearch", "RootView", "RankBoundFn"]

# a root's replayed answer as kept per snapshot: a list of candidates (``replayed``) or a run
# (``replayed_run``), whichever was asked first
RootAnswer = list[Candidate] | ReplayedRun


class RootSearch:
    """Searches roots one at a time for one ``QueryPlan``, reusing work across look-alike roots.

    Two roots whose slot options, ancestry among those options, room per requested class
    (``min(max_unit, capacity - used)``) and relevant traits look the same (by position) have the
    same candidates up to renaming providers; the first root's results are kept as a template
    (positions) and replayed for the others. Results are identical to searching each root.
    """

    MAX_TEMPLATES = 4096

    def __init__(self, plan: QueryPlan) -> None:
        self.plan = plan
        self.layout = plan.layout
        self.templates: dict[tuple[object, ...], list[TemplateEntry]] = {}
        self.rcs = sorted({rc for g in plan.groups for rc in g.resources})
        names: set[str] = set()
        for g in plan.groups:
            if g.suffix is None:
                names |= g.required_traits
                for any_of in g.any_traits:
                    names |= any_of
        self.trait_names = frozenset(names)
        self.by_profile = all(t is None for t in plan.in_tree_root)
        # room codes per provider index (``answers.RoomCodes``: coded as roots are read)
        self.codes: Any = room_codes(plan) if self.by_profile else None
        # per profile: one entry per ordering class / every ordering (orderings=True
        # replays); kept across searches (``memo_of``) when profiles are content keys
        self.profile_templates: dict[object, list[TemplateEntry]] = {}
        self.expanded_templates: dict[object, list[TemplateEntry]] = {}
        # per root: its replayed candidates (orderings, one per ordering class), this snapshot's
        self.root_answers: tuple[dict[int, RootAnswer], dict[int, RootAnswer]] = ({}, {})
        # the answers per profile of the queries alike but for amounts (other sizes of one
        # flavor shape: ``engine/amount_patterns.py``), translated to this query's amounts on a
        # miss; found on the first miss (a repeated query has none)
        self.pattern_templates: dict[object, list[TemplateEntry]] | None = None
        self.pattern_read = True
        # ``pattern_key(plan)`` once asked (``pattern``)
        self._pattern: tuple[object, ...] | None = None
        self._pattern_known = False
        if self.by_profile:
            self.profile_templates, self.expanded_templates = memo_of(plan)
            self.pattern_read = self.codes is None
            key = (query_key(plan), self.codes is None)
            self.root_answers = (
                root_answers(plan.fleet, ("roots", True, key)),
                root_answers(plan.fleet, ("roots", False, key)),
            )
        self.bound_cache: dict[object, object] = {}  # see RootView.cache
        # per provider index, the root's look-alike class (``use_profile_classes``)
        self.profile_classes: Any = None
        self.class_profiles: dict[int, object] = {}
        # per look-alike class, its known answer (every ordering, one per ordering class):
        # one dict look-up per root, no profile hashed (``use_profile_classes``)
        self.class_answers: tuple[dict[int, list[TemplateEntry]], ...] = ({}, {})
        self.slot_keys = [
            (
                slot.suffixed,
                slot.resources,
                group_signature(plan.groups[slot.group]),
                plan.in_tree_root[slot.group],
            )
            for slot in plan.slots
        ]

    def options(self, root: int) -> list[list[int]] | None:
        """Options per slot for ``root``, or ``None`` when a slot has none."""
        found: dict[object, list[int]] = {}
        options = []
        for slot, key in zip(self.plan.slots, self.slot_keys, strict=True):
            opts = found.get(key)
            if opts is None:
                opts = slot_options(self.plan, slot, root)
                if not opts:
                    return None
                found[key] = opts
            options.append(opts)
        return options

    def candidates(self, root: int, *, orderings: bool = True) -> Iterator[Candidate]:
        """Every candidate anchored at ``root``, lazily, in a deterministic depth-first order;
        ``orderings=False``: one per ordering class of interchangeable units (``_units``)."""
        known = self.replayed(root, orderings=orderings)
        if known is not None:
            yield from known
        elif not orderings or not self.plan.unit_runs:
            yield from self.bases(root)
        else:
            for base in self.bases(root):
                yield from self.orderings(base)

    def replayed(self, root: int, *, orderings: bool = True) -> list[Candidate] | None:
        """``candidates(root)`` as a list when a look-alike root's answer is known (replayed,
        no search), else ``None``. The list is kept per snapshot and root: read, never change
        it."""
        every = orderings and bool(self.plan.unit_runs)
        kept = self.root_answers[0 if every else 1]
        found = kept.get(root)
        if found is not None:
            return found if isinstance(found, list) else found.candidates()
        known = self._class_answer(root, every)
        if known is None:
            return None
        listed = kept[root] = replayed_candidates(
            root, self.plan.fleet.tree[root], self.layout, known
        )
        return listed

    def replayed_run(self, root: int, *, orderings: bool = True) -> ReplayedRun | None:
        """``replayed(root)`` as one ``ReplayedRun`` (no ``Candidate`` made until one is
        read), or ``None``. Kept per snapshot and root in ``replayed``'s place: whichever of
        the two is asked first keeps its form, and the other reads it."""
        every = orderings and bool(self.plan.unit_runs)
        kept = self.root_answers[0 if every else 1]
        found = kept.get(root)
        if found is not None:
            if not isinstance(found, list):
                return found
            # ``replayed``'s list: its candidates' entries over this snapshot's tree (a list
            # carried from an older snapshot is one of a tree that did not change)
            entries = [c.entry for c in found if c.entry is not None]  # every one has its entry
            return ReplayedRun(root, self.plan.fleet.tree[root], self.layout, entries, found)
        known = self._class_answer(root, every)
        if known is None:
            return None
        run = kept[root] = ReplayedRun(root, self.plan.fleet.tree[root], self.layout, known)
        return run

    def _class_answer(self, root: int, every: bool) -> list[TemplateEntry] | None:
        """``_known(root, every)``, read by the root's look-alike class once roots are classed
        (one look-up per root, kept per class), else ``None``."""
        classes, by_class = self.profile_classes, self.class_answers[0 if every else 1]
        number = -1  # the root's look-alike class, once roots are classed
        if classes is not None and root not in self.plan.fleet.shared_into:
            number = classes.item(root)
        known = by_class.get(number)  # never -1
        if known is None:
            known = self._known(root, every)
            if known is not None and number >= 0:
                by_class[number] = known
        return known

    def _known(self, root: int, every: bool) -> list[TemplateEntry] | None:
        """The known answer of ``root``'s profile in positions (every ordering when
        ``every``, else one per ordering class), or ``None`` (the root must be searched)."""
        profile = self._profile(root)
        if profile is None:
            return None
        if every:
            known = self.expanded_templates.get(profile)
            if known is None:
                bases = self._known_bases(profile)
                if bases is not None:
                    known = self.expanded_templates[profile] = [
                        variant for entry in bases for variant in self._entry_orderings(entry)
                    ]
        else:
            known = self._known_bases(profile)
        return known

    def _known_bases(self, profile: object) -> list[TemplateEntry] | None:
        """The answer kept for ``profile`` (one entry per ordering class), else one of a query
        alike but for amounts, translated to this query's amounts (kept then), else ``None``."""
        found = self.profile_templates.get(profile)
        if found is not None:
            return found
        if not self.pattern_read:
            self.pattern_read = True
            pattern = self.pattern()
            if pattern is not None:
                self.pattern_templates = pattern_answers(self.plan, pattern)
        if self.pattern_templates is not None:
            theirs = self.pattern_templates.get(profile)
            if theirs is not None:
                found = translated(theirs, self.plan)
                if len(self.profile_templates) < self.MAX_TEMPLATES:
                    self.profile_templates[profile] = found
        return found

    def pattern(self) -> tuple[object, ...] | None:
        """``amount_patterns.pattern_key`` of the plan (what queries alike but for their
        amounts share), computed once per search; ``None`` when not shared."""
        if not self._pattern_known:
            self._pattern_known = True
            self._pattern = pattern_key(self.plan)
        return self._pattern

    def amount_profile(self, root: int) -> object | None:
        """``(pattern, profile)``: equal for two roots, in this search or in another of a query
        alike but for its amounts (``amount_patterns.pattern_key``) on this snapshot lineage,
        only when their candidates are the same assignments of slots to member positions
        (their amounts aside: one pattern, one tree profile); ``None`` when roots are not read
        by room codes (``in_tree``, a sharing provider anchored at ``root``, no codes) or the
        pattern is not shared."""
        if self.codes is None:
            return None
        profile = self._profile(root)
        if profile is None:
            return None
        pattern = self.pattern()
        return None if pattern is None else (pattern, profile)

    def _entry_orderings(self, entry: TemplateEntry) -> Iterator[TemplateEntry]:
        """``entry`` and its reorderings, in positions."""
        first = True
        for chosen in expand(list(entry.chosen), self.plan.unit_runs):
            if first:
                first = False
                yield entry
            else:
                yield TemplateEntry(tuple(chosen), entry.allocations)

    def orderings(self, base: Candidate) -> Iterator[Candidate]:
        """``base`` and every other candidate from reordering its interchangeable units (the
        same resources, providers and allocations), lazily; ``base`` first."""
        runs = self.plan.unit_runs
        if not runs:
            yield base
            return
        first = True
        for chosen in expand(list(base.chosen), runs):
            if first:
                first = False
                yield base
                continue
            yield Candidate(base.anchor, tuple(chosen), base.allocations, base.layout)

    def _profile(self, root: int) -> object | None:
        """What decides ``root``'s answer up to renaming its tree's members (``None``: the
        root must be searched, ``in_tree`` or a sharing provider anchored there): its tree's
        shape and the room codes of its members, or its exact look."""
        fleet = self.plan.fleet
        if not self.by_profile or root in fleet.shared_into:
            return None
        codes = self.codes
        if codes is None:
            return fleet.root_profiles[root]
        classes = self.profile_classes
        if classes is None:
            return (fleet.shape_profiles[root], codes.of(fleet, fleet.tree[root]))
        number = int(classes[root])
        found = self.class_profiles.get(number)
        if found is None:
            found = (fleet.shape_profiles[root], codes.of(fleet, fleet.tree[root]))
            self.class_profiles[number] = found
        return found

    def classify_roots(self) -> Any:
        """Every root's look-alike class at once, read by ``_profile`` from now on
        (``use_profile_classes``), and returned: ``root_classes.profile_classes`` of this plan's
        snapshot and room codes, an int32 array per provider index (-1 for non-roots), kept per
        snapshot and query amounts. ``None`` (nothing changed) when roots are not read by
        profile (``in_tree``) or the query has no room codes. Raises nothing.

        O(providers) in numpy once per snapshot and amounts (about 6 ns a provider at 100,000
        hosts, and the snapshot's ``tree_layout`` when not built yet), then one look-up per root
        instead of gathering each root's member codes (``RoomCodes.of``, about 2 us a root): for
        searches that read all roots or many (a ranked search that bounds them all, an unranked
        one without a limit or with a large one: ``snapshot_engine.CLASSIFY_SHARE``), not for
        one that may stop after a few (issue 30)."""
        if not self.by_profile or self.codes is None:
            return None
        fleet = self.plan.fleet
        kept = per_snapshot(fleet, "profile-classes")
        key = amounts_key(self.plan)
        classes = kept.get(key)
        if classes is None:
            classes = keep_per_amounts(kept, key, profile_classes(fleet, self.codes.whole(fleet)))
        self.use_profile_classes(classes)
        return classes

    def use_profile_classes(self, classes: Any) -> None:
        """Read profiles per class of look-alike roots from now on: ``classes`` is
        ``root_classes.profile_classes`` of this plan's snapshot and room codes (equal exactly
        for roots of one shape whose members have the same codes), so the profile of one root
        of a class is every root's of that class (``classify_roots``: one dict look-up per
        root instead of gathering its members' codes)."""
        self.profile_classes = classes
        self.class_profiles = {}
        self.class_answers = ({}, {})

    def bases(self, root: int) -> Iterator[Candidate]:
        """Candidates anchored at ``root`` with interchangeable units in non-decreasing order
        (one per ordering class), lazily, in a deterministic depth-first order."""
        plan = self.plan
        fleet = plan.fleet
        layout = self.layout
        profile = self._profile(root)
        known = self.replayed(root, orderings=False)
        if known is not None:
            yield from known
            return
        options = self.options(root)
        if options is None:
            if profile is not None:
                self._record(profile, [])
            return
        relevant = sorted(set().union(*options))
        pos = {p: k for k, p in enumerate(relevant)}
        signature = self._signature(options, relevant, pos)
        template = self.templates.get(signature)
        if template is not None:
            results: Iterator[TemplateEntry] = iter(template)
        else:
            results = (
                TemplateEntry(
                    tuple([pos[p] for p in chosen]),
                    tuple([(pos[p], rc, a) for p, rc, a in allocations]),
                )
                for chosen, allocations in search_assignments(plan, options)
            )
        recorded = []
        by_member = []
        where = {m: k for k, m in enumerate(fleet.tree[root])} if profile is not None else {}
        for entry in results:
            if template is None:
                recorded.append(entry)
            candidate = Candidate.replayed(root, relevant, entry, layout)
            if profile is not None:
                chosen = candidate.chosen
                allocations = candidate.allocations
                by_member.append(
                    TemplateEntry(
                        tuple([where[p] for p in chosen]),
                        tuple([(where[p], rc, a) for p, rc, a in allocations]),
                    )
                )
            yield candidate
        if template is None and len(self.templates) < self.MAX_TEMPLATES:
            self.templates[signature] = recorded
        if profile is not None:
            self._record(profile, by_member)

    def _record(self, profile: object, entries: list[TemplateEntry]) -> None:
        """Keep a searched profile's answer for this query (up to ``MAX_TEMPLATES`` profiles)
        and for those alike but for amounts (all dropped past ``MAX_TEMPLATES``: they outlive
        a query, and claims keep making new profiles)."""
        if len(self.profile_templates) < self.MAX_TEMPLATES:
            self.profile_templates[profile] = entries
        alike = self.pattern_templates
        if alike is not None:
            if len(alike) >= self.MAX_TEMPLATES:
                alike.clear()
            alike[profile] = entries

    def _signature(
        self, options: list[list[int]], relevant: list[int], pos: dict[int, int]
    ) -> tuple[object, ...]:
        providers = self.plan.fleet.providers
        rooms = []
        for p in relevant:
            inventories = providers[p].inventories
            for rc in self.rcs:
                inv = inventories.get(rc)
                rooms.append(-1 if inv is None else min(inv.max_unit, inv.capacity - inv.used))
        ancestry: tuple[object, ...] = ()
        if self.plan.subtree_sets:
            chains = self.plan.fleet.chains
            ancestry = tuple(tuple(pos[a] for a in chains[p] if a in pos) for p in relevant)
        traits: tuple[object, ...] = ()
        if self.trait_names:
            traits = tuple(providers[p].traits & self.trait_names for p in relevant)
        return (
            tuple(tuple(pos[p] for p in opts) for opts in options),
            tuple(rooms),
            ancestry,
            traits,
        )


class RootView:
    """The snapshot engine's ``protocol.RootBoundView``: what a rank bound (``RankBoundFn``)
    may read about one anchor root before it is searched.

    * ``root``: the root's index; ``plan``: the ``QueryPlan`` (``plan.slots[k]``: ``.group``,
      ``.suffixed``, ``.resources``; ``plan.subtree_sets``; ``plan.isolate``; ``plan.groups``);
    * ``profile``: ``fleet.root_profiles[root]`` when the root's options and candidates depend
      only on its tree's look (no ``in_tree``, no sharing provider anchored there), else ``None``;
      two roots with the same profile have the same options position by position;
    * ``amount_profile``: ``RootSearch.amount_profile`` (the profile across queries alike but
      for their amounts), or ``None``;
    * ``cache``: a dict shared by every view of one search (for per-profile memos);
    * ``options()``: providers per slot for this root (``None``: some slot has none, so the
      root has no candidate).
    """

    __slots__ = ("searcher", "root", "profile")

    def __init__(self, searcher: RootSearch, root: int) -> None:
        self.searcher = searcher
        self.root = root
        fleet = searcher.plan.fleet
        self.profile: int | None = (
            fleet.root_profiles[root]
            if searcher.by_profile and root not in fleet.shared_into
            else None
        )

    @property
    def plan(self) -> QueryPlan:
        """The ``QueryPlan`` being searched."""
        return self.searcher.plan

    @property
    def fleet(self) -> FleetSnapshot:
        """The ``FleetSnapshot`` the plan was made for."""
        return self.searcher.plan.fleet

    @property
    def amount_profile(self) -> object | None:
        """``RootSearch.amount_profile`` of this root (hashable), or ``None``."""
        return self.searcher.amount_profile(self.root)

    @property
    def cache(self) -> dict[object, object]:
        """A dict shared by every view of one search (per-profile memos of a rank bound)."""
        return self.searcher.bound_cache

    def options(self) -> list[list[int]] | None:
        """Provider indices per slot for this root; ``None`` when some slot has none."""
        return self.searcher.options(self.root)


RankFnT = Callable[[Candidate, FleetSnapshot], Any]
