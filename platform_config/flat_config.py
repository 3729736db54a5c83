"""Pulumi's flat config, as both doors hand it (the engine's, and a stack file flattened by stack_document.py):
keys `<namespace>:<name>`, every non-string value JSON-encoded. Here a value is decoded back to its structure,
and the keys are checked against the platform's namespace and sections: a key without a namespace, an unknown
key of the project, a misspelt project namespace, and the default Kubernetes provider left enabled."""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection, Mapping
from typing import Any

from platform_config.errors import ConfigIssue
from platform_config.problem_text import cut_key, suggest
from platform_config.schema import SECTION_KEYS
from triton_platform.args.excerpts import excerpt
from triton_platform.kube.namespace import PROJECT

DISABLE_DEFAULT_PROVIDERS = "pulumi:disable-default-providers"


def decode_value(raw: str) -> Any:
    """A flat config value back to its structure; the CLI JSON-encodes every non-string value."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _near_project(namespace: str) -> bool:
    """A namespace that is the project's misspelt or cut short (`triton-platfrom`, `triton`, `Triton_Platform`).

    Other namespaces are other programs' and providers' config (`kubernetes:`, `aws:`), left alone.
    """
    spelt = namespace.lower().replace("_", "-")
    similar = difflib.SequenceMatcher(None, spelt, PROJECT).ratio() > 0.8
    return similar or (len(spelt) >= 4 and (PROJECT.startswith(spelt) or spelt.startswith(PROJECT)))


def namespace_issues(flat: Mapping[str, str], deferred: Collection[str]) -> list[ConfigIssue]:
    issues = []
    known = sorted(SECTION_KEYS)
    for key in flat:
        namespace, colon, name = key.partition(":")
        if not colon:
            shown = cut_key(key)
            issues.append(
                ConfigIssue(
                    shown, f"config keys need a namespace; {suggest(f'{PROJECT}:{key}', known)}use {PROJECT}:{shown}"
                )
            )
        elif namespace == PROJECT and key not in SECTION_KEYS:
            issues.append(ConfigIssue(key, f"unknown key; {suggest(key, known)}allowed keys: {', '.join(known)}"))
        elif namespace != PROJECT and _near_project(namespace):
            close = difflib.get_close_matches(f"{PROJECT}:{name}", known, n=1, cutoff=0.6)
            suggestion = close[0] if close else PROJECT
            issues.append(
                ConfigIssue(
                    cut_key(key),
                    f"unknown config namespace {namespace!r}, so the platform never reads this key; "
                    f"did you mean {suggestion!r}?",
                )
            )
    if DISABLE_DEFAULT_PROVIDERS in deferred and DISABLE_DEFAULT_PROVIDERS not in flat:
        return issues
    providers = decode_value(flat.get(DISABLE_DEFAULT_PROVIDERS, "[]"))
    if not isinstance(providers, list) or not ({"kubernetes", "*"} & set(map(str, providers))):
        issues.append(
            ConfigIssue(
                DISABLE_DEFAULT_PROVIDERS,
                "must list 'kubernetes' so nothing deploys through the ambient kubeconfig context; "
                f"got {excerpt(providers)}",
            )
        )
    return issues
