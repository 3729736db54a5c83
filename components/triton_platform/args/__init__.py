"""The Args machinery every component shares: problems as data, each Arg's declaration and its check, the formats and
units values are held to, excerpts of bad values, input files, and the claims on object names."""
