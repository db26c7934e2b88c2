"""What is secret in a run's config, and the mask that keeps it out of every record.

A secret is the value of a config key named like one (``api_key``, ``token``, ``secret``,
``password``, ``Authorization``...), a value given to such a key on the command line
(each value of a sweep, ``llm.api_key=sk-A,sk-B``), the value of an environment variable named
like one (``OPENAI_API_KEY``, ``HF_TOKEN``), the credentials of a URL (``https://user:pass@host``,
``http://TOKEN@host``), and, under any name, a value shaped like a key (``sk-...``, ``hf_...``,
``Bearer ...``). The run record (MLflow params, tags, artifacts), the files Hydra saves
(:class:`MaskSecrets`, a Hydra callback), the run's name and the errors a backend reports show
``***`` in their place. Secrets are no part of a cache key either
(:func:`harness.cache.without_services`): rotating a key keeps the cache.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TextIO

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, ListConfig, OmegaConf

MASK = "***"
# Whole name or its last `_` part: api_key, openai_api_key, hf_token, password -- not max_tokens,
# tokenizer or passages. Not any *_key: secret names leave cache keys (a chunker's sort_key must
# not); a key under another name is found by its shape.
_SECRET_NAME = re.compile(r"(^|[_.-])(api_?key|access_?key|secret(_?key)?|token|password|passwd|credentials?|"
                          r"authorization)$", re.IGNORECASE)
# A URL's password (user:***@) or, with no password, its whole userinfo (a token: ***@host).
_URL_PASSWORD = re.compile(r"(://[^/\s:@]+:)[^/\s@]+@")
_URL_TOKEN = re.compile(r"://[^/\s:@]+@")
# Keys by their shape, whatever they are named: OpenAI's and Anthropic's, Hugging Face's, GitHub's,
# Slack's, AWS access key ids. Masked in every text; long enough that no word is one.
_KEY_SHAPE = re.compile(r"(?<![\w-])(?:sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|"
                        r"xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})(?![\w-])")
_SCHEME_VALUE = re.compile(r"\b(?:Bearer|Basic|Token)\s+([A-Za-z0-9._~+/=-]{8,})")  # an Authorization header's
MIN_LENGTH = 6  # shorter values (a local server's "EMPTY"...) are not masked inside other text


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(str(name)))


def _walk(value: Any, path: str = ""):
    """(dotted path, leaf) of every leaf under a secret-named key."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            p = f"{path}.{k}" if path else str(k)
            if is_secret_name(k) and not isinstance(v, (Mapping, list)):
                yield p, v
            else:
                yield from _walk(v, p)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]")


def shaped_secrets(text: str) -> set[str]:
    """The secrets ``text`` shows by their shape, whatever holds it: a key (``sk-...``), the value
    of an Authorization header (``Bearer ...``), a URL's credentials (``user:pass@``, ``TOKEN@``)."""
    found = set(_KEY_SHAPE.findall(text)) | set(_SCHEME_VALUE.findall(text))
    for m in re.finditer(r"://([^/\s@]+)@", text):
        user, _, password = m.group(1).partition(":")
        found.add(password or user)
    return found


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


