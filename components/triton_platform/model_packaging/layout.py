"""Where each file of a model repository lives for Triton: the one definition of the layout.

- `<model>/<version>/...`: a version's files; Triton loads folders named by a positive integer.
- `<model>/configs/<stack>.pbtxt`: the stack's rendered config, which tritonserver reads with
  `--model-config-name=<stack>` (triton-inference-server/server, src/command_line_parser.cc), which reads it
  instead of `<model>/config.pbtxt`. The base config.pbtxt is left out on purpose: Triton falls back to it
  silently when the named config is missing, so without it a missing rendered config fails loudly
  (checked against Triton 2.51).
- `.stackctl-manifest.json`: in a written or published repository, its digest and file list (MANIFEST).

Python callers (`stackctl model-repo`, `publish-models`, the digest) pass names. The init container's
script is generated from the same functions with shell variables in their place, so the two cannot drift.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Iterable, Mapping

MANIFEST = ".stackctl-manifest.json"
"""The digest and file list of a written repository; the loader Job checks a published one has it."""
CONFIGS = "configs"
"""The folder of a model's per-stack configs."""


def configs_dir(model: str) -> str:
    return f"{model}/{CONFIGS}"


def config_path(model: str, config_name: str) -> str:
    """Where Triton looks for the config `config_name` (a stack's name) of `model`, relative to the repository."""
    return f"{configs_dir(model)}/{config_name}.pbtxt"


def version_path(model: str, version: str) -> str:
    """A version folder of `model`, relative to the repository."""
    return f"{model}/{version}"


def _extra_file_lines(model: str, relative: str) -> str:
    """Link one file outside the version folders (a label or warmup data file, source.config_files) into place,
    after checking the store has it: a claim filled by hand may lack it, and Triton would fail the load later."""
    path = shlex.quote(f"{model}/{relative}")
    parent = posixpath.dirname(relative)
    mkdir = f'mkdir -p "$MODELS_DIR"/{shlex.quote(f"{model}/{parent}")}\n' if parent else ""
    missing = shlex.quote(f"no {relative} of model {model} under ")
    named = shlex.quote(" (its config.pbtxt names it)")
    return (
        f'if [ ! -f "$STORE_DIR"/{path} ]; then echo {missing}"$STORE_DIR"{named} >&2; exit 1; fi\n'
        f'{mkdir}ln -s "$STORE_DIR"/{path} "$MODELS_DIR"/{path}\n'
    )


def rendered_file_name(model: str, relative: str) -> str:
    """The name, in the rendered configs' folder, of a file the stack writes into the version folders of `model`
    (`relative`, e.g. `1/model.json`: render.py `version_texts`): one per model and file name, `<model>.model.json`,
    beside the `<model>.pbtxt` configs, since every version gets the same text; the init container copies it into
    each served version folder."""
    return f"{model}.{posixpath.basename(relative)}"


def _rendered_model_lines(model: str, relatives: Iterable[str]) -> str:
    """A model the stack writes files into: its config, and each version folder made here (not linked whole, since
    the store is read-only), holding a link to each of the store's files of that version and the stack's files."""
    quoted = shlex.quote(model)
    lines = [
        f'mkdir -p "$MODELS_DIR"/{shlex.quote(configs_dir(model))}',
        f'cp "$RENDERED_DIR"/{shlex.quote(model + ".pbtxt")} "$MODELS_DIR"/{quoted}/{CONFIGS}/"$STACK.pbtxt"',
    ]
    folders = sorted({posixpath.dirname(relative) for relative in relatives})
    for folder in folders:
        target = shlex.quote(version_path(model, folder))
        lines += [
            f'mkdir -p "$MODELS_DIR"/{target}',
            f'for file in "$STORE_DIR"/{target}/* "$STORE_DIR"/{target}/.[!.]* "$STORE_DIR"/{target}/..?*; do '
            f'if [ -e "$file" ]; then ln -s "$file" "$MODELS_DIR"/{target}/; fi; done',
        ]
    for relative in sorted(relatives):
        # A published store holds the stack's file already (digest.py `repository_files`), the same bytes: its link
        # goes first, so the copy cannot write through it into the read-only store. A store holding other bytes there
        # holds the repository's own file, which the platform never overwrites.
        path = shlex.quote(f"{model}/{relative}")
        target = f'"$MODELS_DIR"/{path}'
        rendered = f'"$RENDERED_DIR"/{shlex.quote(rendered_file_name(model, relative))}'
        differs = shlex.quote(
            f" holds its own {posixpath.basename(relative)}, which differs from the one the stack writes; the "
            "platform never overwrites a repository's file: remove it from the store, or the stack's settings"
        )
        lines += [
            f'if [ -e "$STORE_DIR"/{path} ] && ! cmp -s "$STORE_DIR"/{path} {rendered}; then '
            f'echo "$STORE_DIR"/{path}{differs} >&2; exit 1; fi',
            f"rm -f {target}",
            f"cp {rendered} {target}",
        ]
    # The versions it writes nothing into (those Triton does not serve) are linked whole, as every model's are.
    lines.append(
        f'for version in "$STORE_DIR"/{quoted}/*/; do version="${{version%/}}"; '
        'case "${version##*/}" in (*[!0-9]*) continue ;; esac; '
        f'if [ ! -e "$MODELS_DIR"/{quoted}/"${{version##*/}}" ]; then '
        f'ln -s "$version" "$MODELS_DIR"/{quoted}/"${{version##*/}}"; fi; done'
    )
    return "".join(f"{line}\n" for line in lines)


def assemble_script(
    models: Iterable[str],
    extra_files: Mapping[str, Iterable[str]] | None = None,
    rendered_files: Mapping[str, Iterable[str]] | None = None,
) -> str:
    """The init container's script: a repository of symlinked version folders plus the rendered configs, and the
    files outside the version folders each model's config names (`extra_files`, by model: source.config_files).
    A model the stack writes files into (`rendered_files`, by model: paths below it such as `1/model.json`) gets
    version folders of links instead, with those files copied in from the rendered configs' folder.

    Runs with MODELS_DIR, STORE_DIR, RENDERED_DIR and STACK in its environment,
    so tests run the very same script against local folders.
    """
    models = sorted(models)
    written = {model: list(paths) for model, paths in (rendered_files or {}).items() if paths and model in models}
    names = " ".join(shlex.quote(m) for m in sorted(models) if m not in written)
    name = "${version##*/}"
    extra = "".join(
        _extra_file_lines(model, relative)
        for model in sorted(models)
        for relative in sorted((extra_files or {}).get(model, ()))
    )
    own = "".join(_rendered_model_lines(model, written[model]) for model in sorted(written))
    return f"""set -eu
{own}for model in {names}; do
  mkdir -p "$MODELS_DIR/{configs_dir("$model")}"
  cp "$RENDERED_DIR/$model.pbtxt" "$MODELS_DIR/{config_path("$model", "$STACK")}"
  found=0
  for version in "$STORE_DIR/$model"/*/; do
    version="${{version%/}}"
    case "{name}" in (*[!0-9]*) continue ;; esac
    ln -s "$version" "$MODELS_DIR/{version_path("$model", name)}"
    found=1
  done
  if [ "$found" = 0 ]; then echo "no version folder for model $model under $STORE_DIR" >&2; exit 1; fi
done
{extra}"""
