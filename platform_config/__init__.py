"""Typed, validated configuration of a triton-platform stack."""
