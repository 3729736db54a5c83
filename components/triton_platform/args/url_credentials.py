"""Credentials written into URLs: found, named, and masked so an error never repeats them.

A URL in plain config is stored in clear in the stack file and the state, and
usually ends up in a manifest (KEDA's `serverAddress`, a chart repository). The
forms that carry a credential are RFC 3986's userinfo (`scheme://user:pass@host`,
https://www.rfc-editor.org/rfc/rfc3986#section-3.2.1, which also calls passwords
there deprecated), a bare token as the user (`https://<token>@github.com`), and
query or fragment parameters named like a secret (`?token=`, `?password=`, S3's
presigned `X-Amz-Signature`/`X-Amz-Credential`/`X-Amz-Security-Token`,
https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html,
Azure SAS's `sig`, an OAuth `#access_token=`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

MASK = "***"
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
# Where a URL ends inside prose or a repr; '\\' ends one in a repr'd string ("...\n").
_URL_END = re.compile(r"[\s'\"<>`\\]")
_SECRET_WORDS = ("token", "password", "passwd", "secret", "signature", "credential", "apikey", "api_key")
_SECRET_NAMES = frozenset({"pwd", "pass", "sig", "key", "auth", "authorization", "access_key", "accesskey"})
# Prefixes of well-known tokens: GitHub (ghp_, github_pat_, ...), GitLab (glpat-), Slack (xox?-), AWS key ids.
_TOKEN_PREFIXES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-", "sk-")
_TOKEN_ID = re.compile(r"^(AKIA|ASIA)[A-Z0-9]{12,}$")
_TOKEN_MIN_LENGTH = 20
# `name=value` after a separator; both stop at the next separator, so one pass over a long value.
_AUTHORITY_END = re.compile(r"[/?#]")
_PARAM = re.compile(r"[?&;#]([^=?&;#]+)=([^?&;#]*)")


@dataclass(frozen=True)
class UrlCredential:
    """One URL holding credentials: the URL with each one replaced by ***, and what they were."""

    masked: str
    kinds: tuple[str, ...]
    """e.g. ("a password", "query parameter 'token'"): names only, never the values."""


def _secret_name(name: str) -> bool:
    key = unquote(name).lower().replace("-", "_")
    return key in _SECRET_NAMES or any(word in key for word in _SECRET_WORDS)


def known_token(text: str) -> bool:
    """A well-known token by its shape alone: a known prefix at a token's length (no spaces), or an AWS key id."""
    if _TOKEN_ID.match(text):
        return True
    return text.startswith(_TOKEN_PREFIXES) and len(text) >= _TOKEN_MIN_LENGTH and not any(c.isspace() for c in text)


def _token_like(user: str) -> bool:
    """A user name that is really a token: a known token prefix, or long and mixing letters and digits."""
    user = unquote(user)
    if user.startswith(_TOKEN_PREFIXES) or _TOKEN_ID.match(user):
        return True
    return len(user) >= _TOKEN_MIN_LENGTH and any(c.isdigit() for c in user) and any(c.isalpha() for c in user)


def _secrets_in(url: str) -> list[tuple[int, int, str]]:
    """(start, end, what) of each credential in one URL: what is a name, never the value.

    Every `://` has its own authority (`s3://https://user:pass@host/...` nests one URL in
    another) and every `name=value` after a `?`, `&`, `;` or `#` is a parameter, so a URL
    inside a parameter (`?next=https://host/?token=...`) is covered too.
    """
    found: list[tuple[int, int, str]] = []
    pos = 0
    while (sep := url.find("://", pos)) >= 0:
        start = pos = sep + 3
        stop = _AUTHORITY_END.search(url, start)
        end = stop.start() if stop else len(url)
        at = url.rfind("@", start, end)
        if at >= 0:
            colon = url.find(":", start, at)
            if colon >= 0 and at > colon + 1 and url[colon + 1 : at] != MASK:
                found.append((colon + 1, at, "a password"))
            elif colon < 0 and _token_like(url[start:at]):
                found.append((start, at, "a token as the user name"))
    for param in _PARAM.finditer(url):
        name, value = param.group(1), param.group(2)
        if value and value != MASK and _secret_name(name):
            found.append((param.start(2), param.end(2), f"parameter {unquote(name)!r}"))
    return sorted(found)


def _masked(text: str, secrets: list[tuple[int, int, str]]) -> str:
    out, pos = [], 0
    for start, end, _ in secrets:
        if start < pos:  # inside one already masked (a URL as a secret parameter's value)
            pos = max(pos, end)
            continue
        out += [text[pos:start], MASK]
        pos = end
    return "".join(out) + text[pos:]


def _urls(text: str) -> list[tuple[int, int]]:
    """Spans of `scheme://...` in `text`, found in one pass (no regex backtracking over long values)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while (sep := text.find("://", pos)) >= 0:
        start = sep
        while start > 0 and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        while start < sep and not text[start].isalpha():  # a scheme starts with a letter
            start += 1
        end_match = _URL_END.search(text, sep + 3)
        end = end_match.start() if end_match else len(text)
        if start < sep:
            spans.append((start, end))
        pos = max(end, sep + 3)
    return spans


def find(text: str) -> list[UrlCredential]:
    """Every URL in `text` that holds credentials."""
    found = []
    for start, end in _urls(text):
        url = text[start:end]
        if secrets := _secrets_in(url):
            found.append(UrlCredential(_masked(url, secrets), tuple(dict.fromkeys(what for *_, what in secrets))))
    return found


def redact(text: str) -> str:
    """`text` with the credentials of every URL in it replaced by ***."""
    if "://" not in text:
        return text
    secrets = [
        (start + first, start + last, what)
        for start, end in _urls(text)
        for first, last, what in _secrets_in(text[start:end])
    ]
    return _masked(text, secrets) if secrets else text
