"""What humans play: move frequencies from a corpus of games."""
