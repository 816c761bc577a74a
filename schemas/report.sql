-- Queries of `diffimax report` beyond the saved ones (views from views.sql).
-- Each block: `-- name: NAME`, one description line, then one statement ending in `;`.
-- $keys is the list of position keys drawn as boards, $limit a row count.

-- name: trap-candidates
-- Root trap candidates at the drawn positions: how often each was a candidate there and was played, smallest dip (cp, and for people) and best rank.
with final as (
    -- the move in UCI: the boards draw it
    select root_key as position_key, move_uci as move, count(*) as occurrences, count(*) filter (where fell) as played,
           min(dip) as dip, dip_pawns(min(dip), arg_min(best_value, dip), arg_min(value, dip)) as dip_pawns,
           min(rank) as rank
    from root_candidates where by_primary and list_contains($keys, root_key)
    group by root_key, move_uci
)
select * from final order by position_key, played desc, occurrences desc, rank, move;

-- name: humans-played
-- What humans played at the drawn positions, with the outcome and how often.
with final as (
    select position_key, move_played, outcome, count(*) as times
    from outcomes where list_contains($keys, position_key)
    group by position_key, move_played, outcome
)
select * from final order by position_key, times desc, move_played;

-- name: last-move
-- The moves that led to each drawn position, most often first (known when the ply before is analysed too).
with final as (
    select o.position_key, p.move_uci, count(*) as times
    from outcomes o join positions p on p.game_id = o.game_id and p.ply = o.ply - 1
    where list_contains($keys, o.position_key)
    group by o.position_key, p.move_uci
)
select * from final order by position_key, times desc, move_uci;

-- name: example-games
-- Up to $limit games that reached each drawn position, those where the human fell first.
with final as (
    select o.position_key, o.game_id, o.ply, o.game, o.link, o.opening, o.move_played, o.outcome
    from outcomes o join games g using (game_id)
    where list_contains($keys, o.position_key)
    qualify row_number() over (partition by o.position_key order by o.fell desc, o.game_id, o.ply) <= $limit
)
select * from final order by position_key, outcome = 'fell' desc, game_id, ply;

-- name: error-counts
-- Errors by stage.
with final as (
    select stage, count(*) as errors from errors group by stage
)
select * from final order by stage;

-- name: first-errors
-- The first $limit errors, by stage, source, game and ply.
with final as (
    select stage, source, game_index, game_id, ply, reason from errors
)
select * from final order by stage, source, game_index, ply limit $limit;
