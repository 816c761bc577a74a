"""Response analysis at one opponent node, and the records DiffiMax produces.

This is pure classification: it takes the responses' values, however a backend obtained them,
and applies the spec's steps 1-10. Every backend (the native search, a UCI engine) calls it, so
the rules live in exactly one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from search.settings import DiffiMaxSettings
from search.values import Value, cp_to_pawns


@dataclass(frozen=True)
class ResponseValue:
    """One legal response as a backend measured it.

    `exact` is False when the backend settled the decision with a bound: a lower bound above
    v1 + R (not reasonable) or an upper bound below v1 + T (reasonable, too close to be a trap).
    Every response inside [v1 + T, v1 + R] must be exact, and so must the best response.
    """

    move: str
    tiebreak: tuple[int, str]
    value: Value
    exact: bool
    gives_check: bool
    is_capture: bool
    line: tuple[str, ...] = ()  # the principal variation after this response, when known


@dataclass(frozen=True)
class Response:
    move: str
    value: Value  # exact, or a bound when `exact` is False (see ResponseValue)
    exact: bool
    dip: Value  # value - v1 (a bound when not exact)
    # Ranks and scope order responses by (value, tiebreak); among bounds below v1 + T the order
    # is by bound, which never moves a response across a trap or reasonableness boundary.
    rank: int  # 1 = best, over all legal responses
    best: bool
    excluded: str | None  # "check" or "capture" when excluded from the alternatives
    alternative_rank: int | None  # 1 = strongest alternative; None if not an alternative
    in_scope: bool
    reasonable: bool  # dip <= R
    trap: bool  # trap candidate: an alternative in scope with T <= dip <= R


@dataclass(frozen=True)
class ResponseAnalysis:
    path: tuple[str, ...]  # moves from the root to this node
    node: str  # FEN for chess, the path for trees
    ply: int
    responder: str
    best: str
    best_value: Value
    responses: tuple[Response, ...]
    meaningful: int
    reasonable_count: int  # alternatives in scope with dip <= R
    trap_count: int
    trap_ratio: float  # trap_count / reasonable_count, 0 when no reasonable alternative

    @property
    def trap_node(self) -> bool:
        return self.trap_count > 0

    @property
    def candidates(self) -> tuple[Response, ...]:
        return tuple(r for r in self.responses if r.trap)


@dataclass(frozen=True)
class TrapRecord:
    path: tuple[str, ...]
    node: str
    ply: int
    responder: str
    best_move: str
    best_value: Value
    move: str
    value: Value
    dip: Value
    rank: int  # among the alternatives, 1 = strongest
    refutation: tuple[str, ...]

    def identity(self) -> tuple[Any, ...]:
        """What two correct searches must agree on (the refutation may differ between equal lines)."""
        return (self.path, self.best_move, self.best_value, self.move, self.value, self.dip, self.rank)


def classify_responses(
    values: Sequence[ResponseValue],
    settings: DiffiMaxSettings,
    *,
    path: tuple[str, ...] = (),
    node: str = "",
    ply: int = 0,
    responder: str = "",
) -> ResponseAnalysis:
    """Steps 2-10 of the spec for one non-terminal opponent node."""
    if not values:
        raise ValueError("response analysis needs at least one legal response")
    ordered = sorted(values, key=lambda r: (r.value, r.tiebreak))
    best = ordered[0]
    v1 = best.value
    reasonable_cp, trap_cp = settings.reasonable_cp, settings.trap_cp
    if not best.exact:
        raise ValueError(f"the best response {best.move} has only a bound")
    for response in ordered:
        if not response.exact and v1 + trap_cp <= response.value <= v1 + reasonable_cp:
            raise ValueError(f"response {response.move} has only a bound inside the trap range")

    def exclusion(response: ResponseValue) -> str | None:
        if settings.exclude_checks and response.gives_check:
            return "check"
        if settings.exclude_captures and response.is_capture:
            return "capture"
        return None

    meaningful = [r for r in ordered if exclusion(r) is None]
    is_trap_node_possible = len(meaningful) >= 2
    alternatives = [r for r in meaningful if r is not best]
    limit = settings.alternatives_in_scope
    in_scope = alternatives if limit is None else alternatives[:limit]
    alternative_rank = {id(r): index for index, r in enumerate(alternatives, start=1)}
    scoped = {id(r) for r in in_scope}

    responses = []
    for rank, r in enumerate(ordered, start=1):
        dip = r.value - v1
        reasonable = dip <= reasonable_cp
        is_scoped = id(r) in scoped
        responses.append(
            Response(
                move=r.move,
                value=r.value,
                exact=r.exact,
                dip=dip,
                rank=rank,
                best=r is best,
                excluded=exclusion(r),
                alternative_rank=alternative_rank.get(id(r)),
                in_scope=is_scoped,
                reasonable=reasonable,
                trap=is_trap_node_possible and is_scoped and trap_cp <= dip and reasonable,
            )
        )
    reasonable_count = sum(1 for r in responses if r.in_scope and r.reasonable)
    trap_count = sum(1 for r in responses if r.trap)
    return ResponseAnalysis(
        path=path,
        node=node,
        ply=ply,
        responder=responder,
        best=best.move,
        best_value=v1,
        responses=tuple(responses),
        meaningful=len(meaningful),
        reasonable_count=reasonable_count,
        trap_count=trap_count,
        trap_ratio=trap_count / reasonable_count if reasonable_count else 0.0,
    )


def trap_records(analysis: ResponseAnalysis, lines: dict[str, tuple[str, ...]]) -> list[TrapRecord]:
    """One record per trap candidate of `analysis`; `lines` maps a move to its refutation."""
    return [
        TrapRecord(
            path=analysis.path,
            node=analysis.node,
            ply=analysis.ply,
            responder=analysis.responder,
            best_move=analysis.best,
            best_value=analysis.best_value,
            move=r.move,
            value=r.value,
            dip=r.dip,
            rank=r.alternative_rank or 0,
            refutation=lines.get(r.move, ()),
        )
        for r in analysis.candidates
    ]


def response_json(response: Response) -> dict[str, Any]:
    data = asdict(response)
    data["value"] = cp_to_pawns(response.value)
    data["dip"] = cp_to_pawns(response.dip)
    return data


def analysis_json(analysis: ResponseAnalysis) -> dict[str, Any]:
    return {
        "path": list(analysis.path),
        "node": analysis.node,
        "ply": analysis.ply,
        "responder": analysis.responder,
        "best": analysis.best,
        "best_value": cp_to_pawns(analysis.best_value),
        "responses": [response_json(r) for r in analysis.responses],
        "meaningful": analysis.meaningful,
        "trap_node": analysis.trap_node,
        "reasonable_count": analysis.reasonable_count,
        "trap_count": analysis.trap_count,
        "trap_ratio": analysis.trap_ratio,
    }


def trap_json(record: TrapRecord) -> dict[str, Any]:
    data = asdict(record)
    data["path"] = list(record.path)
    data["refutation"] = list(record.refutation)
    for name in ("best_value", "value", "dip"):
        data[name] = cp_to_pawns(data[name])
    return data
