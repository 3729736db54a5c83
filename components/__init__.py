"""Pulumi ComponentResources of the platform, each with the pure builders it wires."""
