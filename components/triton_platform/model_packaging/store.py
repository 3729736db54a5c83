"""Object-store URIs of published model repositories, as Triton and rclone read them.

Triton's forms (server docs/user_guide/model_repository.md, "Cloud Storage"):
`gs://bucket/path`, `s3://bucket/path`, and for a private S3
`s3://host:port/bucket/path` (plain HTTP) or `s3://https://host:port/bucket/path`.
This project accepts the endpoint only with its scheme spelled out
(`s3://https://...` or `s3://http://...`), so plain HTTP is never chosen by
omission; rclone gets the same endpoint through RCLONE_S3_ENDPOINT.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from triton_platform.args.formats import control_character_problem

BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")
"""S3 and GCS bucket names (both allow lowercase letters, digits, '.', '-'; GCS also '_')."""
ENDPOINT_HOST = re.compile(r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?$")
SCHEMES = {"s3": "s3://", "gcs": "gs://"}
"""modelRepository source -> URI scheme."""


@dataclass(frozen=True)
class StoreUri:
    """A published repository's base location: `<uri>/<digest>/` holds one published version."""

    backend: str
    """rclone's backend name: `s3` or `gcs`."""
    bucket: str
    prefix: str
    """Path inside the bucket, without leading or trailing '/'; may be empty."""
    endpoint: str | None = None
    """`https://host:port` of a private S3, else None."""

    @property
    def port(self) -> int:
        """The TCP port the store is reached on: the private endpoint's, else HTTPS."""
        if self.endpoint is None:
            return 443
        web, _, host = self.endpoint.partition("://")
        _, _, port = host.partition(":")
        return int(port) if port else (443 if web == "https" else 80)

    def triton_path(self, digest: str) -> str:
        """`--model-repository` for the published version `digest`."""
        scheme = "gs://" if self.backend == "gcs" else "s3://"
        host = f"{self.endpoint}/" if self.endpoint else ""
        return f"{scheme}{host}{self.bucket}/{self._key(digest)}"

    def rclone_path(self, digest: str) -> str:
        """rclone's on-the-fly remote (`:s3:bucket/key`): settings come from rclone_settings, no config file."""
        return f":{self.backend}:{self.bucket}/{self._key(digest)}"

    def _key(self, digest: str) -> str:
        return f"{self.prefix}/{digest}" if self.prefix else digest


def parse_store_uri(uri: str, source: str) -> StoreUri:
    """`uri` for modelRepository source `s3` or `gcs`; ValueError says what is wrong and what is allowed."""
    scheme = SCHEMES[source]
    # Printed as it is (`stackctl publish-models`, Triton's and rclone's logs), and no object name holds one: GCS
    # refuses carriage returns and line feeds (https://cloud.google.com/storage/docs/objects#naming), S3 advises
    # against every control character (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
    if (problem := control_character_problem(uri)) is not None:
        raise ValueError(problem)
    if not uri.startswith(scheme):
        raise ValueError(f"source {source!r} needs uri {scheme}<bucket>/<prefix>; got {uri!r}")
    rest, endpoint = uri.removeprefix(scheme), None
    if source == "s3":
        for web in ("https://", "http://"):
            if rest.startswith(web):
                host, _, rest = rest.removeprefix(web).partition("/")
                if not ENDPOINT_HOST.match(host):
                    raise ValueError(f"endpoint host {host!r} in {uri!r} must be host or host:port")
                endpoint = f"{web}{host}"
    bucket, _, prefix = rest.partition("/")
    if ":" in bucket:
        raise ValueError(
            f"{uri!r}: write a private S3 endpoint with its scheme, s3://https://{bucket}/<bucket>/<prefix> "
            f"(or s3://http://... for plain HTTP); a bare host:port would mean plain HTTP"
        )
    if not BUCKET.match(bucket):
        raise ValueError(
            f"bucket {bucket!r} in {uri!r} is not a bucket name (3-63 lowercase letters, digits, '.', '-', '_')"
        )
    prefix = prefix.rstrip("/")
    if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
        raise ValueError(f"prefix {prefix!r} in {uri!r} has an empty, '.' or '..' segment")
    return StoreUri("gcs" if source == "gcs" else "s3", bucket, prefix, endpoint)


def rclone_settings(store: StoreUri) -> dict[str, str]:
    """rclone's settings as RCLONE_* variables (each the `--<flag>` of `rclone help flags`, rclone 1.76.0).

    No config file: credentials come from the environment, as Triton's do (AWS_* for
    S3, which `--s3-env-auth` reads; GOOGLE_APPLICATION_CREDENTIALS or workload
    identity for GCS, rclone's fallback to Application Default Credentials).
    """
    settings = {"RCLONE_CONFIG": "/dev/null"}
    if store.backend == "s3":
        settings |= {
            "RCLONE_S3_PROVIDER": "Other" if store.endpoint else "AWS",
            "RCLONE_S3_ENV_AUTH": "true",
            # Never create buckets: publishing and loading need object access only.
            "RCLONE_S3_NO_CHECK_BUCKET": "true",
        }
        if store.endpoint:
            settings["RCLONE_S3_ENDPOINT"] = store.endpoint
    else:
        # Uniform bucket-level access, GCS's default for new buckets: rclone must not set object ACLs.
        settings |= {"RCLONE_GCS_BUCKET_POLICY_ONLY": "true", "RCLONE_GCS_NO_CHECK_BUCKET": "true"}
    return settings
