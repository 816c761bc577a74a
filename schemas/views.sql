-- DuckDB views over a diffimax dataset (schema version 4).
-- `{games}` and the like are replaced by a scan of the table's Parquet files in the dataset (listed
-- in Python, so that no character of the dataset's path is read as a glob), or by an empty table
-- of the right schema when no shard is committed yet.
-- Values are centipawns from the setter's view in the tables; *_pawns columns are for people.

-- Wilson score interval (95%) for k successes in n trials.
create or replace macro wilson_low(k, n) as
    case when n = 0 then null else greatest(0.0, least(k::double / n,
        ((k::double / n) + 1.96 ^ 2 / (2 * n)
         - 1.96 * sqrt((k::double / n) * (1 - k::double / n) / n + 1.96 ^ 2 / (4 * n * n)))
        / (1 + 1.96 ^ 2 / n)))
    end;
create or replace macro wilson_high(k, n) as
    case when n = 0 then null else least(1.0, greatest(k::double / n,
        ((k::double / n) + 1.96 ^ 2 / (2 * n)
         + 1.96 * sqrt((k::double / n) * (1 - k::double / n) / n + 1.96 ^ 2 / (4 * n * n)))
        / (1 + 1.96 ^ 2 / n)))
    end;

create or replace view games as
select * from {games};

create or replace view positions as
select * from {positions};

create or replace view responses as
select *, value / 100.0 as value_pawns, played_dip / 100.0 as played_dip_pawns
from {responses};

create or replace view traps as
select *, dip / 100.0 as dip_pawns, best_value / 100.0 as best_value_pawns, value / 100.0 as value_pawns
from {traps};

create or replace view errors as
select * from {errors};

-- The trap candidates at the analysed roots, each with whether the dataset's primary judge names it.
create or replace view root_candidates as
select t.*,
       case r.primary_judge
           when 'dip' then t.by_dip when 'trappy' then t.by_trappy when 'human' then t.by_human
           when 'model' then t.by_model when 'practical' then t.by_practical
       end is true as by_primary
from traps t
join responses r using (game_id, ply)
where t.path = [];

-- One row per analysed position and judge that gave a verdict there: was it a trap node by that
-- judge, how many candidates, did the human play one, and how often a uniformly random meaningful
-- reply would have been one of them (`chance`).
create or replace view judge_outcomes as
with verdicts as (
    select game_id, ply, 'dip' as judge, trap_node_dip as trap_node, trap_count_dip as trap_count,
           fell_dip as fell from responses where trap_node_dip is not null
    union all
    select game_id, ply, 'trappy', trap_node_trappy, trap_count_trappy, fell_trappy
    from responses where trap_node_trappy is not null
    union all
    select game_id, ply, 'human', trap_node_human, trap_count_human, fell_human
    from responses where trap_node_human is not null
    union all
    select game_id, ply, 'model', trap_node_model, trap_count_model, fell_model
    from responses where trap_node_model is not null
    union all
    select game_id, ply, 'practical', trap_node_practical, trap_count_practical, fell_practical
    from responses where trap_node_practical is not null
),
final as (
    select v.judge, v.game_id, v.ply, r.position_key, v.trap_node, v.trap_count, coalesce(v.fell, false) as fell,
           r.meaningful, v.trap_count::double / nullif(r.meaningful, 0) as chance,
           r.move_played, r.best_move, r.played_dip, r.played_win_drop, r.played_model_p,
           p.mover_rating, p.clock_seconds, g.time_control_class
    from verdicts v
    join responses r using (game_id, ply)
    join positions p using (game_id, ply)
    join games g using (game_id)
)
select * from final;

-- One row per analysed position, with what the human actually played there and the verdict of the
-- dataset's primary judge (`trap_node`, `trap_count`, `fell`; the practical judge where the dataset
-- has human evidence): best reply, fell (a candidate), a mistake it did not name (dip >= T), another
-- reply, an excluded reply, or a reply no judge needed valued (unmeasured).
create or replace view outcomes as
with joined as (
    select
        r.game_id, r.ply, r.position_key, r.setter, r.responder, r.best_move, r.move_played, r.primary_judge,
        r.played_class, r.played_dip, r.played_win_drop, r.played_model_p, r.value, r.reasonable_count,
        r.trap_ratio, r.meaningful, r.trap_dip, p.fen, p.move_san, p.mover_rating, p.clock_seconds,
        g.white, g.black, g.white_elo, g.black_elo, g.time_control_class, g.result,
        case r.setter when 'white' then g.white else g.black end as setter_name,
        case r.setter when 'white' then g.black else g.white end as responder_name,
        case r.setter when 'white' then g.white_elo else g.black_elo end as setter_rating,
        case r.primary_judge
            when 'dip' then r.trap_node_dip when 'trappy' then r.trap_node_trappy when 'human' then r.trap_node_human
            when 'model' then r.trap_node_model when 'practical' then r.trap_node_practical
        end is true as trap_node,
        coalesce(case r.primary_judge
            when 'dip' then r.trap_count_dip when 'trappy' then r.trap_count_trappy
            when 'human' then r.trap_count_human when 'model' then r.trap_count_model
            when 'practical' then r.trap_count_practical
        end, 0) as trap_count,
        case r.primary_judge
            when 'dip' then r.fell_dip when 'trappy' then r.fell_trappy when 'human' then r.fell_human
            when 'model' then r.fell_model when 'practical' then r.fell_practical
        end is true as fell,
        r.played_excluded is not null as played_excluded
    from responses r
    join positions p using (game_id, ply)
    join games g using (game_id)
),
final as (
    select
        *,
        case
            when move_played = best_move then 'best'
            when fell then 'fell'
            when played_excluded then 'excluded'
            when played_dip is null then 'unmeasured'
            when played_dip >= round(trap_dip * 100) then 'mistake'
            else 'reasonable'
        end as outcome
    from joined
)
select * from final;
