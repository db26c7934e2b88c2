"""The config registry: every choice of every config group under ``configs/``, what each one
is (its description), and the composed config as ``python -m harness`` sees it.

The CLI's ``ls`` lists it, the CLI's other subcommands load their config through
:func:`compose`, and the bench scripts take their methods from it, so a new config file is
listed, loadable and benchmarked without another list to update.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness.types import ConfigError

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
PRIMARY = "config"  # configs/config.yaml: the run's config; every folder beside it is a group
# folders of other tools' own files (paper tables, hardware for `tables plan`, the leaderboard's suites)
NOT_GROUPS = ("tables", "hardware", "suite")

# The context assembler each chunker is meant for, where it is not the default `budget`; the
# chunker configs say the same in prose ("Pair with context=..."), which a test checks. It
# is a mapping here, not a key in the chunker configs, because every key of a `_target_`
# node is passed to the chunker's constructor.
CONTEXT_FOR = {
    "hichunk": "auto_merge",           # HiChunk's HC200+AM
    "structure_tree": "auto_merge",    # the shape of HC200, merged by Auto-Merge
    "multi_granular": "parent_max",    # LGMGC: a parent scores as the best of itself and its children
    "lgmgc": "parent_max",
    "multi_view": "multi_view",        # MC-indexing's merge of the views' rankings
    "multi_view_llm": "multi_view",
    "raptor": "raptor",                # RAPTOR: tree traversal (or the collapsed tree) over its layers
}


def compose(overrides: Sequence[str] = (), store: Any = None) -> DictConfig:
    """``configs/config.yaml`` with Hydra overrides, composed as a run composes it.

    Hydra composes in two steps: the defaults list with its group choices (``chunker=hichunk``),
    then each value override (``chunker.size=200``) set on the result. Only the first step reads
    and merges YAML (a tenth of a second each), so it runs once per set of group choices, and a
    table's grid points that differ only in values (431 smoke points, 93 sets of choices) share it.
    The second step is Hydra's own, on a copy: the same result, errors and all. With ``store``
    (a :class:`harness.cache.Cache`) the first step's result is also kept there across processes
    and runs, under the contents of every config file (:func:`stored_choices`)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    first, values = _split(overrides)
    choices = tuple(o.input_line for o in first)
    cfg = copy.deepcopy(_compose_choices(choices) if store is None else stored_choices(choices, store))
    ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
    return cfg


def quote_hint(override: str) -> str:
    """``key=value`` as the shell argument that passes ``value`` to Hydra as one quoted string."""
    key, _, value = override.partition("=")
    return f"'{key}=\"{value}\"'" if '"' not in value else f"\"{key}='{value}'\""


def parse_overrides(overrides: Sequence[str]) -> list:
    """Hydra's parse of ``overrides``; one that its grammar cannot read (``~``, ``=``, ``,`` or a
    quote in an unquoted value, as a path may hold) fails in one line naming it and how to quote it."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    parser = OverridesParser.create()
    try:
        return parser.parse_overrides(list(overrides))
    except OverrideParseException as e:
        problem = str(e).splitlines()[0]
    for o in overrides:
        try:
            parser.parse_overrides([o])
        except OverrideParseException:
            key, eq, value = o.partition("=")
            if eq and key and not value.startswith(("'", '"')):
                raise ConfigError(f"{o}: Hydra's override syntax cannot read this value unquoted ({problem}); "
                                  f"quote it: {quote_hint(o)}") from None
            raise ConfigError(f"{o}: not an override Hydra can read ({problem})") from None
    raise ConfigError(f"override: {problem}")


def check_overrides(overrides: Sequence[str], sweep: bool | None = None) -> None:
    """Compose ``overrides`` as a run composes them (a sweep by its first value): a key or a
    choice that does not exist fails in one line that names the nearest valid one. ``sweep``
    (False: a single run, as the command line says) also refuses a list of values outside a
    sweep: a path with a comma, unquoted, is one."""
    from hydra.errors import ConfigCompositionException, HydraException, MissingConfigException

    parsed = parse_overrides(overrides)
    single = []
    for o in parsed:
        if o.key_or_group.split(".")[0].split("/")[0] == "hydra":
            continue  # Hydra's own (a launcher's settings): Hydra checks them
        if o.is_delete() and "." not in o.key_or_group and "@" not in o.key_or_group:
            raise ConfigError(f"{o.input_line}: deletes {o.key_or_group}, which every run reads; choose another "
                              f"value instead" + (f" ({o.key_or_group}=NAME; `chunkbench ls {o.key_or_group}` "
                                                  f"lists them)" if o.key_or_group in _groups() else ""))
        if o.key_or_group in _groups() and isinstance(o.value(), str) and _outside_group(o.value()):
            raise ConfigError(_choice_hint(f"Could not find '{o.key_or_group}/{o.value()}'"))
        if sweep is False and o.is_sweep_override():
            raise ConfigError(f"{o.input_line}: a comma makes a list of values, which only a sweep runs (add -m); "
                              f"to pass it as one value, quote it: {quote_hint(o.input_line)}")
        if o.is_sweep_override():
            if o.key_or_group in _groups() and o.is_discrete_sweep():  # chunker=fixed,sentence: every choice
                for choice in o.sweep_string_iterator():
                    if choice not in choices(o.key_or_group):
                        raise ConfigError(_choice_hint(f"Could not find '{o.key_or_group}/{choice}'"))
            try:
                single.append(f"{o.get_key_element()}={next(iter(o.sweep_string_iterator()))}")
            except (StopIteration, HydraException):  # an interval sweep: Hydra checks it
                continue
        else:
            single.append(o.input_line)
    try:
        compose(single)
    except MissingConfigException as e:
        raise ConfigError(_choice_hint(str(e)) or str(e).splitlines()[0]) from None
    except ConfigCompositionException as e:
        raise ConfigError(_key_hint(str(e), single) or str(e).splitlines()[0]) from None
    added = [o for o in parsed if o.is_add() and o.key_or_group.split(".")[0] not in _groups()]
    if added:  # `+foo=1`: a new top-level key, which no component reads
        known = compose([line for line in single if not line.startswith("+")])
        for o in added:
            top = o.key_or_group.split(".")[0]
            if top not in known and top != "hydra":
                raise ConfigError(f"+{o.key_or_group}: adds a top-level key that nothing reads"
                                  f"{_nearest(top, [*known.keys(), *_groups()])}")


def _outside_group(choice: str) -> bool:
    """A choice that is a path out of its group's folder (``experiment=../config``), which Hydra
    would read as another group's file."""
    return choice.startswith("/") or ".." in choice.split("/")


