"""What every layer of the pipeline shares: starting Ray, and (in time) the other helpers with no
layer of their own. Imports nothing of `pipeline` above it."""
