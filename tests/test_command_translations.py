"""Every synced command, option and choice has its words in each language of the catalogue.

The tree is the bot's real one (its cogs loaded, nothing connected), so a new command without its messages fails
here, named."""

from __future__ import annotations

import discord
import pytest
from discord import app_commands
from discord.app_commands import TranslationContext
from discord.app_commands import TranslationContextLocation as Where
from discord.ext import commands

from bot.app import INITIAL_EXTENSIONS
from bot.discord_adapter.command_translator import CatalogueTranslator, message_id
from bot.i18n import ENGLISH, bundle, language_of, localized

DISCORD_DESCRIPTION_LIMIT = 100
TRANSLATED = [locale for locale in discord.Locale if language_of(locale) != ENGLISH]  # each Discord locale we speak
SPANISH = (discord.Locale.spain_spanish, discord.Locale.latin_american_spanish)


async def _tree() -> app_commands.CommandTree:
    bot = commands.Bot(command_prefix=(), intents=discord.Intents.none())
    for extension in INITIAL_EXTENSIONS:
        await bot.load_extension(extension)
    return bot.tree


def _contexts(tree: app_commands.CommandTree) -> list[tuple[TranslationContext, str]]:
    """What Discord is told in words: each description and choice, with its English."""
    found: list[tuple[TranslationContext, str]] = []

    def walk(command: app_commands.Command | app_commands.Group) -> None:
        if isinstance(command, app_commands.Group):
            found.append((TranslationContext(Where.group_description, command), command.description))
            for child in command.commands:
                walk(child)
            return
        found.append((TranslationContext(Where.command_description, command), command.description))
        for parameter in command.parameters:
            found.append((TranslationContext(Where.parameter_description, parameter), parameter.description))
            for choice in parameter.choices:
                found.append((TranslationContext(Where.choice_name, choice), choice.name))

    for command in tree.get_commands():
        assert isinstance(command, (app_commands.Command, app_commands.Group))
        walk(command)
    return found


async def _untranslated(tree: app_commands.CommandTree) -> list[str]:
    """Each description or choice some language lacks, or says differently in English than the code, or too long."""
    translator = CatalogueTranslator()
    problems = []
    for context, english in _contexts(tree):
        key = message_id(context)
        assert key is not None
        if not bundle(ENGLISH).has_message(key):
            problems.append(f"{key}: no {ENGLISH}")
        elif localized(key, ENGLISH) != english:
            problems.append(f"{key}: the code's English is not the catalogue's")
        for locale in TRANSLATED:
            words = await translator.translate(app_commands.locale_str(english), locale, context)
            language = language_of(locale)
            if words is None:
                problems.append(f"{key}: no {language}")
            elif not 1 <= len(words) <= DISCORD_DESCRIPTION_LIMIT:
                problems.append(f"{key}: {language} is {len(words)} characters")
    return sorted(set(problems))


async def test_every_command_option_and_choice_has_its_words_in_every_language():
    tree = await _tree()
    assert len(_contexts(tree)) > 50
    assert await _untranslated(tree) == []


async def test_a_new_command_without_its_messages_is_named():
    tree = await _tree()

    @app_commands.command(name="wave", description="Wave at someone")
    @app_commands.describe(whom="Who to wave at")
    @app_commands.choices(whom=[app_commands.Choice(name="everyone", value="everyone")])
    async def wave(interaction: discord.Interaction, whom: str) -> None: ...

    tree.add_command(wave)
    problems = await _untranslated(tree)
    assert "cmd-wave: no en" in problems
    assert "cmd-wave: no es" in problems
    assert "cmd-wave-whom: no es" in problems
    assert "choice-everyone: no es" in problems


@pytest.mark.parametrize("locale", SPANISH)
async def test_both_spanish_locales_get_the_spanish_words(locale):
    tree = await _tree()
    spawn = tree.get_command("subagents").get_command("spawn")  # type: ignore[union-attr]
    context = TranslationContext(Where.command_description, spawn)
    translated = await CatalogueTranslator().translate(app_commands.locale_str(spawn.description), locale, context)
    assert translated == localized("cmd-subagents-spawn", "es")
    english = await CatalogueTranslator().translate(
        app_commands.locale_str(spawn.description), discord.Locale.american_english, context
    )
    assert english is None  # Discord shows the command's own (English) words