def repeated_keys(overrides: Sequence[str]) -> str | None:
    """One line naming each key given more than once (Hydra keeps the last without a word), or None."""
    seen: dict[str, list[str]] = {}
    for o in parse_overrides(overrides):
        seen.setdefault(o.get_key_element().lstrip("+~"), []).append(o.input_line)
    twice = [given for given in seen.values() if len(given) > 1]
    if not twice:
        return None
    return ("; ".join(f"{' then '.join(given)}" for given in twice)
            + ": the same key given more than once; the last is used")


def _nearest(word: str, candidates) -> str:
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean {found[0]}?" if found else ""


def _choice_hint(message: str) -> str | None:
    """``chunker=sentense: no such choice; did you mean sentence?``, from Hydra's missing config."""
    m = re.search(r"Could not find '([^'/]+)/([^']+)'", message)
    if not m or m.group(1) not in _groups():
        return None
    group, choice = m.groups()
    known = choices(group)
    return f"{group}={choice}: no such choice" + (
        f"{_nearest(choice, known)} (`chunkbench ls {group}` lists them)" if _nearest(choice, known)
        else f"; the choices: {', '.join(known)}")


def _key_hint(message: str, overrides: Sequence[str]) -> str | None:
    """``chunker.sise: no such key in chunker; did you mean size?``, from Hydra's failed override:
    the nearest of the keys where the path leaves the composed config."""
    m = re.search(r"Could not override '([^']+)'", message)
    if not m:
        return None
    key = m.group(1)
    cfg = compose([o for o in overrides if o.split("=", 1)[0].lstrip("+~") in _groups()])
    node, parts = cfg, key.split(".")
    for i, part in enumerate(parts):
        if not isinstance(node, DictConfig) or part not in node:
            where = ".".join(parts[:i])
            names = list(node.keys()) if isinstance(node, DictConfig) else []
            if not where:
                names += [g for g in _groups() if g not in names]
            inside = f" in {where}" if where else ""
            return f"{key}: no such key{inside}{_nearest(part, names)} (a new key: +{key}=...)"
        node = node[part]
    return None


def stored_choices(choices: tuple[str, ...], store: Any) -> DictConfig:
    """The first step's composition from ``store`` when an earlier process made it from the same
    config files (their paths and bytes, and Hydra's and OmegaConf's versions, are in the key),
    else composed and stored."""
    from harness.cache import make_key

    key = make_key("compose", _config_digest(), choices)
    cfg = store.get("compose", key)
    if cfg is None:
        cfg = _compose_choices(choices)
        store.put("compose", key, cfg)
    return cfg


