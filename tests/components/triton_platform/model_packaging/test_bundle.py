"""ConfigMap keys as Kubernetes takes them (triton_platform/model_packaging/bundle.py `config_map_key_problem`)."""

from __future__ import annotations

import pytest

from triton_platform.model_packaging.bundle import config_map_key_problem


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("chat.model.json", None),
        ("a" * 253, None),
        (".hidden", None),
        ("a" * 254, "is 254 characters; a key is at most 253"),
        ("chat+v.model.json", "has '+'; a key is letters, digits, '-', '_' and '.'"),
        (".", "is '.' or '..' or starts with '..', which a key may not"),
        ("..", "is '.' or '..' or starts with '..', which a key may not"),
        ("..model.json", "is '.' or '..' or starts with '..', which a key may not"),
    ],
)
def test_a_key_kubernetes_refuses_is_named_with_its_rule(key: str, expected: str | None) -> None:
    assert config_map_key_problem(key) == expected
