"""Which secrets provider a stack uses, what its ciphertexts look like, and the passphrases it must not use."""

from __future__ import annotations

import binascii
from base64 import b64decode
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from platform_config.paths import STACK_FILE, display_path
from platform_config.secret_values import kind
from triton_platform.args.input_files import InputFile, InputFileError, InputKind

PASSPHRASE_FILE = InputKind("passphrase file", 64 * 1024)
"""A passphrase is a line of text: 64 KiB is far above any, and a bound on what the guard reads."""

LOCAL_PASSPHRASE = "local-only-not-secret"
"""scripts/pulumi-env's default passphrase: for local render-mode stacks only (dev's committed salt is for it)."""

GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
"""What Go's strings.TrimSpace trims: unicode.IsSpace, the Unicode White_Space property
(https://pkg.go.dev/unicode#IsSpace). Python's str.strip() also trims U+001C-U+001F, which Go keeps."""

NONCE_BYTES = 12
"""The AES-256-GCM nonce Pulumi's symmetric crypter draws per value (encryptAES256GCGM: make([]byte, 12))."""
GCM_TAG_BYTES = 16
"""What AES-GCM's Seal appends to every ciphertext, so even an empty secret's ciphertext has this many bytes."""
SYMMETRIC_SHAPE = "v1:<base64 nonce>:<base64 ciphertext>"


def _base64(text: str) -> bytes | None:
    """Go's base64.StdEncoding.DecodeString: the standard alphabet, padding required; None when it fails."""
    try:
        return b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def symmetric_ciphertext(text: str) -> bool:
    """Whether `text` has the shape Pulumi's symmetric crypter writes for one secret.

    sdk/go/common/resource/config/crypt.go, symmetricCrypter.EncryptValue:
    `fmt.Sprintf("v1:%s:%s", base64(nonce), base64(ciphertext))`, a 12-byte nonce and AES-256-GCM's
    output (the plaintext plus a 16-byte tag); DecryptValue splits on ':' and wants exactly three parts,
    `v1` first. The passphrase provider (pkg/secrets/passphrase) and the cloud KMS providers
    (pkg/secrets/cloud, a data key wrapped by the KMS) both encrypt values with it.
    """
    parts = text.split(":")
    if len(parts) != 3 or parts[0] != "v1":
        return False
    nonce, sealed = _base64(parts[1]), _base64(parts[2])
    return nonce is not None and len(nonce) == NONCE_BYTES and sealed is not None and len(sealed) >= GCM_TAG_BYTES


@dataclass(frozen=True)
class SecretsProvider:
    """A stack's secrets provider as its stack file records it."""

    symmetric: bool
    """True when the file records a passphrase salt or a provider URL: values are symmetric ciphertexts. False
    when it records neither: Pulumi Cloud's provider, or a stack not initialised yet (either shape may come)."""

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> SecretsProvider:
        """The stack settings file records `encryptionsalt` for the passphrase provider and `secretsprovider`
        for any other but Pulumi Cloud's (https://www.pulumi.com/docs/iac/concepts/projects/stack-settings-file/)."""
        return cls(symmetric=bool(document.get("encryptionsalt") or document.get("secretsprovider")))

    def ciphertext_problem(self, cipher: object) -> str | None:
        """Why a `secure:` value is not what `pulumi config set --secret` writes for this stack; None when it is.

        Never shows the value: text under `secure:` that is no ciphertext may be the secret itself.
        """
        if not isinstance(cipher, str) or not cipher:
            written = "the ciphertext string that `pulumi config set --secret` writes"
            return f"`secure:` must hold {written}; got {kind(cipher)}"
        if symmetric_ciphertext(cipher) or (not self.symmetric and _base64(cipher)):
            return None
        shapes = (
            f"{SYMMETRIC_SHAPE}, as the passphrase and cloud KMS providers write it"
            if self.symmetric
            else f"{SYMMETRIC_SHAPE} (passphrase or cloud KMS provider), or base64 (Pulumi Cloud's provider)"
        )
        return f"`secure:` holds text that is not a ciphertext Pulumi writes ({shapes}); it is not shown"


