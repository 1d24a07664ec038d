"""The ``--backend`` option's check, for the commands that run programs (kept apart from
:mod:`.common` so that the commands reading results load no backend)."""

from __future__ import annotations

import click

from ..harness.backends import LOAD_SECONDS, BackendUnavailable, check_name, get_backend


def usable_backend(name: str, option: str = "--backend", load_timeout: float | None = LOAD_SECONDS) -> str:
    """``name`` unless it names no backend or its backend cannot run here
    (not installed, a plugin that does not load within ``load_timeout``
    seconds): then a usage error."""
    try:
        check_name(name, load_timeout)
        check = getattr(get_backend(name), "check_available", None)
        if check is not None:
            check()
    except BackendUnavailable as e:
        raise click.UsageError(f"{option} {name}: {e}") from None
    return name
