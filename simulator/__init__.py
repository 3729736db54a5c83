"""Scaling simulator: what a config change does to latency and cost (`stackctl simulate`)."""
