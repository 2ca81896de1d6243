"""Reserved places in the top of a pack: each path's strongest hits and the best sessions (issue 17, item 7).

Weighted RRF rewards agreement between paths. An evidence turn that only one
path ranks first (BM25 found the rare word, or the vectors the paraphrase)
scores like a turn ranked 30th by three paths and can fall out of the top 10;
on the LoCoMo dev split 27% of the evidence turns missing from the top 10 were
in the top 10 of BM25 or of the vectors. A pack also crowds into one
conversation (4 sessions in the top 10 on average, and 44% of questions get
five or more turns of one session), so evidence spread over several sessions
is found in only a quarter of those questions.

:func:`reserve_slots` keeps the fused order and only moves a few items up into
the first ``PROTECT_WITHIN`` places, displacing the lowest-ranked others there:
the first ``PROTECT_PER_PATH`` eligible hits of each protected path, the best
turn of each speaker an "X and Y" question names, then the
best turn of each of the ``SESSION_SLOTS`` best-ranked sessions the top holds
none of. A session ranks by the sum of its turns' best ``SESSION_TURNS`` fused
scores (the session path: a conversation is judged as a whole, not by one line).
Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

PROTECTED_PATHS = ("bm25", "vector")
PROTECT_PER_PATH = 1        # each protected path's first eligible hits kept in the top
PROTECT_WITHIN = 10         # the places protected (a pack's default size)
SESSION_SLOTS = 3           # places for sessions the top would otherwise miss (dev: 2 → 3 +3 points session_all@10)
SESSION_RANKED = 6          # the best sessions that may claim one
SESSION_TURNS = 3           # a session's score: the sum of its best turns' fused scores
PERSON_SLOTS = True         # "X and Y" questions: each named speaker's best turn gets a place
MAX_RESERVED = 5            # at most this many places of the top are moved items (4 sessions, 6: −2.4 all@10)


def session_ranking(fused: Sequence[tuple[int, float]], session_of: Mapping[int, str | None]) -> list[str]:
    """Sessions best first, each scored by the sum of its best ``SESSION_TURNS`` fused scores."""
    best: dict[str, list[float]] = {}
    for item, score in fused:
        session = session_of.get(item)
        if session is not None and len(best.setdefault(session, [])) < SESSION_TURNS:
            best[session].append(score)   # fused is best first, so these are the session's best
    return sorted(best, key=lambda s: (-sum(best[s]), s))


def promoted(ranked: Sequence[tuple[int, float]], rankings: Mapping[str, Sequence[int]],
             fused: Sequence[tuple[int, float]], session_of: Mapping[int, str | None],
             speaker_of: Mapping[int, str | None] | None = None, whose: Iterable[str] = (),
             protected_paths: Sequence[str] = PROTECTED_PATHS) -> list[int]:
    """The items that must be in the top: each protected path's first eligible hits; when the question names
    two or more speakers (``whose``, name keys), each one's best turn; then the best turn of each
    high-ranked session the top lacks. Only items of ``ranked`` (the eligible candidates) are chosen."""
    eligible = {item for item, _ in ranked}
    head = [item for item, _ in ranked[:PROTECT_WITHIN]]
    chosen: list[int] = []
    for path in protected_paths:
        hits = [item for item in rankings.get(path, ()) if item in eligible][:PROTECT_PER_PATH]
        chosen += [item for item in hits if item not in chosen]
    people = sorted(set(whose))
    if PERSON_SLOTS and len(people) > 1 and speaker_of:
        for person in people:
            best = next((item for item, _ in ranked if _key(speaker_of.get(item)) == person), None)
            if best is not None and best not in chosen:
                chosen.append(best)
    if SESSION_SLOTS > 0:
        present = {session_of.get(item) for item in head + chosen}
        best_turn: dict[str, int] = {}
        for item, _ in ranked:
            session = session_of.get(item)
            if session is not None and session not in best_turn:
                best_turn[session] = item
        fused_eligible = [(item, score) for item, score in fused if item in eligible]
        missing = [s for s in session_ranking(fused_eligible, session_of)[:SESSION_RANKED]
                   if s not in present and s in best_turn]
        chosen += [best_turn[s] for s in missing[:SESSION_SLOTS]]
    return chosen[:MAX_RESERVED]


def _key(name: str | None) -> str | None:
    return " ".join(name.casefold().split()) if name else None


def reserve_slots(ranked: Sequence[tuple[int, float]], rankings: Mapping[str, Sequence[int]],
                  fused: Sequence[tuple[int, float]], session_of: Mapping[int, str | None],
                  speaker_of: Mapping[int, str | None] | None = None,
                  whose: Iterable[str] = ()) -> list[tuple[int, float]]:
    """``ranked`` with the :func:`promoted` items moved into its first ``PROTECT_WITHIN`` places.

    The items already there stay in order; a moved item takes the place of the lowest-ranked
    unprotected one, which becomes the first item after the top. Scores are kept falling.
    """
    must = promoted(ranked, rankings, fused, session_of, speaker_of, whose)
    head = list(ranked[:PROTECT_WITHIN])
    tail = list(ranked[PROTECT_WITHIN:])
    head_items = {item for item, _ in head}
    moving = [pair for pair in tail if pair[0] in must and pair[0] not in head_items]
    if not moving:
        return list(ranked)
    moving.sort(key=lambda pair: must.index(pair[0]))
    keep = set(must)
    displaced: list[tuple[int, float]] = []
    for index in range(len(head) - 1, -1, -1):
        if len(displaced) == len(moving):
            break
        if head[index][0] not in keep:
            displaced.insert(0, head.pop(index))
    moving = moving[:len(displaced)]
    moved = {item for item, _ in moving}
    floor = head[-1][1] if head else 0.0
    head += [(item, min(score, floor)) for item, score in moving]
    rest = displaced + [pair for pair in tail if pair[0] not in moved]
    top = min((score for _, score in head), default=0.0)
    return head + [(item, min(score, top) - (rank + 1) * 1e-9) for rank, (item, score) in enumerate(rest)]
