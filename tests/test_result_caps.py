"""What a tool result may hold: text cut with a marker inside the limit, oversized images noted, cut results stable."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import BinaryContent, ToolReturn

from bot.agents.result_caps import ResultLimits, capped_result, truncated
from bot.config import ConfigError, parse_config

LIMITS = ResultLimits(text_bytes=1024, binary_bytes=2000)


def size(value) -> int:
    return len(value.encode())


def test_text_that_fits_is_untouched_and_text_over_is_cut_within_the_limit_with_a_marker():
    assert capped_result("x" * 1024, LIMITS) == "x" * 1024
    cut = capped_result("x" * 5000, LIMITS)
    assert cut == "x" * 971 + "\n…[truncated: 5,000 bytes, showing the first 971]"
    assert size(cut) <= 1024 and capped_result(cut, LIMITS) == cut


def test_a_cut_never_splits_a_character():
    cut = truncated("é" * 5000, 1024)
    assert cut == "é" * 485 + "\n…[truncated: 10,000 bytes, showing the first 970]"


def test_structured_results_are_kept_as_they_are_or_cut_as_their_json():
    assert capped_result({"rows": [1, 2]}, LIMITS) == {"rows": [1, 2]}
    cut = capped_result({"rows": ["y" * 3000]}, LIMITS)
    assert cut.startswith('{"rows":["yyy') and cut.endswith("\n…[truncated: 3,013 bytes, showing the first 971]")


def test_items_share_the_limit_and_those_after_the_cut_are_left_out_except_images_that_fit():
    small_image = BinaryContent(b"p" * 30, media_type="image/png")
    result = ["a" * 600, "b" * 600, "c" * 10, small_image]
    cut = capped_result(result, LIMITS)
    assert cut == ["a" * 600, "b" * 371 + "\n…[truncated: 1,210 bytes, showing the first 971]", small_image]
    assert capped_result(cut, LIMITS) == cut


def test_an_image_over_its_limit_becomes_a_note():
    big_image = BinaryContent(b"p" * 3000, media_type="image/png")
    assert capped_result(["look:", big_image], LIMITS) == [
        "look:",
        "…[omitted: image/png content of 3,000 bytes, over the limit of 2,000]",
    ]
    assert capped_result(BinaryContent(b"p" * 2000, media_type="image/png"), LIMITS).data == b"p" * 2000


def test_a_tool_return_has_its_value_cut():
    cut = capped_result(ToolReturn(return_value="z" * 5000, metadata={"app": 1}), LIMITS)
    assert cut.return_value.endswith("showing the first 971]") and cut.metadata == {"app": 1}


def test_the_limits_are_settings_of_the_tools_table():
    config = parse_config("[tools]\nresult_max_bytes = 4096\nresult_max_binary_bytes = 0\n")
    assert ResultLimits.of(config) == ResultLimits(text_bytes=4096, binary_bytes=0)
    assert ResultLimits.of(parse_config("")) == ResultLimits(text_bytes=65_536, binary_bytes=2 * 1024 * 1024)
    with pytest.raises(ConfigError, match="result_max_bytes"):
        parse_config("[tools]\nresult_max_bytes = 10\n")
