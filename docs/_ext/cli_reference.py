"""Sphinx directive ``.. evalcert-cli::``: the CLI reference, generated from argparse.

It walks :func:`evalcert.cli.build_parser` (verbs and nested verbs such as ``irt fit``)
and emits one section per verb: its usage line, description and one row per argument
(flags, default, choices, help). Text is inserted as docutils text nodes, never parsed
as reStructuredText, so help strings with ``*`` or backquotes cannot break the build.
A new verb or flag appears in the docs without editing them.
"""

from __future__ import annotations

import argparse

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each verb directly under ``parser``."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                out.append((name, helps.get(name, ""), sub))
    return out


def _argument_row(action: argparse.Action) -> nodes.row:
    flags = ", ".join(action.option_strings) or (action.metavar or action.dest)
    if action.option_strings and action.nargs != 0:
        flags += f" {action.metavar or action.dest.upper()}"
    details = []
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        details.append("choices: " + ", ".join(map(str, action.choices)))
    if (action.option_strings and action.default not in (None, False, argparse.SUPPRESS)
            and action.nargs != 0 and "default" not in (action.help or "")):
        details.append(f"default: {action.default}")
    if action.required and action.option_strings:
        details.append("required")
    # argparse expands %(default)s, %(choices)s, ... and %% in help strings the same way
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, params["choices"]))
    text = (action.help or "") % params if action.help else ""
    if details:
        text = f"{text} ({'; '.join(details)})" if text else f"({'; '.join(details)})"
    row = nodes.row()
    row += nodes.entry("", nodes.paragraph("", "", nodes.literal(flags, flags)))
    row += nodes.entry("", nodes.paragraph(text, text))
    return row


def _arguments_table(parser: argparse.ArgumentParser) -> nodes.table | None:
    actions = [a for a in parser._actions
               if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
    if not actions:
        return None
    table = nodes.table(classes=["cli-arguments"])
    group = nodes.tgroup(cols=2)
    table += group
    group += nodes.colspec(colwidth=35)
    group += nodes.colspec(colwidth=65)
    head = nodes.thead()
    header = nodes.row()
    for title in ("argument", "meaning"):
        header += nodes.entry("", nodes.paragraph(title, title))
    head += header
    group += head
    body = nodes.tbody()
    for action in actions:
        body += _argument_row(action)
    group += body
    return table


class CLIReference(SphinxDirective):
    """Insert one section per verb of ``evalcert.cli.build_parser()``."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from evalcert.cli import build_parser

        return [self._section(name, help_, sub, ("evalcert",))
                for name, help_, sub in _subparsers(build_parser())]

    def _section(self, name: str, help_: str, parser: argparse.ArgumentParser,
                 prefix: tuple[str, ...]) -> nodes.section:
        path = (*prefix, name)
        title = " ".join(path)
        section = nodes.section(ids=[nodes.make_id("cli-" + "-".join(path[1:]))],
                                names=[nodes.fully_normalize_name(title)])
        section += nodes.title(title, "", nodes.literal(title, title))
        self.state.document.note_implicit_target(section)
        lead = parser.description or help_
        if lead:
            section += nodes.paragraph(lead, lead)
        usage = parser.format_usage().strip()
        section += nodes.literal_block(usage, usage)
        table = _arguments_table(parser)
        if table is not None:
            section += table
        if parser.epilog:
            section += nodes.paragraph(parser.epilog, parser.epilog)
        for sub_name, sub_help, sub in _subparsers(parser):
            section += self._section(sub_name, sub_help, sub, path)
        return section


def setup(app):  # noqa: D103 - Sphinx entry point
    app.add_directive("evalcert-cli", CLIReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
