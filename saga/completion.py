"""`saga completion bash`: a bash completion script made from the command line's own parser, so every
subcommand and option `saga --help` lists completes, and a new one needs nothing here."""

from __future__ import annotations

import argparse
import shlex

EMPTY = '""'  # the top level's path, as a bash case pattern


def _choices(parser: argparse.ArgumentParser) -> tuple[list[str], dict[str, argparse.ArgumentParser]]:
    """The parser's options and its subcommands (name -> parser)."""
    options: list[str] = []
    subcommands: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:  # argparse has no public walk over what it parses
        options += [option for option in action.option_strings if option.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            subcommands.update(action.choices)
    return options, subcommands


def _paths(parser: argparse.ArgumentParser, path: str = "") -> dict[str, list[str]]:
    """Each command path ("", "journey", "journey list", ...) -> the words that may follow it."""
    options, subcommands = _choices(parser)
    table = {path: [*subcommands, *options]}
    for name, sub in subcommands.items():
        table.update(_paths(sub, f"{path} {name}".strip()))
    return table


def bash_script(parser: argparse.ArgumentParser, program: str = "saga") -> str:
    """The completion function for `program`: the words after the command path typed so far (words that
    are not a command, an option's value or a journey id, are skipped), else the shell's file names."""
    table = _paths(parser)
    function = f"_{program.replace('-', '_')}_complete"
    cases = "\n".join(
        f"        {shlex.quote(path) if path else EMPTY}) words={shlex.quote(' '.join(words))} ;;"
        for path, words in table.items()
    )
    known = "|".join(shlex.quote(path) for path in table if path)
    return f"""# bash completion for {program} (made by `{program} completion bash`)
{function}() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" path="" next words i
    for ((i = 1; i < COMP_CWORD; i++)); do
        next="${{path:+$path }}${{COMP_WORDS[i]}}"
        case "$next" in
            {known}) path="$next" ;;
        esac
    done
    case "$path" in
{cases}
        *) words="" ;;
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F {function} {program}
"""
