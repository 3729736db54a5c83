"""checkov and kube-score over every stack's synthesized manifests, with the exceptions in one file.

`python -m manifest_scan` (`make scan`) synthesizes each stack, runs both scanners,
drops the findings `exceptions.yaml` excepts with a reason, and fails on the rest
and on exceptions that no longer match anything.
"""
