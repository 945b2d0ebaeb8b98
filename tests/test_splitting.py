"""Splitting long text for Discord: on newlines, within the limit, with code fences balanced in every part."""

from bot.discord_adapter.splitting import split_message


def test_short_text_is_one_part():
    assert split_message("hello\nworld") == ["hello\nworld"]


def test_splits_on_newlines_within_limit():
    text = "\n".join(f"line {i:04d} " + "x" * 40 for i in range(200))
    parts = split_message(text, 500)
    assert len(parts) > 1
    assert all(len(part) <= 500 for part in parts)
    assert "\n".join(parts) == text
    assert all(part.startswith("line ") for part in parts)


def test_code_fences_stay_balanced_across_parts():
    code = "\n".join(f"print({i})  # " + "y" * 30 for i in range(100))
    text = f"Intro\n```python\n{code}\n```\nOutro"
    parts = split_message(text, 400)
    assert len(parts) > 2
    for part in parts:
        assert len(part) <= 400
        assert part.count("```") % 2 == 0, part
    assert parts[1].startswith("```python\n")
    rejoined = "".join(parts)
    for i in range(100):
        assert f"print({i})" in rejoined


def test_very_long_line_is_cut_at_spaces():
    text = " ".join(["word"] * 2000)
    parts = split_message(text, 2000)
    assert all(len(part) <= 2000 for part in parts)
    assert all(not part.startswith(" ") for part in parts)
    assert sum(part.count("word") for part in parts) == 2000


def test_unbroken_long_token_is_hard_cut():
    parts = split_message("z" * 5000, 2000)
    assert all(len(part) <= 2000 for part in parts)
    assert "".join(parts) == "z" * 5000
