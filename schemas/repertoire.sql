-- The repertoire's nodes (`diffimax repertoire --out DIR`: DIR/nodes.parquet) and what real games say.
-- `{nodes}` is replaced by a scan of the repertoires' node files (listed in Python); several
-- repertoires (colours, ratings) can be read together.
-- Each named block: `-- name: NAME`, one description line, then one statement ending in `;`.

-- name: views
-- The view every saved query reads: one row per node, values in pawns, and the scores (an expected
-- score on Lichess's curve, 0..1 in the node files) in percent, as the PGN and the explorer print
-- them: `*_pct` for a score or a gain, `win_pct_lost` for what a reply gives up (the one name of a
-- loss of win chances in every output; 100 x a score is Lichess's Win%). Probabilities stay 0..1.
create or replace view repertoire_nodes as
select * exclude (score, gain, expected, move_gain, drop, trap_gain, observed_score, score_low, score_high),
       value_cp / 100.0 as value_pawns, round(score * 100, 1) as score_pct, round(gain * 100, 1) as gain_pct,
       round(expected * 100, 1) as expected_pct, round(move_gain * 100, 1) as move_gain_pct,
       round(drop * 100, 1) as win_pct_lost, round(trap_gain * 100, 1) as trap_gain_pct,
       round(observed_score * 100, 1) as observed_score_pct, round(score_low * 100, 1) as observed_score_low_pct,
       round(score_high * 100, 1) as observed_score_high_pct
from {nodes};

-- name: best-practical-lines-black-below-1200
-- The recommended moves of black repertoires against opponents rated below 1200, the largest practical gain first.
with moves as (
    select opponent_rating, line_san, move_san, move_gain_pct, expected_pct, reach, traps, trap_probability,
           trap_gain_pct, observed_count, observed_share, observed_score_pct
    from repertoire_nodes
    where color = 'black' and opponent_rating < 1200 and mover = 'player' and recommended
),
final as (
    select * from moves order by move_gain_pct desc, reach desc, line_san limit 50
)
select * from final;

-- name: best-practical-lines
-- The recommended moves of every repertoire read, the largest practical gain first.
with final as (
    select color, opponent_rating, line_san, move_san, move_gain_pct, expected_pct, reach, traps, trap_probability
    from repertoire_nodes
    where mover = 'player' and recommended
    order by move_gain_pct desc, reach desc, line_san
    limit 50
)
select * from final;

-- name: traps-by-likelihood
-- The traps the recommended moves set: the reply, its probability, what it gives up and the punishment.
with final as (
    select t.color, t.opponent_rating, t.line_san, t.move_san as trap, t.probability, t.win_pct_lost,
           t.punishment_san, t.observed_count, t.observed_share
    from repertoire_nodes t
    join repertoire_nodes m on m.repertoire = t.repertoire and m.node_id = t.parent_id
    where t.trap and m.recommended
    order by t.probability * t.win_pct_lost desc, t.line_san
)
select * from final;

-- name: evidence-rows
-- The moves humans played at the given positions, with the game's players' ratings, its result and where it comes from.
with final as (
    select p.position_key, p.move_uci, p.side_to_move, g.white_elo, g.black_elo, g.result, g.source,
           g.game_id, g.byte_offset, g.site, g.link
    from positions p
    join games g using (game_id)
    where p.position_key in (select unnest($keys::bigint[]))
)
select * from final;

-- name: game-openings
-- Every game's first plies (below $plies): the position, the move played, the players' ratings, the result and where the game comes from.
with final as (
    select p.game_id, p.ply, p.position_key, p.move_uci, g.white_elo, g.black_elo, g.result, g.source,
           g.byte_offset, g.site, g.link
    from positions p
    join games g using (game_id)
    where p.ply < $plies
)
select * from final order by game_id, ply;