def uses_passphrase(stack_file: Path) -> bool:
    """True when the stack's secrets are encrypted with a passphrase.

    The stack settings file records `encryptionsalt` for the passphrase provider only, and
    `secretsprovider` names any other (https://www.pulumi.com/docs/iac/concepts/projects/stack-settings-file/).
    """
    try:
        document = yaml.safe_load(InputFile(stack_file, STACK_FILE).read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError, InputFileError):
        return False  # the config loader reports an unreadable file
    if not isinstance(document, dict):
        return False
    provider = str(document.get("secretsprovider") or "")
    return provider.startswith("passphrase") or (not provider and "encryptionsalt" in document)


@dataclass(frozen=True)
class Passphrase:
    """The passphrase the CLI will use, and where it read it."""

    text: str
    source: str


def passphrase(environ: Mapping[str, str]) -> Passphrase | None:
    """The passphrase exactly as the Pulumi CLI reads it; None when it has none to read.

    pkg/secrets/passphrase/manager.go, readPassphrase: PULUMI_CONFIG_PASSPHRASE as it is whenever it
    is set, even empty (os.LookupEnv), and then the file is not read; else, when
    PULUMI_CONFIG_PASSPHRASE_FILE is non-empty, the file's contents with surrounding whitespace
    trimmed (`strings.TrimSpace(string(phraseDetails))`).

    InputFileError for a passphrase file that is no regular file within PASSPHRASE_FILE's bound: a FIFO would
    hang the program if read (the CLI has already drained it), and a device would never end.
    """
    if "PULUMI_CONFIG_PASSPHRASE" in environ:
        return Passphrase(environ["PULUMI_CONFIG_PASSPHRASE"], "PULUMI_CONFIG_PASSPHRASE")
    path = environ.get("PULUMI_CONFIG_PASSPHRASE_FILE")
    if not path:
        return None
    try:
        data = InputFile(Path(path), PASSPHRASE_FILE).read_bytes()
    except OSError:
        return None  # the CLI itself stops on a passphrase file it cannot read
    # Go keeps bytes that are not UTF-8 as they are; surrogateescape keeps them too, and none is a space.
    text = data.decode("utf-8", errors="surrogateescape").strip(GO_SPACE)
    return Passphrase(text, f"PULUMI_CONFIG_PASSPHRASE_FILE ({path}, surrounding whitespace trimmed as the CLI does)")


def default_passphrase_problem(stack: str, stack_file: Path, environ: Mapping[str, str]) -> str | None:
    """Why a deploying stack must not go on with a passphrase that protects nothing; None when it may.

    Refused: an empty or blank passphrase, and the local-only default (whitespace around it changes
    nothing that matters: it is public either way).
    """
    if not uses_passphrase(stack_file):
        return None
    try:
        given = passphrase(environ)
    except InputFileError as err:
        # Unread, the passphrase may be the local-only one: a deploy does not go on unchecked.
        return (
            f"PULUMI_CONFIG_PASSPHRASE_FILE {err}; the deploy guard reads it to refuse the local-only default "
            "passphrase: give a regular file, or set PULUMI_CONFIG_PASSPHRASE"
        )
    if given is None:
        return None
    bare = given.text.strip(GO_SPACE)
    if bare == LOCAL_PASSPHRASE:
        what = f"its secrets are encrypted with the local-only default passphrase {LOCAL_PASSPHRASE!r}"
    elif not bare:
        what = (
            f"the passphrase of its secrets is {'empty' if not given.text else 'only whitespace'} (from {given.source})"
        )
    else:
        return None
    return (
        f"{display_path(stack_file)}: stack {stack} deploys to a cluster, but {what}, which protects nothing; set "
        "PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) from your secret store before "
        f"`pulumi stack init {stack}`, or move the stack to a KMS: "
        f"pulumi stack change-secrets-provider --stack {stack} 'awskms://alias/<key>' (or gcpkms://, azurekeyvault://, hashivault://)"
    )
