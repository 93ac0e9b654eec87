"""The PCP policies of the model (src/mm/policies/): --policy and their list.

The engines own the policies; the front end keeps no list but the one the
build writes beside the engines (`_bin/policies.json`): --policy is a
Choice of it, read when the option is converted or shown.
"""

from __future__ import annotations

from typing import Any

import click

from pcplab import engine
from pcplab.errors import EngineError
from pcplab.inputs import NameChoice


def policy_help() -> str:
    """Say which policies the model has."""
    try:
        listed = engine.list_policies()
    except EngineError as exc:
        return f"PCP policy (the engines cannot list them: {exc})."
    names = ", ".join(p["name"] for p in listed) or "none built"
    return f"PCP policy: {names} ('pcplab policies' says what each decides)."


def policy_names() -> list[str]:
    """Return the names of the model's policies, sorted."""
    return [p["name"] for p in engine.list_policies()]


class PolicyOption(click.Option):
    """A --policy option: a Choice of the model's policies."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["type"] = NameChoice("policy", policy_names)
        super().__init__(*args, **kwargs)

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        """Fill in the help from the engines' list, then format it."""
        self.help = policy_help()
        return super().get_help_record(ctx)


def rows() -> list[list[Any]]:
    """Return a table row per policy: name, what it decides, needs, summary."""
    return [
        [p["name"], ", ".join(p["decides"]) or "-", p["needs"] or "-", p["summary"]]
        for p in engine.list_policies()
    ]
