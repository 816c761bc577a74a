-- Candidates of `diffimax puzzles` (views from views.sql).
-- Each block: `-- name: NAME`, one description line, then one statement ending in `;`.
-- $min_dip_cp is the smallest trap dip asked for, in centipawns (setter's view).

-- name: punish-candidates
-- Root trap records the human fell into, with the root position and the game's headers.
with final as (
    select t.game_id, t.ply, p.fen, t.move, t.dip, t.refutation,
           g.site, g.event, g.date, g.white, g.black, g.white_elo, g.black_elo, g.opening, g.eco
    from root_candidates t
    join positions p on p.game_id = t.game_id and p.ply = t.ply
    join games g on g.game_id = t.game_id
    where t.by_primary and t.fell and t.dip >= $min_dip_cp and p.move_uci = t.move
)
select * from final order by game_id, ply;

-- name: set-candidates
-- One trap per root (the one the human played, else the deepest dip), the two plies before it, and the miner's own view of the setting move (the setter's turn at ply - 1).
with picked as (
    select t.*, row_number() over (
        partition by t.game_id, t.ply order by t.fell desc nulls last, t.dip desc, t.move
    ) as pick
    from root_candidates t
    where t.by_primary and t.dip >= $min_dip_cp
),
final as (
    select c.game_id, c.ply, c.move, c.dip, c.refutation, c.fell,
           before.fen as fen, before.move_uci as prior_move, setting.move_uci as setting_move,
           screen.move_played = screen.best_move as setting_best,
           list_min([r.dip for r in screen.responses if r.move <> screen.best_move and r.excluded is null])
               as second_dip,
           g.site, g.event, g.date, g.white, g.black, g.white_elo, g.black_elo, g.opening, g.eco
    from picked c
    join games g on g.game_id = c.game_id
    left join positions before on before.game_id = c.game_id and before.ply = c.ply - 2
    left join positions setting on setting.game_id = c.game_id and setting.ply = c.ply - 1
    left join responses screen on screen.game_id = c.game_id and screen.ply = c.ply - 1
    where c.pick = 1
)
select * from final order by game_id, ply;
