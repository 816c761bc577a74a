-- DuckDB views over a diffimax dataset (schema version 1).
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

-- One row per analysed position, with what the human actually played there:
-- best reply, fell (a trap candidate), other reasonable reply, unreasonable reply, excluded.
create or replace view outcomes as
with joined as (
    select
        r.game_id, r.ply, r.position_key, r.setter, r.responder, r.best_move, r.move_played,
        r.played_class, r.played_dip, r.value, r.trap_node, r.trap_count, r.reasonable_count,
        r.trap_ratio, r.meaningful, p.fen, p.move_san, p.mover_rating, p.clock_seconds,
        g.white, g.black, g.white_elo, g.black_elo, g.time_control_class, g.result,
        case r.setter when 'white' then g.white else g.black end as setter_name,
        case r.setter when 'white' then g.black else g.white end as responder_name,
        case r.setter when 'white' then g.white_elo else g.black_elo end as setter_rating
    from responses r
    join positions p using (game_id, ply)
    join games g using (game_id)
),
final as (
    select
        *,
        case played_class
            when 'best' then 'best'
            when 'trap' then 'fell'
            when 'reasonable' then 'reasonable'
            when 'out_of_scope' then 'reasonable'
            when 'unreasonable' then 'unreasonable'
            when 'excluded' then 'excluded'
        end as outcome,
        played_class = 'trap' as fell
    from joined
)
select * from final;
