-- The evaluation cache (`pipeline.evals`): Lichess's evaluation export converted to Parquet.
-- Each block: `-- name: NAME`, one description line, then one statement ending in `;`.
-- COPY takes no parameters: {scratch}, {pieces}, {out} and {rows} are filled in by the caller, the
-- paths as quoted SQL strings.

-- name: sorted-evals
-- The converted evals in key order (deepest first within a position), out of core (spilled beside the output, not in the working directory): row groups then each hold one narrow key range.
set temp_directory = {scratch};
copy (
    select key, fen, depth, knodes, pvs
    from read_parquet({pieces})
    order by key, knodes desc, depth desc
) to {out} (format parquet, compression zstd, row_group_size {rows});
