"""Publishing a stack's rendered model repository (written locally with its manifest, or uploaded under its digest), and
the example models."""
