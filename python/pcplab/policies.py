"""The PCP policies of the model (src/mm/policies/): --policy and their list.

The engines own the policies; the front end keeps no list. Their names
are read from an engine only when a help page or `pcplab policies` shows
them, and the engines refuse an unknown one in one line.
"""

from __future__ import annotations

from typing import Any

import click

from pcplab import engine
from pcplab.errors import EngineError


def policy_help() -> str:
    """Say which policies the model has."""
    try:
        listed = engine.list_policies()
    except EngineError as exc:
        return f"PCP policy (the engines cannot list them: {exc})."
    names = ", ".join(p["name"] for p in listed) or "none built"
    return f"PCP policy: {names} ('pcplab policies' says what each decides)."


class PolicyOption(click.Option):
    """A --policy option whose help lists the model's policies."""

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
