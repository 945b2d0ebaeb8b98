"""Which text an announcement carries: final text, else the last tool result, else ``(no output)``;
after a timeout, the last assistant text or a count of the tool calls made."""

from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from bot.agents.runner import completed_result, partial_result

CALL = ModelResponse(parts=[ToolCallPart("search", {"q": "x"}, tool_call_id="c1")])
RETURN = ModelRequest(parts=[ToolReturnPart("search", "3 results found", tool_call_id="c1")])
PROMPT = ModelRequest(parts=[UserPromptPart("go")])


def test_final_text_wins():
    assert completed_result("the answer", [PROMPT, CALL, RETURN]) == "the answer"


def test_empty_final_text_uses_last_tool_result():
    assert completed_result("  ", [PROMPT, CALL, RETURN]) == "3 results found"


def test_nothing_at_all_is_no_output():
    assert completed_result("", [PROMPT]) == "(no output)"


def test_timeout_keeps_last_assistant_text():
    thinking = ModelResponse(parts=[TextPart("halfway"), ToolCallPart("search", {}, tool_call_id="c2")])
    assert partial_result([PROMPT, thinking, RETURN], stopped_by="timeout") == "halfway"


def test_timeout_with_only_tool_calls_counts_them():
    assert partial_result([PROMPT, CALL, RETURN, CALL], stopped_by="timeout") == (
        "[Partial progress: 2 tool call(s) executed before timeout]"
    )


def test_failure_without_text_uses_last_tool_result():
    assert partial_result([PROMPT, CALL, RETURN]) == "3 results found"