@lru_cache(maxsize=1)
def _config_digest() -> str:
    import hashlib

    import hydra
    import omegaconf

    h = hashlib.sha256(f"hydra {hydra.__version__} omegaconf {omegaconf.__version__}".encode())
    for path in sorted(CONFIGS.rglob("*.yaml")):
        if path.relative_to(CONFIGS).parts[0] not in NOT_GROUPS:
            h.update(path.relative_to(CONFIGS).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def first_step(overrides: Sequence[str]) -> tuple[str, ...]:
    """The overrides Hydra's first step composes (the group choices): configs whose first steps
    are equal share one composition."""
    return tuple(o.input_line for o in _split(overrides)[0])


def _split(overrides: Sequence[str]):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    def first(o) -> bool:
        # a sweep, a package or anything of Hydra's own goes there too, which refuses or places
        # it exactly as a single composition would
        return (o.is_sweep_override() or o.package is not None or o.key_or_group in _groups()
                or o.key_or_group.split(".")[0].split("/")[0] == "hydra")

    firsts, values = [], []
    for o in OverridesParser.create().parse_overrides(list(overrides)):
        (firsts if first(o) else values).append(o)
    return firsts, values


@lru_cache(maxsize=512)   # every table's sets of choices at full scale (254) fit: none is composed twice
def _compose_choices(overrides: tuple[str, ...]) -> DictConfig:
    """A Hydra composition; callers get copies (:func:`compose`), never this object."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return hydra_compose(PRIMARY, overrides=list(overrides))


def launcher_target(overrides: Sequence[str] = ()) -> str:
    """The ``_target_`` of the Hydra launcher ``overrides`` select (a profile's, ``hydra/launcher=``'s),
    from their group choices; Hydra's own basic, in-process launcher unless one picks another."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    choices = [o.input_line for o in _split(overrides)[0]]
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = hydra_compose(PRIMARY, overrides=choices, return_hydra_config=True)
    return str(cfg.hydra.launcher._target_)


@lru_cache(maxsize=1)
def _groups() -> frozenset[str]:
    return frozenset(groups())


def llm_overrides(choice: str, settings: Sequence[str] = ()) -> list[str]:
    """``llm=<choice>`` and each ``key=value`` of the LLM config as ``llm.key=value``."""
    return [f"llm={choice}", *(f"llm.{s}" for s in settings)]


def groups() -> list[str]:
    """Every config group: each folder holding config files, nested ones as ``a/b``; not the
    paper tables (``configs/tables``) nor the hardware files of ``tables plan``
    (``configs/hardware``), which are files of the table tools, not of Hydra."""
    return sorted({p.parent.relative_to(CONFIGS).as_posix() for p in CONFIGS.rglob("*.yaml")
                   if p.relative_to(CONFIGS).parts[0] not in NOT_GROUPS} - {"."})


def choices(group: str, templates: bool = False) -> list[str]:
    """The group's choices; not a template whose ``_target_`` the user gives (``chunker=custom``:
    a class by import path), unless ``templates``: it is no method of its own to benchmark."""
    if group not in groups():
        raise KeyError(f"no config group {group!r} (groups: {', '.join(groups())})")
    return sorted(p.stem for p in (CONFIGS / group).glob("*.yaml") if templates or not is_template(p))


def is_template(path: Path) -> bool:
    node = OmegaConf.load(path)
    return isinstance(node, DictConfig) and "_target_" in node.keys() and OmegaConf.is_missing(node, "_target_")


ABBREVIATIONS = ("e.g.", "i.e.", "al.", "vs.", "cf.", "App.", "Sec.", "Fig.", "Eq.", "No.")


def first_sentence(text: str) -> str:
    """``text`` up to the end of its first sentence: a full stop (!, ?) followed by a space or the
    end, outside parentheses and backticks, not closing an abbreviation (``et al.``, ``e.g.``)."""
    depth, code = 0, False
    for i, ch in enumerate(text):
        if ch == "`":
            code = not code
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch in ".!?" and not depth and not code and (i + 1 == len(text) or text[i + 1] == " "):
            if not text[:i + 1].endswith(ABBREVIATIONS):
                return text[:i + 1]
    return text


def describe(path: Path) -> str:
    """The first sentence of a config file's leading comment (Hydra's ``@package`` header skipped;
    a sentence may run over several lines), else its ``_target_``, else ''."""
    comment: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            if stripped or comment:
                break
            continue
        text = stripped.lstrip("#").strip()
        if text and not text.startswith("@package"):
            comment.append(text)
    if comment:
        return first_sentence(" ".join(comment))
    node = OmegaConf.load(path)
    return str(node.get("_target_") or "") if isinstance(node, DictConfig) else ""


def listing(group: str | None = None) -> list[tuple[str, str, str]]:
    """(group, choice, description) of every choice, or of one group's."""
    return [(g, name, describe(CONFIGS / g / f"{name}.yaml"))
            for g in ([group] if group else groups()) for name in choices(g, templates=True)]


def chunker_node(chunker: str) -> dict:
    """A chunker's composed config (its defaults list merged), interpolations kept."""
    return OmegaConf.to_container(compose([f"chunker={chunker}"]).chunker, resolve=False)


def models_taken(node: dict) -> set[str]:
    """Which of the run's models a composed chunker config takes: ``llm`` (``${llm}``), ``embedder``."""
    text = OmegaConf.to_yaml(node)
    return {role for role in ("llm", "embedder") if re.search(rf"\$\{{{role}\}}", text)}


def needs_llm(chunker: str) -> bool:
    """Whether a chunker calls a language model: its composed config takes the run's ``${llm}``."""
    return "llm" in models_taken(chunker_node(chunker))
