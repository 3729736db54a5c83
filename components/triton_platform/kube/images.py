"""Container images as the components run them."""


def pinned(image: str, digests: dict[str, str]) -> str:
    """`image` as it should run: `<image>@<digest>` when `digests` lists its tag."""
    return f"{image}@{digests[image]}" if image in digests else image


def image_fields(image: str, digests: dict[str, str]) -> dict[str, str]:
    """A container's `image` and `imagePullPolicy`. By digest the content cannot change, so a node's copy is
    used (IfNotPresent: no registry on the start path); by tag it can, so every start asks the registry
    (Always), as the kubelet's own default does only for `latest` (Kubernetes docs, Images: image pull policy)."""
    image = pinned(image, digests)
    return {"image": image, "imagePullPolicy": "IfNotPresent" if "@sha256:" in image else "Always"}
