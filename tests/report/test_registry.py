"""The config registry on the real configs/: every file described, every choice listed,
the chunker pairings the bench scripts use in line with what the configs say."""

import re

import pytest

from harness import registry
from tests.conftest import CONFIGS

FILES = sorted(p for p in CONFIGS.rglob("*.yaml") if p.relative_to(CONFIGS).parts[0] not in registry.NOT_GROUPS)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CONFIGS)))
def test_every_config_file_has_a_description(path):
    """A new config file needs a leading comment (or a `_target_`): `ls` prints it."""
    assert registry.describe(path).strip()


def test_describe_rules(tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text("# @package _global_\n#\n#  Two words.\n# more\n_target_: a.B\n")
    assert registry.describe(f) == "Two words."
    f.write_text("_target_: a.B  # inline comments are not descriptions\n# late comment\n")
    assert registry.describe(f) == "a.B"
    f.write_text("defaults:\n  - base\n")
    assert registry.describe(f) == ""


def test_listing_covers_every_group_file():
    rows = registry.listing()
    assert {f"{g}/{n}.yaml" for g, n, _ in rows} == {str(p.relative_to(CONFIGS)) for p in FILES} - {"config.yaml"}
    assert {"chunker", "context", "experiment", "metrics", "tracking"} <= set(registry.groups())
    assert ("chunker", "fixed", "Fixed-size windows of `size` units; consecutive windows share `overlap` units.") in rows
    assert registry.listing("llm") == [r for r in rows if r[0] == "llm"]
    with pytest.raises(KeyError, match="no config group 'nope'"):
        registry.choices("nope")


def test_compose_and_llm_overrides():
    cfg = registry.compose(registry.llm_overrides("openai", ["model=Qwen/Qwen3-8B", "batch_size=3"]))
    assert cfg.llm._target_.endswith("OpenAILLM") and cfg.llm.model == "Qwen/Qwen3-8B" and cfg.llm.batch_size == 3
    assert cfg.tracking.uri and cfg.cache.dir


def hydra_alone(overrides):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose(registry.PRIMARY, overrides=list(overrides))


@pytest.mark.parametrize("overrides", [
    ["chunker=fixed", "chunker.size=100", "dataset=qasper", "scale=full"],
    ["chunker.size=300", "chunker=fixed", "+chunker.extra=[1,2]", "~context.budget", "experiment_name=x"],
    ["chunker=hichunk", "chunker.max_tokens=128", "llm.model=Qwen/Qwen3-8B", "profile=cluster"],
    ["chunker=lgmgc", "retriever=bm25", "retriever.top_k=3", "++retriever.k9=1.2", "cache.dir=${oc.env:HOME}",
     "hydra/launcher=local"],
], ids=["values", "add-delete-order", "profile", "force-add-hydra-group"])
def test_compose_equals_one_hydra_composition(overrides):
    """Group choices composed once per set, values set afterwards on a copy: the same config as
    Hydra's single composition, flags and unresolved interpolations included."""
    from omegaconf import OmegaConf

    ours, hydras = registry.compose(overrides), hydra_alone(overrides)
    assert OmegaConf.to_yaml(ours) == OmegaConf.to_yaml(hydras) and OmegaConf.is_struct(ours)
    ours.experiment_name = "changed"  # a copy: the next caller is not affected
    assert registry.compose(overrides).experiment_name == hydras.experiment_name


@pytest.mark.parametrize("overrides", [["chunker=fixed", "chunker.sise=3"], ["chunker=nope"], ["chunker.size=1,2"],
                                       ["~chunker.nope"], ["+chunker.size=3"]])
def test_compose_refuses_what_hydra_refuses(overrides):
    with pytest.raises(Exception) as ours:
        registry.compose(overrides)
    with pytest.raises(Exception) as hydras:
        hydra_alone(overrides)
    assert (type(ours.value), str(ours.value)) == (type(hydras.value), str(hydras.value))


def test_chunkers_needing_an_llm():
    needs = {n for n in registry.choices("chunker") if registry.needs_llm(n)}
    assert {"lumber", "hichunk", "logits_guided", "lgmgc", "multi_view_llm"} <= needs  # lgmgc via its defaults
    assert not needs & {"fixed", "multi_view", "semantic_breakpoint", "structure_tree"}


def test_context_pairings_exist_and_match_the_configs():
    chunkers, contexts = set(registry.choices("chunker")), set(registry.choices("context"))
    assert set(registry.CONTEXT_FOR) <= chunkers and set(registry.CONTEXT_FOR.values()) <= contexts
    said = {}  # what each chunker config's prose says: "Pair with context=X", "pair it with context=X"
    for name in chunkers:
        comments = " ".join(line.lstrip("#") for line in (CONFIGS / "chunker" / f"{name}.yaml").read_text().splitlines()
                            if line.startswith("#"))
        if m := re.search(r"pair (?:it )?with\s+context=(\w+)", comments, re.IGNORECASE):
            said[name] = m.group(1)
    assert said == registry.CONTEXT_FOR


@pytest.mark.parametrize("overrides, line", [
    (["chunker.sise=100"], "chunker.sise: no such key in chunker; did you mean size? (a new key: +chunker.sise=...)"),
    (["chunker=sentence", "dataset.limit_doc=2"], "dataset.limit_doc: no such key in dataset; did you mean limit_docs?"),
    (["retriever.embedder.modle=x"], "retriever.embedder.modle: no such key in retriever.embedder; did you mean model?"),
    (["chunkr=sentence"], "chunkr: no such key; did you mean chunker?"),
    (["chunker=sentense"], "chunker=sentense: no such choice; did you mean sentence? (`chunkbench ls chunker` lists them)"),
    (["chunker=fixed,sentense"], "chunker=sentense: no such choice; did you mean sentence?"),   # every choice of a sweep
    (["+foo=1"], "+foo: adds a top-level key that nothing reads"),
    (["+chunkr.size=1"], "+chunkr.size: adds a top-level key that nothing reads; did you mean chunker?"),
])
def test_a_misspelt_key_or_choice_is_one_line_naming_the_nearest(overrides, line):
    with pytest.raises(registry.ConfigError) as e:
        registry.check_overrides(overrides)
    assert str(e.value).startswith(line) and "\n" not in str(e.value)


@pytest.mark.parametrize("overrides", [["chunker.size=100,200"], ["+chunker.extra=1"], ["hydra/launcher=slurm"],
                                       ["chunker=sentence", "chunker.size=range(100,300,100)"], []])
def test_valid_overrides_and_sweeps_pass_the_check(overrides):
    registry.check_overrides(overrides)
