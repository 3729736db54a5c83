"""The docs stay true: docs/configuration.md's config reference is the schema's, CI runs the README's test
command, and the README's layout table names the tree's top-level entries."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from pydantic import BaseModel

from platform_config.paths import PROJECT_ROOT
from platform_config.reference import BEGIN, CONFIGURATION, END, nested_model, reference_markdown, with_reference
from platform_config.schema import PlatformConfig

README = PROJECT_ROOT / "README.md"


def test_config_reference_matches_the_schema() -> None:
    text = CONFIGURATION.read_text(encoding="utf-8")
    assert with_reference(text) == text, "docs/configuration.md's config reference is stale: run `make docs`"


def test_a_stale_config_reference_is_noticed() -> None:
    # One key's row missing between the markers, as after a schema change without `make docs`.
    fresh = with_reference(CONFIGURATION.read_text(encoding="utf-8"))
    block = fresh[fresh.index(BEGIN) : fresh.index(END)]
    row = next(line for line in block.splitlines() if line.startswith("| `"))
    stale = fresh.replace(row + "\n", "", 1)
    assert stale != fresh
    assert with_reference(stale) != stale
    assert with_reference(stale) == fresh


def test_reference_documents_every_key_with_a_description() -> None:
    text = reference_markdown()
    models: list[type[BaseModel]] = [PlatformConfig, *nested_models(PlatformConfig)]
    for model in models:
        for field in model.model_fields.values():
            assert field.description, f"{model.__name__}.{field.alias} has no docstring"
            row = re.compile(
                rf"^\| `([^`]*\.)?{re.escape(str(field.alias))}` \| .+ \| {re.escape(field.description)} \|$", re.M
            )
            section = re.compile(rf"^#### `triton-platform:{re.escape(str(field.alias))}`$", re.M)
            assert row.search(text) or section.search(text), f"{field.alias} is missing from the reference"


def nested_models(model: type) -> list[type]:

    found: list[type] = []
    for field in model.model_fields.values():  # type: ignore[attr-defined]
        nested = nested_model(field.annotation)
        if nested and nested[0] not in found:
            found += [nested[0], *nested_models(nested[0])]
    return found


def test_ci_runs_the_readme_test_command() -> None:
    readme = README.read_text(encoding="utf-8")
    command = re.search(r"^make test\b", readme, re.MULTILINE)
    assert command, "README must give `make test` as the test command"
    ci = (PROJECT_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert [line for line in ci.splitlines() if line and not line.startswith(("#", "set ", "cd "))] == ["make test"]


def layout_paths(readme: str) -> set[str]:
    """Every path the README's layout table names in its first column."""
    table = readme[readme.index("## Layout\n") :]
    table = table[: table.index("\n## ")]
    return {
        p.rstrip("/")
        for row in table.splitlines()
        if row.startswith("| `")
        for p in re.findall(r"`([^`]+)`", row.split(" | ")[0])
    }


def test_the_layout_table_names_every_top_level_entry() -> None:
    import subprocess  # noqa: PLC0415

    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=PROJECT_ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    # The README itself and the dotfiles of tools (git, Go's version pin, CI's entry point) need no row.
    top = {path.split("/")[0] for path in tracked if (PROJECT_ROOT / path).exists()} - {
        "README.md",
        ".gitignore",
        ".go-version",
        ".ci",
    }
    named = {path.split("/")[0] for path in layout_paths(README.read_text(encoding="utf-8"))}
    assert sorted(top - named) == [], "top-level entries the README's layout table does not describe"
    assert sorted(named - top) == [], "the README's layout table names paths that do not exist"


def test_the_layout_check_notices_a_missing_row() -> None:
    readme = "## Layout\n\n| path | what |\n| --- | --- |\n| `components/` | x |\n\n## Next\n"
    assert layout_paths(readme) == {"components"}


