"""What humans play: move frequencies from a corpus of games (`corpus`), and a model of the move a
human of a given rating and clock plays in any position (`model`, trained by `train`, measured by
`evaluate`, on the features of `features`; docs/human.md)."""
