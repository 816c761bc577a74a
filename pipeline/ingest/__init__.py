"""Reading PGN databases: inputs and shards (`sources`), games and their positions (`games`)."""