DOCUMENTS = [README, *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(doc: Path) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings (lowercase, punctuation dropped, spaces as -)."""
    found: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", without_code_blocks(doc.read_text(encoding="utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        suffix = 0
        while (slug if not suffix else f"{slug}-{suffix}") in found:
            suffix += 1
        found.add(slug if not suffix else f"{slug}-{suffix}")
    return found


def without_code_blocks(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def broken_links(doc: Path) -> list[str]:
    """Every relative link or image in `doc` whose file, or heading anchor, does not exist."""
    broken = []
    for target in LINK.findall(without_code_blocks(doc.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(f"{doc.name}: {target}")
    return broken


def test_every_relative_link_in_the_docs_resolves() -> None:
    assert [link for doc in DOCUMENTS for link in broken_links(doc)] == []


def test_a_broken_link_is_noticed(tmp_path: Path) -> None:
    doc = tmp_path / "guide.md"
    (tmp_path / "other.md").write_text("# Other: `the` part\n")
    doc.write_text(
        "# Guide\n\n[a](#guide) [b](other.md#other-the-part) [c](https://example.com/x)\n"
        "[gone](missing.md) [nowhere](#no-such-heading) ![img](other.md#nope)\n"
        "```md\n[in code](ignored.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(doc) == ["guide.md: missing.md", "guide.md: #no-such-heading", "guide.md: other.md#nope"]


def test_the_command_table_is_the_registered_commands() -> None:
    """docs/stackctl.md lists what `stackctl` registers (stackctl/commands/__init__.py), written by `make docs`."""
    check = subprocess.run(
        [str(PROJECT_ROOT / ".venv" / "bin" / "cog"), "--check", "docs/stackctl.md"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr + "\nrun `make docs`"
    from stackctl.commands import COMMANDS  # noqa: PLC0415

    text = (PROJECT_ROOT / "docs" / "stackctl.md").read_text(encoding="utf-8")
    assert all(f"| `{command.name}` | {command.help} |" in text for command in COMMANDS)


def test_a_command_table_edited_by_hand_is_stale(tmp_path: Path) -> None:
    text = (PROJECT_ROOT / "docs" / "stackctl.md").read_text(encoding="utf-8")
    edited = tmp_path / "stackctl.md"
    edited.write_text(text.replace("| `rules` |", "| `rules-by-hand` |"), encoding="utf-8")
    check = subprocess.run(
        [str(PROJECT_ROOT / ".venv" / "bin" / "cog"), "--check", str(edited)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 5
    assert (check.stdout, check.stderr) == (f"Checking {edited}  (changed)\n", "Check failed\n")


def _shell_setting(path: Path, name: str) -> str:
    """`NAME=value` or `NAME := value` of a script or the Makefile."""
    found = re.search(rf"^{name}\s*:?=\s*(\S+)", path.read_text(), re.M)
    assert found, f"no {name} in {path}"
    return found.group(1)


def pinned_versions() -> dict[str, str]:
    """Each pin the project sets, read from where it is set (docs/versions.md lists them)."""
    from tests.support.crd_schemas import MODULES  # noqa: PLC0415 - the CRD pins are the tests' own
    from triton_platform.args.arg_schema import declared  # noqa: PLC0415
    from triton_platform.gpu_pool.gpu_node_pool_args import (  # noqa: PLC0415
        CLUSTER_AUTOSCALER,
        CLUSTER_AUTOSCALER_RELEASES,
        GpuNodePoolArgs,
    )
    from triton_platform.http_add_on import HTTP_ADD_ON_CHART  # noqa: PLC0415
    from triton_platform.monitoring.monitoring_args import DEFAULT_CHART  # noqa: PLC0415
    from triton_platform.scaling.keda_scaling_args import KEDA_CHART  # noqa: PLC0415
    from triton_platform.serving.triton_serving_args import DEFAULT_IMAGE, DEFAULT_LOADER_IMAGE  # noqa: PLC0415

    pool = declared(GpuNodePoolArgs)
    script, makefile = PROJECT_ROOT / "scripts" / "local-cluster", PROJECT_ROOT / "Makefile"
    return {
        "Triton image": DEFAULT_IMAGE,
        "rclone loader": DEFAULT_LOADER_IMAGE,
        "cluster-autoscaler": f"{CLUSTER_AUTOSCALER}:{CLUSTER_AUTOSCALER_RELEASES[34]}",
        **{f"cluster-autoscaler 1.{minor}": tag for minor, tag in CLUSTER_AUTOSCALER_RELEASES.items()},
        "DCGM exporter": str(pool["dcgm_exporter_image"].default),
        "pause": str(pool["overprovisioning_image"].default),
        "kube-prometheus-stack": DEFAULT_CHART["version"],
        "KEDA": KEDA_CHART["version"],
        "HTTP add-on": HTTP_ADD_ON_CHART["version"],
        **{f"{group} CRDs": version for group, (_, version, _) in MODULES.items()},
        **{name: _shell_setting(script, name) for name in ("ETCD_VERSION", "KUBERNETES_VERSION", "KWOK_VERSION")},
        **{name: _shell_setting(makefile, name) for name in ("HELM_VERSION", "KUBE_SCORE_VERSION", "CRANE_VERSION")},
    }


def unlisted(table: str) -> dict[str, str]:
    """The pins whose version `table` does not name."""
    return {what: version for what, version in pinned_versions().items() if version not in table}


def test_the_version_table_lists_every_pin_as_the_code_sets_it() -> None:
    """docs/versions.md stays true: a pin moved in the code and not in the table fails here, named."""
    assert unlisted((PROJECT_ROOT / "docs" / "versions.md").read_text()) == {}


def test_a_pin_the_table_lacks_is_named() -> None:
    table = (PROJECT_ROOT / "docs" / "versions.md").read_text().replace("v1.14.1", "v1.6.0")
    assert unlisted(table) == {"karpenter.sh CRDs": "v1.14.1"}
