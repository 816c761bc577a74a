-- Candidates of `diffimax puzzles` (views from views.sql).
-- Each block: `-- name: NAME`, one description line, then one statement ending in `;`.
-- $min_dip_cp is the smallest trap dip asked for, in centipawns (setter's view). Moves are UCI:
-- the puzzles replay them (the views' `*_uci`).

-- name: punish-candidates
-- Root trap records the human fell into, with the root position, the setter's value there before the trap move, and whether the practical judge names the move.
with final as (
    select t.game_id, t.ply, p.fen, t.move_uci as move, t.dip, t.refutation_uci as refutation, r.value as start_cp,
           coalesce(t.by_practical, false) as by_practical, t.link
    from root_candidates t
    join positions p on p.game_id = t.game_id and p.ply = t.ply
    join responses r on r.game_id = t.game_id and r.ply = t.ply
    where t.by_primary and t.fell and t.dip >= $min_dip_cp and p.move_uci = t.move_uci
)
select * from final order by game_id, ply;

-- name: set-candidates
-- One trap per root (the one the human played, else the deepest dip), the two plies before it, the miner's own view of the setting move (the setter's turn at ply - 1) and the root's practical trap chance.
with picked as (
    select t.*, row_number() over (
        partition by t.game_id, t.ply order by t.fell desc nulls last, t.dip desc, t.move_uci
    ) as pick
    from root_candidates t
    where t.by_primary and t.dip >= $min_dip_cp
),
chances as (
    select game_id, ply, coalesce(sum(model_p) filter (where by_practical), 0) as trap_chance
    from root_candidates
    group by game_id, ply
),
final as (
    select c.game_id, c.ply, c.move_uci as move, c.dip, c.refutation_uci as refutation, c.fell, coalesce(c.by_practical, false) as by_practical,
           before.fen as fen, before.move_uci as prior_move, setting.move_uci as setting_move,
           screen.move_played_uci = screen.best_move_uci as setting_best,
           list_min([r.dip for r in screen.responses if r.move <> screen.best_move_uci and r.excluded is null])
               as second_dip,
           screen.played_dip as setting_dip, root.mover_rating as opponent_rating, k.trap_chance,
           game_link(g.url, c.ply - 2) as link
    from picked c
    join games g on g.game_id = c.game_id
    join chances k on k.game_id = c.game_id and k.ply = c.ply
    left join positions root on root.game_id = c.game_id and root.ply = c.ply
    left join positions before on before.game_id = c.game_id and before.ply = c.ply - 2
    left join positions setting on setting.game_id = c.game_id and setting.ply = c.ply - 1
    left join responses screen on screen.game_id = c.game_id and screen.ply = c.ply - 1
    where c.pick = 1
)
select * from final order by game_id, ply;

-- name: puzzle-games
-- Every column of the games the candidates come from ($game_ids: a list of ids).
with final as (
    select * from games where list_contains($game_ids, game_id)
)
select * from final order by game_id;

-- name: game-count
-- Games in the dataset (the yield's denominator).
select count(*) as games from games;
