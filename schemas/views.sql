-- DuckDB views over a diffimax dataset (schema version 6).
-- `{games}` and the like are replaced by a scan of the table's Parquet files in the dataset (listed
-- in Python, so that no character of the dataset's path is read as a glob), or by an empty table
-- of the right schema when no shard is committed yet.
-- Values are centipawns from the setter's view in the tables; *_pawns columns are for people: text,
-- '+1.80' pawns or '#3' / '#-3' for a mate in 3 moves by the setter / against it (pawns, dip_pawns).

-- Wilson score interval (95 %) for k successes in n trials.
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

-- A ranked row resting on fewer occurrences than this is marked `few_occurrences` and ranked after
-- the rest: on a club's 40 games every trap is "1 of 1 fell, 100 %" (docs/report.md, "Rankings").
create or replace macro few_occurrences(n) as n < 3;

-- The responder's clock when deciding, in the buckets the saved queries share ('1: <10 s' ...
-- '5: >3 min', sorted by their prefix); null without a clock time.
create or replace macro clock_bucket(seconds) as
    case
        when seconds is null then null
        when seconds < 10 then '1: <10 s'
        when seconds < 30 then '2: 10-30 s'
        when seconds < 60 then '3: 30-60 s'
        when seconds < 180 then '4: 1-3 min'
        else '5: >3 min'
    end;

