-- Saved queries for `diffimax query --saved NAME` (views from views.sql).
-- Each block: `-- name: NAME`, one description line, then one statement ending in `;`.
-- Rates carry a Wilson 95 % interval (wilson_low / wilson_high) and the count behind them.

-- name: fall-rate-by-rating
-- Fall rate at trap nodes by the responder's rating band (200 points).
with nodes as (
    select (mover_rating // 200) * 200 as rating_band, fell
    from outcomes where trap_node and mover_rating is not null
),
final as (
    select rating_band, count(*) as trap_nodes, sum(fell::int) as fell,
           wilson_low(sum(fell::int), count(*)) as wilson_low,
           sum(fell::int) / count(*) as fall_rate,
           wilson_high(sum(fell::int), count(*)) as wilson_high
    from nodes group by rating_band
)
select * from final order by rating_band;

-- name: fall-rate-by-time-control
-- Fall rate at trap nodes by time-control class.
with final as (
    select time_control_class, count(*) as trap_nodes, sum(fell::int) as fell,
           wilson_low(sum(fell::int), count(*)) as wilson_low,
           sum(fell::int) / count(*) as fall_rate,
           wilson_high(sum(fell::int), count(*)) as wilson_high
    from outcomes where trap_node group by time_control_class
)
select * from final order by trap_nodes desc, time_control_class;

-- name: fall-rate-by-clock
-- Fall rate at trap nodes by the responder's clock when deciding.
with nodes as (
    select clock_bucket(clock_seconds) as clock, fell
    from outcomes where trap_node and clock_seconds is not null
),
final as (
    select clock, count(*) as trap_nodes, sum(fell::int) as fell,
           wilson_low(sum(fell::int), count(*)) as wilson_low,
           sum(fell::int) / count(*) as fall_rate,
           wilson_high(sum(fell::int), count(*)) as wilson_high
    from nodes group by clock
)
select * from final order by clock;

-- name: fall-rate-by-dip
-- How often each root trap candidate of the primary judge was played, by its dip (0.25-pawn buckets).
with candidates as (
    select floor(least(dip, 1000) / 25.0) * 0.25 as dip_from, fell from root_candidates where by_primary
),
final as (
    select dip_from, dip_from + 0.25 as dip_to, count(*) as candidates, sum(fell::int) as played,
           wilson_low(sum(fell::int), count(*)) as wilson_low,
           sum(fell::int) / count(*) as play_rate,
           wilson_high(sum(fell::int), count(*)) as wilson_high
    from candidates group by dip_from
)
select * from final order by dip_from;

-- name: fall-rate-by-trap-count
-- Fall rate at trap nodes by how many trap candidates the node had.
with final as (
    select least(trap_count, 10) as trap_candidates, count(*) as trap_nodes, sum(fell::int) as fell,
           wilson_low(sum(fell::int), count(*)) as wilson_low,
           sum(fell::int) / count(*) as fall_rate,
           wilson_high(sum(fell::int), count(*)) as wilson_high
    from outcomes where trap_node group by least(trap_count, 10)
)
select * from final order by trap_candidates;

-- name: lift
-- Observed falls against a uniformly random meaningful reply (trap_count / meaningful per node).
with nodes as (
    select fell, trap_count::double / meaningful as chance, mover_rating
    from outcomes where trap_node and meaningful > 0
),
final as (
    select count(*) as trap_nodes, sum(fell::int) as fell, sum(chance) as expected_by_chance,
           wilson_low(sum(fell::int), count(*)) as wilson_low,
           sum(fell::int) / count(*) as fall_rate,
           wilson_high(sum(fell::int), count(*)) as wilson_high,
           avg(chance) as chance_rate,
           sum(fell::int) / nullif(sum(chance), 0) as lift
    from nodes
)
select * from final;

-- name: top-trap-positions
-- Trap positions where humans fell, by the Wilson lower bound of the fall rate, then the larger mean loss of those who fell (points of Win%), games, the earliest ply, the FEN; positions reached fewer than 3 times are marked few_occurrences and come last; with a game to see it in and that game's opening.
with nodes as (
    select position_key, min(fen) as fen, count(*) as games, sum(fell::int) as fell,
           avg(played_win_pct_lost) filter (where fell) as fallen_win_pct_lost,
           min(trap_count) as trap_candidates, min(best_move_uci) as best_move, min(ply) as ply,
           arg_min(opening, (not fell, game_id)) as opening, arg_min(link, (not fell, game_id)) as example_game
    from outcomes where trap_node group by position_key
),
final as (
    select *, wilson_low(fell, games) as wilson_low, fell / games as fall_rate, wilson_high(fell, games) as wilson_high,
           few_occurrences(games) as few_occurrences
    from nodes
)
-- the moves named in SAN for the rows kept (the UCI beside them)
select * replace (san(fen, best_move) as best_move), best_move as best_move_uci
from (
    select * from final where fell > 0
    order by few_occurrences, wilson_low desc, fallen_win_pct_lost desc nulls last, games desc, ply, fen limit 25
);

-- name: top-players
-- Players who set and who fell for the most traps (as setter: the responder fell; as responder: they fell).
with set_traps as (
    select setter_name as player, count(*) filter (where trap_node) as trap_nodes_set,
           count(*) filter (where fell) as opponents_fell
    from outcomes group by setter_name
),
fell_for as (
    select responder_name as player, count(*) filter (where trap_node) as trap_nodes_faced,
           count(*) filter (where fell) as fell
    from outcomes group by responder_name
),
final as (
    select coalesce(s.player, f.player) as player, coalesce(trap_nodes_set, 0) as trap_nodes_set,
           coalesce(opponents_fell, 0) as opponents_fell, coalesce(trap_nodes_faced, 0) as trap_nodes_faced,
           coalesce(fell, 0) as fell
    from set_traps s full outer join fell_for f on s.player = f.player
)
select * from final order by opponents_fell + fell desc, player limit 25;

-- name: trap-setting-choice
-- How often a player chose a trap-setting move when one was within the safety margin, against chance (needs --setter-choices).
with choices as (
    select chose_trap_move::int as chose,
           len(choice_trap_moves)::double / len(choice_moves) as chance
    from responses
    where choice_moves is not null and len(choice_trap_moves) > 0 and len(choice_moves) > 0
),
final as (
    select count(*) as positions, sum(chose) as chose_trap_move, sum(chance) as expected_by_chance,
           wilson_low(sum(chose), count(*)) as wilson_low,
           sum(chose) / count(*) as choice_rate,
           wilson_high(sum(chose), count(*)) as wilson_high,
           avg(chance) as chance_rate,
           sum(chose) / nullif(sum(chance), 0) as lift
    from choices
)
select * from final;

-- name: judge-comparison
-- Each judge side by side on the same positions: trap-node share, candidates, fall rate and lift over chance (Wilson 95 %), the median loss in pawns of those who fell and how many fell into a mate.
with judged as (
    -- positions where every judge the dataset computed gave a verdict
    select game_id, ply from judge_outcomes group by game_id, ply
    having count(*) = (select max(n) from (select count(*) as n from judge_outcomes group by game_id, ply))
),
nodes as (
    select j.* from judge_outcomes j join judged using (game_id, ply)
),
final as (
    select judge, count(*) as positions, count(*) filter (where trap_node) as trap_nodes,
           count(*) filter (where trap_node) / count(*) as trap_node_share,
           median(trap_count) filter (where trap_node) as median_candidates,
           avg(trap_count) filter (where trap_node) as mean_candidates,
           sum(fell::int) as fell,
           wilson_low(sum(fell::int), count(*) filter (where trap_node)) as fall_rate_low,
           sum(fell::int) / nullif(count(*) filter (where trap_node), 0) as fall_rate,
           wilson_high(sum(fell::int), count(*) filter (where trap_node)) as fall_rate_high,
           avg(chance) filter (where trap_node) as chance_rate,
           sum(fell::int) / nullif(sum(chance) filter (where trap_node), 0) as lift,
           wilson_low(sum(fell::int), count(*) filter (where trap_node))
               / nullif(avg(chance) filter (where trap_node), 0) as lift_low,
           wilson_high(sum(fell::int), count(*) filter (where trap_node))
               / nullif(avg(chance) filter (where trap_node), 0) as lift_high,
           -- a dip into a mate is no number of pawns (the mate score is 99,9xx): counted apart
           median(played_dip) filter (where fell and played_dip < 90000) / 100.0 as median_dip_fallen_pawns,
           count(*) filter (where fell and played_dip >= 90000) as fell_into_mate
    from nodes group by judge
)
select * from final order by lift desc nulls last, judge;

-- name: practical-traps
-- The practical judge's trap candidates by the Wilson lower bound of how often humans fell for them, then the larger loss (win_pct_lost: points of Win%), games, the FEN, the move; candidates met fewer than 3 times are marked few_occurrences and come last; with their evidence, opening and a game.
with candidates as (
    select root_key as position_key, move_uci as move, min(node_fen) as fen, min(best_move_uci) as best_move,
           count(*) as games, sum(fell::int) as fell, avg(model_p) as model_p, min(win_pct_lost) as win_pct_lost,
           min(dip) as dip, dip_pawns(min(dip), arg_min(best_value, dip), arg_min(value, dip)) as dip_pawns,
           min(refutation_uci) as refutation, arg_min(opening, (not coalesce(fell, false), game_id)) as opening,
           arg_min(link, (not coalesce(fell, false), game_id)) as example_game
    from root_candidates where by_practical
    group by root_key, move_uci
),
final as (
    select *, wilson_low(fell, games) as wilson_low, fell / games as fall_rate, wilson_high(fell, games) as wilson_high,
           few_occurrences(games) as few_occurrences
    from candidates
)
-- the moves named in SAN for the rows kept (the UCI beside them)
select * replace (san(fen, move) as move, san(fen, best_move) as best_move,
                  san_line_after(fen, move, refutation) as refutation),
       move as move_uci, best_move as best_move_uci, refutation as refutation_uci
from (
    select * exclude (dip) from final
    order by few_occurrences, wilson_low desc, win_pct_lost desc, games desc, fen, move limit 50
);

-- name: traps-by-opening
-- Trap nodes and falls by opening (Lichess's name from the moves) and the responder's rating band (200 points), with Wilson 95 % intervals; ties by opening and band.
with nodes as (
    select coalesce(eco, '?') as eco, coalesce(opening, '(unnamed)') as opening,
           (mover_rating // 200) * 200 as rating_band, fell
    from outcomes where trap_node
),
final as (
    select eco, opening, rating_band, count(*) as trap_nodes, sum(fell::int) as fell,
           wilson_low(sum(fell::int), count(*)) as wilson_low,
           sum(fell::int) / count(*) as fall_rate,
           wilson_high(sum(fell::int), count(*)) as wilson_high
    from nodes group by eco, opening, rating_band
)
select * from final order by trap_nodes desc, fell desc, opening, rating_band nulls last;

-- name: calibration
-- The fall probability against how often humans fell (played_fell), by tenth of fall_p: occurrences, mean fall_p, observed fall rate (Wilson 95 %); a row 'all' per group (overall, 200-point rating band, clock) with its expected calibration error (ece) and Brier score.
with judged as (
    -- every occurrence with a fall estimate; `played_fell` is null where the played move has no value
    select fall_p::double as fall_p, played_fell::int as fell, (mover_rating // 200) * 200 as rating_band,
           clock_bucket(clock_seconds) as clock
    from outcomes where fall_p is not null
),
groups as (
    select 'overall' as grouping, 1 as grouping_order, null::int as band_order, 'all' as group_value, fall_p, fell
    from judged
    union all
    select 'band', 2, rating_band, rating_band::varchar, fall_p, fell from judged where rating_band is not null
    union all
    select 'clock', 3, null, clock, fall_p, fell from judged where clock is not null
),
bins as (
    select grouping, grouping_order, band_order, group_value, least(floor(fall_p * 10), 9)::int as tenth,
           count(*) as occurrences, sum(fell) as fell, avg(fall_p) as fall_p, sum((fall_p - fell) ^ 2) as squared_error
    from groups where fell is not null
    group by grouping, grouping_order, band_order, group_value, tenth
),
totals as (
    select grouping, grouping_order, band_order, group_value, null::int as tenth, sum(occurrences) as occurrences,
           sum(fell) as fell, sum(fall_p * occurrences) / sum(occurrences) as fall_p,
           sum(occurrences * abs(fell / occurrences - fall_p)) / sum(occurrences) as ece,
           sum(squared_error) / sum(occurrences) as brier
    from bins group by grouping, grouping_order, band_order, group_value
),
unvalued as (
    select grouping, group_value, count(*) filter (where fell is null) as played_unvalued
    from groups group by grouping, group_value
),
merged as (
    select grouping, grouping_order, band_order, group_value, tenth, occurrences, fell, fall_p,
           null::double as ece, null::double as brier, null::bigint as played_unvalued
    from bins
    union all
    select t.grouping, t.grouping_order, t.band_order, t.group_value, t.tenth, t.occurrences, t.fell, t.fall_p, t.ece,
           t.brier, u.played_unvalued
    from totals t join unvalued u using (grouping, group_value)
),
final as (
    select grouping, group_value,
           coalesce(printf('%.1f-%.1f', tenth / 10, (tenth + 1) / 10), 'all') as fall_p_bin,
           occurrences, fell, fall_p, wilson_low(fell, occurrences) as wilson_low, fell / occurrences as fall_rate,
           wilson_high(fell, occurrences) as wilson_high, ece, brier, played_unvalued,
           grouping_order, band_order, tenth
    from merged
)
select * exclude (grouping_order, band_order, tenth) from final
order by grouping_order, band_order nulls first, group_value, tenth nulls first;

-- name: trickiest-positions
-- Positions by how often humans fell there (played_fell), per 200-point rating band and clock, with the mean fall_p beside the observed rate: by the rate's Wilson lower bound, then the larger expected loss (expected_win_pct_lost, points of Win%); groups of fewer than 3 occurrences are marked few_occurrences and come last.
with judged as (
    select position_key, fen, ply, game_id, link, opening, best_move_uci, move_played_uci, played_fell, fall_p,
           expected_win_pct_lost,
           (mover_rating // 200) * 200 as rating_band, clock_bucket(clock_seconds) as clock
    from outcomes where fall_p is not null and played_fell is not null
),
fallen as (
    -- the move humans fell with most often in each group (ties: the first in UCI's order)
    select position_key, rating_band, clock, arg_min(move_played_uci, (-times, move_played_uci)) as fell_with
    from (
        select position_key, rating_band, clock, move_played_uci, count(*) as times
        from judged where played_fell group by position_key, rating_band, clock, move_played_uci
    )
    group by position_key, rating_band, clock
),
groups as (
    select position_key, rating_band, clock, min(fen) as fen, count(*) as occurrences,
           count(*) filter (where played_fell) as fell, avg(fall_p) as fall_p, avg(expected_win_pct_lost) as expected_win_pct_lost,
           min(best_move_uci) as best_move, min(ply) as ply, arg_min(opening, (not played_fell, game_id, ply)) as opening,
           arg_min(link, (not played_fell, game_id, ply)) as example_game
    from judged group by position_key, rating_band, clock
),
final as (
    select g.fen, g.rating_band, g.clock, g.occurrences, g.fell, wilson_low(g.fell, g.occurrences) as wilson_low,
           g.fell / g.occurrences as fall_rate, wilson_high(g.fell, g.occurrences) as wilson_high, g.fall_p,
           g.expected_win_pct_lost, g.best_move, f.fell_with, g.opening, g.example_game,
           few_occurrences(g.occurrences) as few_occurrences, g.ply
    from groups g
    join fallen f on f.position_key = g.position_key and f.rating_band is not distinct from g.rating_band
        and f.clock is not distinct from g.clock
)
-- the moves named in SAN for the rows kept (the UCI beside them)
select * replace (san(fen, best_move) as best_move, san(fen, fell_with) as fell_with),
       best_move as best_move_uci, fell_with as fell_with_uci
from (
    select * exclude (ply) from final
    order by few_occurrences, wilson_low desc, expected_win_pct_lost desc, occurrences desc, ply, fen,
             rating_band nulls last, clock nulls last
    limit 50
);
