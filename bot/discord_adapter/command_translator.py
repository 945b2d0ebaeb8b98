"""Slash commands' descriptions and choices in the member's language.

They come from the same catalogue as every reply. Discord shows each member the localization for their client's
language. Names of commands and options stay English: they are what the README, people and the agents' own words
share. A message's id is built from where it sits: ``cmd-subagents-spawn`` describes ``/subagents spawn``,
``cmd-subagents-spawn-task`` its ``task`` option, and ``choice-week`` names the choice ``week`` wherever it appears.
"""

from __future__ import annotations

from discord import Locale, app_commands
from discord.app_commands import TranslationContextLocation as Where

from bot.i18n import ENGLISH, bundle, language_of

COMMAND_PREFIX = "cmd-"
CHOICE_PREFIX = "choice-"
DESCRIPTIONS = (Where.command_description, Where.group_description)


def _path(name: str) -> str:
    return name.replace(" ", "-")


def message_id(context: app_commands.TranslationContextTypes) -> str | None:
    """The catalogue id of what is being translated; None for what stays as it is (names)."""
    data = context.data
    if isinstance(data, (app_commands.Command, app_commands.Group)) and context.location in DESCRIPTIONS:
        return COMMAND_PREFIX + _path(data.qualified_name)
    if isinstance(data, app_commands.Parameter) and context.location is Where.parameter_description:
        return f"{COMMAND_PREFIX}{_path(data.command.qualified_name)}-{data.name}"
    if isinstance(data, app_commands.Choice) and context.location is Where.choice_name:
        return f"{CHOICE_PREFIX}{data.name}"
    return None


class CatalogueTranslator(app_commands.Translator):
    """Every language of the catalogue but English.

    English is the commands' own words, which Discord shows by default."""

    async def translate(
        self, string: app_commands.locale_str, locale: Locale, context: app_commands.TranslationContextTypes
    ) -> str | None:
        language = language_of(locale)
        key = message_id(context)
        if language == ENGLISH or key is None:
            return None
        found = bundle(language)
        if not found.has_message(key):
            return None  # tests/test_command_translations.py names it
        message = found.get_message(key)
        if message.value is None:
            return None
        words, _errors = found.format_pattern(message.value, {})
        return str(words)
