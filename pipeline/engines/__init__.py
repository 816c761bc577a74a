"""The engines behind a DiffiMax analysis: the native search and UCI engine processes."""
