"""What several verbs share: the store option, the tracking URI, the pre-run checks."""

from __future__ import annotations

import argparse

from harness.types import ConfigError


def store_options() -> argparse.ArgumentParser:
    """``--uri``, for every verb that reads the record."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--uri", default=None, help="MLflow tracking URI (default: the config's tracking.uri)")
    return p


def tracking_uri(args: argparse.Namespace, cfg, extra: list[str] | None = None, reads_only: bool = True) -> str:
    """``--uri``, else the config's ``tracking.uri``; with ``extra`` (``--set``: a profile such as
    ``profile=cluster`` sets it) the config composed with them, as the runs were. Checked before
    MLflow sees it: a scheme it does not open, a server that does not answer (one line in seconds,
    not minutes of retries); ``reads_only``: a local store that does not exist (never created)."""
    from harness.pipeline.preflight import check_record, check_tracking

    if extra and not args.uri:
        from harness import registry

        cfg = registry.compose(extra)
    uri = args.uri or cfg.tracking.uri
    if not uri:
        raise ConfigError("the config records no runs (tracking.uri is null): give --uri")
    if reads_only:
        check_record(uri, "--uri" if args.uri else "tracking.uri")
    else:
        check_tracking(uri)
    return uri


def yaml_value(text: str):
    """``200`` as 200, ``0.5`` as 0.5, ``null`` as None, anything else as the string."""
    from omegaconf import OmegaConf

    return OmegaConf.create({"v": text})["v"] if text else text


def preflight(extra: list[str]) -> None:
    """What a sweep checks before it queues anything (the tracking store or server, cache.dir, the
    LLM servers), checked before a table runs in this process: one line, not a traceback mid-grid."""
    from harness.pipeline.preflight import check_submission
    from harness import registry

    check_submission(registry.compose(extra))


def verb(sub, name: str, help: str, example: str, parents=(), **kw) -> argparse.ArgumentParser:
    """A verb's parser, its example under its options in ``--help``."""
    return sub.add_parser(name, help=help, parents=list(parents), epilog=f"example:\n  {example}",
                          formatter_class=argparse.RawDescriptionHelpFormatter, **kw)
