from types import MappingProxyType

import pytest

from .errors import InvalidInputError
from .wrap import TextWrapper


def _settings(wrapper):
    return (wrapper.width, wrapper.indent, wrapper.break_long_words)


def test_empty_config_uses_the_defaults():
    wrapper = TextWrapper.from_config({})
    assert type(wrapper) is TextWrapper
    assert _settings(wrapper) == (70, "", True)


def test_all_settings():
    wrapper = TextWrapper.from_config({"width": 20, "indent": "  ", "break_long_words": False})
    assert _settings(wrapper) == (20, "  ", False)
    assert wrapper.wrap("aaa bbb ccc ddd eee fff") == ["  aaa bbb ccc ddd", "  eee fff"]


def test_width_may_be_a_digit_string_and_flags_are_booleans():
    assert _settings(TextWrapper.from_config({"width": " 30 "})) == (30, "", True)
    assert _settings(TextWrapper.from_config({"break_long_words": 0})) == (70, "", False)
    assert TextWrapper.from_config({"break_long_words": "yes"}).break_long_words is True


def test_any_mapping_is_accepted_and_subclasses_are_kept():
    class QuoteWrapper(TextWrapper):
        pass

    wrapper = QuoteWrapper.from_config(MappingProxyType({"width": 12, "indent": "> "}))
    assert isinstance(wrapper, QuoteWrapper)
    assert _settings(wrapper) == (12, "> ", True)


def test_unknown_keys_raise_value_error_naming_them_in_order():
    with pytest.raises(ValueError) as info:
        TextWrapper.from_config({"width": 10, "height": 3, "colour": "red"})
    message = str(info.value)
    assert "colour" in message and "height" in message
    assert message.index("colour") < message.index("height")
    assert "width" not in message


def test_bad_types_raise_type_error():
    for config in ([("width", 10)], None, "width=10"):
        with pytest.raises(TypeError):
            TextWrapper.from_config(config)
    for width in (12.5, True, "wide", None, "-5"):
        with pytest.raises(TypeError):
            TextWrapper.from_config({"width": width})


def test_non_string_indent_raises_invalid_input_error():
    with pytest.raises(InvalidInputError):
        TextWrapper.from_config({"indent": 4})


def test_width_without_room_raises_value_error():
    with pytest.raises(ValueError):
        TextWrapper.from_config({"width": 2, "indent": "  "})
    with pytest.raises(ValueError):
        TextWrapper.from_config({"width": "0"})
