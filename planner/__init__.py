"""`stackctl plan`: search batching, replica bounds and scaling policies for the cheapest config within the SLO."""