-- A value for people, as search/values.py's format_pawns writes it: pawns, or a mate score
-- (MATE - n for a mate in n plies from the analysed root, MATE = 100,000; any |cp| >= 90,000) as
-- '#k' / '#-k', k the mating side's moves; at an analysed root the responder moves first.
create or replace macro pawns(cp) as
    case
        when cp is null then null
        when cp >= 90000 then '#' || ((100000 - cp) // 2)
        when cp <= -90000 then '#-' || ((100000 + cp + 1) // 2)
        else printf('%+.2f', cp / 100.0)
    end;
-- A dip for people (format_dip): pawns; where the best reply or this one is a mate score, where
-- this reply leads instead (a difference of mate scores is no number of pawns).
create or replace macro dip_pawns(dip, best, value) as
    case
        when dip is null then null
        when abs(best) >= 90000 or abs(value) >= 90000 then pawns(value)
        else printf('%.2f', dip / 100.0)
    end;
-- A loss of win chances for people: the tables' 0..2 (a difference of Lichess's win chances on
-- [-1, 1]) in points of Lichess's Win% (0-100), as search/values.py's win_percent_points says. The
-- views show losses on this scale only, in columns named `*_win_pct_lost`.
create or replace macro win_pct_lost(drop) as round(drop::double * 50, 2);  -- the rows' float32, widened first
-- Where a reader sees the game at a ply: its address (games.url) with the move where the site
-- takes one (lichess.org: `#ply`, `/black` when Black is to move; chess.com: `?move=ply`).
create or replace macro game_link(url, ply) as
    case
        when url is null then null
        when regexp_full_match(url, 'https://lichess\.org/[A-Za-z0-9]{8}')
            then url || case when ply % 2 = 1 then '/black' else '' end || '#' || ply
        when regexp_full_match(url, 'https://www\.chess\.com/(game/)?(live|daily)/(game/)?[0-9]+')
            then url || '?move=' || ply
        else url
    end;
-- A game named for people: "White (1500) - Black (1480), Event, 2024.01.31".
create or replace macro game_name(white, white_elo, black, black_elo, event, date) as
    coalesce(white, '?') || coalesce(' (' || white_elo || ')', '') || ' - ' || coalesce(black, '?')
    || coalesce(' (' || black_elo || ')', '') || coalesce(', ' || nullif(event, '?'), '')
    || coalesce(', ' || nullif(date, '????.??.??'), '');

create or replace view games as
select * from {games};

-- Each analysed position with its fall estimate where the practical judge made one (issue 43): how
-- likely a human of the responder's rating was to go wrong there, its bounds and the expected loss.
create or replace view positions as
select p.*, r.fall_p, r.fall_p_low, r.fall_p_high, win_pct_lost(r.expected_loss) as expected_win_pct_lost
from {positions} p left join {responses} r using (game_id, ply);

-- `played_fell`: the played move lost at least `fall_drop` (compared before rounding to Win%).
-- Moves a person reads are SAN at the row's position (`san`, search/notation.py); the rows' UCI
-- is beside them as `*_uci`. Queries over many rows group and join on the `*_uci` columns and
-- name the moves of the rows they keep (SAN costs python-chess ~20 us a move). The per-reply
-- evidence (`responses`: a list of every reply's values and verdicts) keeps its moves in UCI.
create or replace view responses as
select r.* exclude (played_win_drop, expected_loss, fall_drop)
           replace (san(p.fen, r.best_move) as best_move,
                    -- the position's row already holds the played move's SAN (ingest writes it)
                    case when r.move_played = p.move_uci then p.move_san else san(p.fen, r.move_played) end
                        as move_played,
                    list_transform(r.choice_moves, lambda m: san(p.fen, m)) as choice_moves,
                    list_transform(r.choice_trap_moves, lambda m: san(p.fen, m)) as choice_trap_moves),
       r.best_move as best_move_uci, r.move_played as move_played_uci, r.choice_moves as choice_moves_uci,
       r.choice_trap_moves as choice_trap_moves_uci,
       pawns(r.value) as value_pawns, dip_pawns(r.played_dip, r.value, r.played_value) as played_dip_pawns,
       win_pct_lost(r.played_win_drop) as played_win_pct_lost, win_pct_lost(r.expected_loss) as expected_win_pct_lost,
       win_pct_lost(r.fall_drop) as fall_win_pct_lost, r.played_win_drop >= r.fall_drop as played_fell
from {responses} r left join {positions} p using (game_id, ply);

-- A trap record's moves in SAN: `move`, `best_move` and `move_played` at its node, `refutation`
-- after the trap move and `path` from the analysed root; the rows' UCI beside them as `*_uci`.
create or replace view traps as
select t.* exclude (win_drop)
           replace (san(t.node_fen, t.move) as move, san(t.node_fen, t.best_move) as best_move,
                    san_line_after(t.node_fen, t.move, t.refutation) as refutation, san_line(p.fen, t.path) as path,
                    san(t.node_fen, t.move_played) as move_played),
       t.move as move_uci, t.best_move as best_move_uci, t.refutation as refutation_uci, t.path as path_uci,
       t.move_played as move_played_uci,
       dip_pawns(t.dip, t.best_value, t.value) as dip_pawns, pawns(t.best_value) as best_value_pawns,
       pawns(t.value) as value_pawns, win_pct_lost(t.win_drop) as win_pct_lost
from {traps} t left join {positions} p using (game_id, ply);

create or replace view errors as
select * from {errors};

-- The trap candidates at the analysed roots, each with whether the dataset's primary judge names it,
-- the game's opening and a link to the game at that ply.
create or replace view root_candidates as
select t.*,
       case r.primary_judge
           when 'dip' then t.by_dip when 'trappy' then t.by_trappy when 'human' then t.by_human
           when 'model' then t.by_model when 'practical' then t.by_practical
       end is true as by_primary,
       g.eco, g.opening, game_link(g.url, t.ply) as link
from traps t
join responses r using (game_id, ply)
join games g using (game_id)
where len(t.path_uci) = 0;

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
           r.move_played, r.best_move, r.move_played_uci, r.best_move_uci, r.played_dip, r.played_win_pct_lost,
           r.played_model_p,
           p.mover_rating, p.clock_seconds, g.time_control_class
    from verdicts v
    join responses r using (game_id, ply)
    join {positions} p using (game_id, ply)
    join games g using (game_id)
)
select * from final;

-- One row per analysed position, with what the human actually played there and the verdict of the
-- dataset's primary judge (`trap_node`, `trap_count`, `fell`; the practical judge where the dataset
-- has human evidence): best reply, fell (a candidate), a mistake it did not name (dip >= T), another
-- reply, an excluded reply, or a reply no judge needed valued (unmeasured). Where the practical
-- judge ran with human evidence: the fall estimate (`fall_p`, its bounds, `expected_win_pct_lost`)
-- and whether the human really fell by its rule (`played_fell`: the played move lost at least
-- `fall_win_pct_lost`; null where either is unknown).
create or replace view outcomes as
with joined as (
    select
        r.game_id, r.ply, r.position_key, r.setter, r.responder, r.best_move, r.move_played, r.best_move_uci,
        r.move_played_uci, r.primary_judge,
        r.played_class, r.played_dip, r.played_dip_pawns, r.played_win_pct_lost, r.played_model_p, r.value,
        r.reasonable_count, r.trap_ratio, r.meaningful, r.trap_dip, r.fall_p, r.fall_p_low, r.fall_p_high, r.expected_win_pct_lost,
        r.fall_win_pct_lost, r.played_fell,
        p.fen, p.mover_rating, p.clock_seconds,
        g.white, g.black, g.white_elo, g.black_elo, g.time_control_class, g.result, g.eco, g.opening, g.event, g.date,
        game_link(g.url, r.ply) as link,
        game_name(g.white, g.white_elo, g.black, g.black_elo, g.event, g.date) as game,
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
    join {positions} p using (game_id, ply)
    join games g using (game_id)
),
final as (
    select
        *,
        case
            when move_played_uci = best_move_uci then 'best'
            when fell then 'fell'
            when played_excluded then 'excluded'
            when played_dip is null then 'unmeasured'
            when played_dip >= round(trap_dip * 100) then 'mistake'
            else 'reasonable'
        end as outcome
    from joined
)
select * from final;
