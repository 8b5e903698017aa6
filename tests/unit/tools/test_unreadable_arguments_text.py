"""What the model reads for a call whose arguments did not parse says it once.

The OpenAI and Responses decoders word their detail "the arguments are not a complete JSON object ..."; the text
wrapped it whole: "The arguments were not a complete JSON object (the arguments are not a complete JSON object
(finish_reason 'tool_calls'))".
"""

from __future__ import annotations

from agentactors.tools.results import unreadable_arguments_text


def test_a_wires_own_words_are_not_repeated_only_what_they_add() -> None:
    text = unreadable_arguments_text(
        "add", "unparseable", "the arguments are not a complete JSON object (finish_reason 'tool_calls')", ("a",), "",
    )
    assert text.count("complete JSON object") == 1
    assert "The arguments were not a complete JSON object (finish_reason 'tool_calls')." in text
    bare = unreadable_arguments_text("add", "unparseable", "the arguments are not a complete JSON object", ("a",), "")
    assert "The arguments were not a complete JSON object. If they were cut off" in bare


def test_another_detail_is_kept_as_it_is() -> None:
    text = unreadable_arguments_text("add", "unparseable", "Expecting ',' delimiter: line 1 column 9", ("a",), "")
    assert "The arguments were not a complete JSON object (Expecting ',' delimiter: line 1 column 9)." in text
