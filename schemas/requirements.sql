-- What a saved query of queries.sql needs from a dataset, checked before `diffimax query` runs it.
-- Each block: `-- name: NAME` (the saved query's name), one description line (what is missing when
-- the statement says false, shown to the user), then one statement returning one boolean.

-- name: trap-setting-choice
-- needs a dataset mined with --setter-choices: no position of this one has choice_moves
select exists (select 1 from responses where choice_moves is not null) as met;

-- name: practical-traps
-- needs a dataset with the practical judge (mine with a human-move model or a corpus, and practical in --judges)
select exists (select 1 from responses where trap_node_practical is not null) as met;

-- name: calibration
-- needs fall probabilities: mine with the practical judge in --judges and human evidence (a human-move model or a corpus)
select exists (select 1 from responses where fall_p is not null) as met;

-- name: trickiest-positions
-- needs fall probabilities: mine with the practical judge in --judges and human evidence (a human-move model or a corpus)
select exists (select 1 from responses where fall_p is not null) as met;
