"""Container images as the components run them."""


def pinned(image: str, digests: dict[str, str]) -> str:
    """`image` as it should run: `<image>@<digest>` when `digests` lists its tag."""
    return f"{image}@{digests[image]}" if image in digests else image
