"""Every command ends its --help with examples, and the examples are real."""

from __future__ import annotations

import shlex

import click

from pcplab.cli import cli


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    """Yield (path, command) for every leaf command under GROUP."""
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _examples(epilog: str) -> list[list[str]]:
    """Return each example command of an epilog as argv, comments dropped."""
    text = epilog.split("Examples:", 1)[1].replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        if line.strip().startswith("pcplab "):  # not a line of explanation
            out.append(shlex.split(line, comments=True)[1:])
    return out


def test_every_command_shows_examples():
    """As bcc's tools do, each command's usage ends with lines to paste."""
    missing = [
        " ".join(path)
        for path, command in _commands(cli)
        if not (command.epilog or "").startswith("\b\nExamples:")
    ]
    assert missing == []


def test_every_example_names_its_command_and_real_options():
    """An example's command exists and each of its --options is the command's."""
    for path, command in _commands(cli):
        for argv in _examples(command.epilog or ""):
            target: click.Command = cli
            while isinstance(target, click.Group):
                target = target.commands[argv.pop(0)]
            options = {o for p in target.params for o in (*p.opts, *p.secondary_opts)}
            used = {a.split("=")[0] for a in argv if a.startswith("--")}
            assert used <= options, (path, used - options)