def _override_values(override: str) -> list[str]:
    """The values an override gives, as Hydra parses it: each of a sweep's (``a,b``, ``choice(a,b)``),
    every string of a dict or list; the text after ``=`` where Hydra cannot parse it."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    text = override.partition("=")[2]
    try:
        parsed = OverridesParser.create().parse_override(override)
        values = list(parsed.sweep_string_iterator()) if parsed.is_sweep_override() else list(_strings(parsed.value()))
    except Exception:  # not an override Hydra reads (it will say so itself): the text as given, and its parts
        values = text.split(",")
    return [text.strip("'\""), *values]


def secret_values(cfg: Any = None, overrides: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> set[str]:
    """Every secret string a record of ``cfg`` could contain: the values under secret-named keys
    (resolved where they are interpolations such as ``${oc.env:OPENAI_API_KEY}``), the values
    of secret-named ``overrides`` (``llm.api_key=sk-...``, each of a sweep's), those of the
    secret-named environment variables, and what any of the config's or overrides' values shows
    to be secret by its shape (:func:`shaped_secrets`)."""
    found: set[str] = set()
    if isinstance(cfg, (DictConfig, ListConfig)):
        plain = OmegaConf.to_container(cfg, resolve=False)
        for path, raw in _walk(plain):
            found.add(str(raw))
            try:
                found.add(str(OmegaConf.select(cfg, path, throw_on_missing=False)))
            except Exception:  # an interpolation that does not resolve here: its raw text is kept above
                pass
        found.update(*(shaped_secrets(v) for v in _strings(plain)))
    elif cfg is not None:
        found.update(str(v) for _, v in _walk(cfg))
        found.update(*(shaped_secrets(v) for v in _strings(cfg)))
    for o in overrides:
        key, sep, _ = str(o).partition("=")
        if not sep:
            continue
        values = _override_values(str(o))
        if is_secret_name(key.lstrip("+~").split("@")[0].rsplit(".", 1)[-1]):
            found.update(values)
        found.update(*(shaped_secrets(v) for v in values))
    env = os.environ if environ is None else environ
    # by key, then .get: another thread may unset a variable between listing and reading it
    found.update(v for k in list(env) if is_secret_name(k) and (v := env.get(k)) is not None)
    # Interpolations and placeholders are no secret; short values would mask ordinary words.
    return {v for v in found if len(v) >= MIN_LENGTH and v != MASK and not v.startswith("${")}


def mask_text(text: str, values: Iterable[str]) -> str:
    """``text`` with every secret value, every URL password or token and every key-shaped string
    replaced by ``***``."""
    for v in sorted(values, key=len, reverse=True):  # a key that contains another is masked whole
        text = text.replace(v, MASK)
    text = _URL_TOKEN.sub(f"://{MASK}@", _URL_PASSWORD.sub(rf"\g<1>{MASK}@", text))
    return _KEY_SHAPE.sub(MASK, text)


def known_secrets() -> set[str]:
    """The secret values this process was told of (:func:`mask_logs`: the command line's, the run's
    config's): what a text the run stores is masked of though it came from elsewhere (a server that
    echoes the key)."""
    return set(_LOGGED)


def mask(value: Any, values: Iterable[str] = ()) -> Any:
    """A plain container (``OmegaConf.to_container``) with secret-named keys' values replaced
    by ``***`` (None stays None: it says no key was given) and secret values masked in every
    string."""
    values = set(values)
    if isinstance(value, Mapping):
        return {k: (MASK if is_secret_name(k) and v is not None and not isinstance(v, (Mapping, list))
                    else mask(v, values)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, values) for v in value]
    if isinstance(value, str):
        return mask_text(value, values)
    return value


def mask_yaml_file(path: Path, values: Iterable[str]) -> None:
    """Rewrite a YAML file Hydra saved (config, overrides, hydra, multirun) with secrets masked;
    written under a temporary name and renamed, so that a kill leaves either file whole."""
    if not path.is_file():
        return
    masked = mask(OmegaConf.to_container(OmegaConf.load(path), resolve=False), values)
    tmp = path.with_name(f".{path.name}.masking")
    OmegaConf.save(OmegaConf.create(masked), tmp)
    os.replace(tmp, path)


_LOGGED: set[str] = set()  # the values log records are masked of (see mask_logs)


def mask_logs(values: Iterable[str]) -> None:
    """Mask ``values`` in every log record from now on, whichever logger and handler writes it
    (Hydra's launcher logs each job's overrides, ``#0 : llm.api_key=...``, and reconfigures the
    handlers before it does: a record factory outlives that)."""
    values = set(values) - _LOGGED
    if not values:
        return
    if not _LOGGED:  # the first secret: install the factory, once
        make = logging.getLogRecordFactory()

        def masked(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = make(*args, **kwargs)
            try:
                message = record.getMessage()
            except Exception:  # a malformed record is the logging module's to report
                return record
            if any(v in message for v in _LOGGED):
                record.msg, record.args = mask_text(message, _LOGGED), None
            return record

        logging.setLogRecordFactory(masked)
    _LOGGED.update(values)


class MaskedStream:
    """A text stream that writes ``***`` for every secret value and URL password: what Hydra
    prints of a failed job (``Error executing job with overrides: [... 'llm.api_key=sk-...']``,
    straight to stderr), a traceback, any line the project prints. Everything else is the
    stream's own (``isatty``, ``fileno``, ``encoding``: a progress bar or a console still sees a
    terminal)."""

    def __init__(self, stream: TextIO, values: Iterable[str]):
        self.stream, self.values = stream, set(values)

    def write(self, text: str) -> int:
        self.stream.write(mask_text(text, self.values))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def mask_streams(values: Iterable[str]) -> None:
    """``sys.stdout`` and ``sys.stderr`` masked of ``values`` and of URL passwords from now on
    (:class:`MaskedStream`), and the log records too (:func:`mask_logs`)."""
    values = set(values)
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, MaskedStream):
            stream.values |= values
        elif stream is not None:
            setattr(sys, name, MaskedStream(stream, values))
    mask_logs(values)


class MaskSecrets(Callback):
    """Hydra callback (configs/config.yaml, ``hydra.callbacks.mask_secrets``): masks secrets in
    the log lines Hydra and the run write, and in the files Hydra saves before a job starts
    (the job's ``config.yaml``, ``hydra.yaml`` and ``overrides.yaml``; a sweep's
    ``multirun.yaml``), rewriting them."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        mask_logs(secret_values(config, config.hydra.overrides.task))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        mask_logs(secret_values(config, config.hydra.overrides.task))

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        values = secret_values(config, config.hydra.overrides.task)
        mask_logs(values)
        if config.hydra.output_subdir is not None:
            saved = Path(config.hydra.runtime.output_dir) / str(config.hydra.output_subdir)
            for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):
                mask_yaml_file(saved / name, values)
        sweep = Path(str(config.hydra.sweep.dir)).absolute()
        if sweep in Path(config.hydra.runtime.output_dir).parents:  # a sweep's job: the sweeper saved
            mask_yaml_file(sweep / "multirun.yaml", values)        # multirun.yaml after on_multirun_start

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        mask_yaml_file(Path(str(config.hydra.sweep.dir)) / "multirun.yaml",
                       secret_values(config, config.hydra.overrides.task))
