"""stackctl: the offline companion CLI. It needs no Pulumi CLI, backend or cluster."""
