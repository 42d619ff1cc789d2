"""The split-string grammar and ReadInstruction, checked against TFDS 4.9.10's behaviour."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from readplan.errors import SplitError, UnsupportedSplitError
from readplan.planning.splits import AllSplits, ReadInstruction, SplitSpec, parse_split
from tests.strategies import percent_bounds, read_instructions

URL = "https://www.tensorflow.org/datasets/splits"


def RI(name: str, from_: Any = None, to: Any = None, unit: str = "abs") -> ReadInstruction:
    return ReadInstruction(name, from_=from_, to=to, unit=unit)


def prefixed(spec: str, message: str) -> str:
    return f"Error parsing split {spec!r}. See format at: {URL}\n{message}"


def unrecognized(spec: str, part: str) -> str:
    return prefixed(spec, f"Unrecognized split format: {part!r}. See format at {URL}")


# ---------------------------------------------------------------------------------------------
# Accepted forms


@pytest.mark.parametrize(
    ("spec", "parts"),
    [
        ("train", [RI("train")]),
        ("train[:10%]", [RI("train", to=10.0, unit="%")]),
        ("train[67%:84%]", [RI("train", 67.0, 84.0, "%")]),
        ("train[40:]", [RI("train", 40)]),
        ("train[-10%:]", [RI("train", -10.0, unit="%")]),
        ("train[-10%:-5%]", [RI("train", -10.0, -5.0, "%")]),
        ("train[:25]", [RI("train", to=25)]),
        ("train[:50%]+test[1:9]", [RI("train", to=50.0, unit="%"), RI("test", 1, 9)]),
        ("train[:2shard]", [RI("train", to=2, unit="shard")]),
        ("train[1shard]", [RI("train", 1, 2, "shard")]),
        ("train[0shard]", [RI("train", 0, 1, "shard")]),
        ("train[-0shard]", [RI("train", 0, 1, "shard")]),
        ("train[-1shard]", [RI("train", -1, 0, "shard")]),
        ("train[-2shard:]", [RI("train", -2, unit="shard")]),
        ("train[:-0shard]", [RI("train", to=0, unit="shard")]),
        ("train[:-0]", [RI("train", to=0)]),
        # S3: the first unit present applies to both bounds.
        ("train[10%:20]", [RI("train", 10.0, 20.0, "%")]),
        ("train[10:20%]", [RI("train", 10.0, 20.0, "%")]),
        ("train[5%:7shard]", [RI("train", 5.0, 7.0, "%")]),
        ("train[1shard:50%]", [RI("train", 1, 50, "shard")]),
        ("train[5shard:7]", [RI("train", 5, 7, "shard")]),
        # S4: Python's int() and float().
        ("train[1_0:]", [RI("train", 10)]),
        ("train[٣:]", [RI("train", 3)]),
        ("train[:٣]", [RI("train", to=3)]),
        ("train[1.5%:]", [RI("train", 1.5, unit="%")]),
        ("train[.5%:5.%]", [RI("train", 0.5, 5.0, "%")]),
        ("train[1_0%:]", [RI("train", 10.0, unit="%")]),
        ("train[-0%:]", [RI("train", -0.0, unit="%")]),
        ("train[-100%:100%]", [RI("train", -100.0, 100.0, "%")]),
        # Names are checked at resolution time only.
        ("Train", [RI("Train")]),
        ("tr-ain", [RI("tr-ain")]),
        ("train_x", [RI("train_x")]),
        ("ALL", [RI("ALL")]),
        ("all", [AllSplits()]),
        ("all+test", [AllSplits(), RI("test")]),
        ("train[:10%]+train[:10%]", [RI("train", to=10.0, unit="%")] * 2),
    ],
)
def test_accepted_forms(spec: str, parts: list[Any]) -> None:
    assert parse_split(spec).parts == tuple(parts)


@pytest.mark.parametrize(
    "spec",
    ["train+test", "train + test", "train+ test", "train\n+test", "train\t+\ttest", "train+test\n"],
)
def test_whitespace_is_allowed_around_plus_and_one_final_newline(spec: str) -> None:
    assert parse_split(spec).parts == (RI("train"), RI("test"))


@pytest.mark.parametrize("spec", ["train\n", "train[:5]\n"])
def test_one_trailing_newline(spec: str) -> None:
    assert parse_split(spec) == parse_split(spec[:-1])


# ---------------------------------------------------------------------------------------------
# Rejected forms: exact TFDS messages


@pytest.mark.parametrize(
    ("spec", "part"),
    [
        (" train", " train"),
        ("train ", "train "),
        ("train\t", "train\t"),
        ("train\n\n", "train\n\n"),
        ("train [:10]", "train [:10]"),
        ("train[ :10]", "train[ :10]"),
        ("train[: 10]", "train[: 10]"),
        ("train[5 :7]", "train[5 :7]"),
        ("train[:]", "train[:]"),
        ("train[]", "train[]"),
        ("train[1:2:3]", "train[1:2:3]"),
        ("train[1e1:]", "train[1e1:]"),
        ("train[1%shard]", "train[1%shard]"),
        ("train[-:5]", "train[-:5]"),
        ("train[:-]", "train[:-]"),
        ("train[%:5]", "train[%:5]"),
        ("train[:5%%]", "train[:5%%]"),
        ("train[1:2]extra", "train[1:2]extra"),
        ("train[1:2]]", "train[1:2]]"),
        ("train[²:]", "train[²:]"),  # a digit, but not a decimal digit
        ("train[+5:]", "train["),
        ("train+", ""),
        ("+train", ""),
        ("train++test", ""),
        ("train[]+test", "train[]"),
        ("", ""),
        ("all[]", "all[]"),
        ("all[ ]", "all[ ]"),
        ("test+train[:]+train[:101%]", "train[:]"),  # the first failing part wins
    ],
)
def test_unrecognized_forms(spec: str, part: str) -> None:
    with pytest.raises(SplitError) as info:
        parse_split(spec)
    assert type(info.value) is SplitError
    assert info.value.tfds_message == unrecognized(spec, part)
    assert (info.value.spec, info.value.part) == (spec, part)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("train[5]", "Absolute or percent only support slice syntax."),
        ("test[-1%]", "Absolute or percent only support slice syntax."),
        ("train[10.5:]", "invalid literal for int() with base 10: '10.5'"),
        ("train[.:5]", "invalid literal for int() with base 10: '.'"),
        ("train[1.:5]", "invalid literal for int() with base 10: '1.'"),
        ("train[_1:]", "invalid literal for int() with base 10: '_1'"),
        ("train[1__0:]", "invalid literal for int() with base 10: '1__0'"),
        ("train[10_:]", "invalid literal for int() with base 10: '10_'"),
        ("train[2.5shard:]", "invalid literal for int() with base 10: '2.5'"),
        ("train[5.5%]", "invalid literal for int() with base 10: '5.5'"),
        ("train[.%:]", "could not convert string to float: '.'"),
        ("train[1__0%:]", "could not convert string to float: '1__0'"),
        (
            "train[:101%]",
            "When unit=%, percent slice boundaries should be in [-100, 100]. Got: "
            "ReadInstruction('train[:101%]', rounding='closest')",
        ),
        (
            "test[-101%:0.5%]",
            "When unit=%, percent slice boundaries should be in [-100, 100]. Got: "
            "ReadInstruction('test[-101%:0.5%]', rounding='closest')",
        ),
    ],
)
def test_rejected_values(spec: str, message: str) -> None:
    with pytest.raises(SplitError) as info:
        parse_split(spec)
    assert type(info.value) is SplitError
    assert info.value.tfds_message == prefixed(spec, message)


@pytest.mark.parametrize("spec", ["all[:10%]", "all[:]", "all[abc]", "train+all[5]"])
def test_slicing_all_is_not_implemented(spec: str) -> None:
    with pytest.raises(NotImplementedError) as info:
        parse_split(spec)
    assert isinstance(info.value, UnsupportedSplitError)
    assert isinstance(info.value, ValueError)
    assert info.value.tfds_message == prefixed(
        spec,
        "'all' does not support slice. Please open a github issue if you need this feature.",
    )


@pytest.mark.parametrize(
    ("spec", "explains"),
    [
        ("train[:]", "write 'train' to read the whole split"),
        (" train", "whitespace"),
        ("train+", "nothing on one side"),
        ("", "empty"),
        ("train[1:2:3]", "exactly one"),
        ("train[+5:]", "unclosed '['"),
        ("train[1:2]extra", "after its ']'"),
        ("tr.ain", "Split name 'tr.ain' is not valid"),
        ("train[1e1:]", "Bound '1e1' is not valid"),
        ("train[5]", "'train[5:6]'"),
        ("train[-1%]", "'train[-1%:]'"),
        ("train[10.5:]", "only percent bounds may have a fraction"),
        ("train[150%:]", "outside [-100, 100]"),
        ("all[:5]", "'train[:10%]+test[:10%]'"),
    ],
)
def test_errors_start_with_tfds_text_and_explain(spec: str, explains: str) -> None:
    with pytest.raises(SplitError) as info:
        parse_split(spec)
    text = str(info.value)
    assert text.startswith(info.value.tfds_message + "\n")
    assert explains in text[len(info.value.tfds_message) :]


# ---------------------------------------------------------------------------------------------
# ReadInstruction: validation, repr, +


@pytest.mark.parametrize(
    ("instruction", "text"),
    [
        (RI("train"), "ReadInstruction('train')"),
        (RI("train", 1281167), "ReadInstruction('train[1.28117e+06:]')"),
        (RI("train", 1.5, unit="%"), "ReadInstruction('train[1.5%:]', rounding='closest')"),
        (RI("train", to=-2, unit="shard"), "ReadInstruction('train[:-2shard]')"),
        (RI("train", unit="%"), "ReadInstruction('train', rounding='closest')"),
        (
            ReadInstruction("train", from_=33.3, unit="%", rounding="pct1_dropremainder"),
            "ReadInstruction('train[33.3%:]', rounding='pct1_dropremainder')",
        ),
    ],
)
def test_repr_is_tfds(instruction: ReadInstruction, text: str) -> None:
    assert repr(instruction) == text


def test_str_is_a_split_string() -> None:
    assert str(RI("train", 1281167, -3)) == "train[1281167:-3]"
    assert str(RI("train", 1e-05, 50.0, "%")) == "train[0.00001%:50%]"
    assert str(RI("train", 1, 2, "shard") + "test") == "train[1shard:2shard]+test"
    pct1 = ReadInstruction("train", to=5, unit="%", rounding="pct1_dropremainder")
    assert str(pct1) == repr(pct1)  # no split string can carry the rounding


def test_addition_concatenates_in_order() -> None:
    combined = ReadInstruction("train", to=10, unit="%") + "test"
    assert isinstance(combined, SplitSpec)
    assert combined.parts == (RI("train", to=10, unit="%"), RI("test"))
    assert (
        repr(combined)
        == "ReadInstruction('train[:10%]', rounding='closest')+ReadInstruction('test')"
    )
    longer = RI("train") + RI("test", 3) + "validation[1:2]+all"
    assert longer.parts == (RI("train"), RI("test", 3), RI("validation", 1, 2), AllSplits())
    assert (longer + parse_split("test")).parts[-1] == RI("test")


def test_addition_rejects_non_splits() -> None:
    with pytest.raises(
        TypeError, match=re.escape("Adding split ReadInstruction('train') with non-split value: 5")
    ):
        RI("train") + 5  # type: ignore[operator]
    with pytest.raises(TypeError):
        "test" + RI("train")  # type: ignore[operator]


def test_addition_parses_strings_with_prefixed_errors() -> None:
    with pytest.raises(SplitError) as info:
        RI("train") + "test[:]"
    assert info.value.tfds_message == unrecognized("test[:]", "test[:]")


def test_from_spec_parses() -> None:
    assert ReadInstruction.from_spec("train[:5]+test") == parse_split("train[:5]+test")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"unit": "pct"}, "Unit should be one of ['%', 'abs', 'shard']. Got 'pct'"),
        (
            {"rounding": "up"},
            "Rounding should be one of ['closest', 'pct1_dropremainder']. Got: 'up'",
        ),
        (
            {"from_": -101, "unit": "%"},
            "When unit=%, percent slice boundaries should be in [-100, 100]. Got: "
            "ReadInstruction('train[-101%:]', rounding='closest')",
        ),
        (
            {"to": float("inf"), "unit": "%"},
            "When unit=%, percent slice boundaries should be in [-100, 100]. Got: "
            "ReadInstruction('train[:inf%]', rounding='closest')",
        ),
    ],
)
def test_construction_errors_are_tfds(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SplitError) as info:
        ReadInstruction("train", **kwargs)
    assert info.value.tfds_message == message
    assert str(info.value).startswith(message + "\n")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"from_": 1.5},
        {"to": 2.0, "unit": "shard"},
        {"from_": True},
        {"from_": "5"},
        {"to": float("nan"), "unit": "%"},
    ],
)
def test_construction_rejects_values_tfds_would_pass_on(kwargs: dict[str, Any]) -> None:
    with pytest.raises(SplitError):
        ReadInstruction("train", **kwargs)


def test_construction_type_errors() -> None:
    with pytest.raises(TypeError):
        ReadInstruction(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        parse_split(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        SplitSpec(())


# ---------------------------------------------------------------------------------------------
# Properties


@given(read_instructions())
@example(RI("train", -0.0, 1e-05, "%"))
@example(RI("train", -1, 0, "shard"))
@example(RI("train", 0, 0))
def test_str_round_trips_through_the_parser(instruction: ReadInstruction) -> None:
    (parsed,) = parse_split(str(instruction)).parts
    assert isinstance(parsed, ReadInstruction)
    assert (parsed.from_, parsed.to) == (instruction.from_, instruction.to)
    if instruction.from_ is not None or instruction.to is not None:
        assert parsed == instruction


def _g_exact(value: int | float | None) -> bool:
    return value is None or float(format(value, "g")) == value


@given(read_instructions())
@example(RI("train", 999999, -5))
@example(RI("train", 33.3, 66.6, "%"))
def test_repr_round_trips_when_g_format_is_exact(instruction: ReadInstruction) -> None:
    if not (_g_exact(instruction.from_) and _g_exact(instruction.to)):
        return
    match = re.fullmatch(r"ReadInstruction\('([^']*)'(, rounding='closest')?\)", repr(instruction))
    assert match is not None
    (parsed,) = parse_split(match.group(1)).parts
    assert (parsed.from_, parsed.to) == (instruction.from_, instruction.to)  # type: ignore[union-attr]


@given(
    st.lists(read_instructions("train") | read_instructions("test"), min_size=1, max_size=4),
    st.lists(st.sampled_from(["+", " + ", "\t+", "+\n ", "\n+\n"]), min_size=3, max_size=3),
)
def test_whitespace_around_plus_never_matters(
    parts: list[ReadInstruction], seps: list[str]
) -> None:
    texts = [str(part) for part in parts]
    spaced = texts[0] + "".join(sep + text for sep, text in zip(seps, texts[1:]))
    assert parse_split(spaced) == parse_split("+".join(texts))


@given(st.integers(min_value=-(10**6), max_value=10**6), percent_bounds())
@example(3, 12.5)
def test_unicode_decimal_digits_read_like_ascii(index: int, percent: float) -> None:
    arabic = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
    assert parse_split(f"train[{index}:]".translate(arabic)) == parse_split(f"train[{index}:]")
    text = str(RI("train", to=percent, unit="%"))
    assert parse_split(text.translate(arabic)) == parse_split(text)


@given(st.decimals(min_value=-150, max_value=150, places=2).map(float))
@example(100.5)
@example(-100.0)
def test_percent_range_is_checked_for_every_number(percent: float) -> None:
    spec = f"train[{percent}%:]"
    if abs(percent) <= 100:
        assert parse_split(spec).parts == (RI("train", percent, unit="%"),)
    else:
        with pytest.raises(SplitError):
            parse_split(spec)


@given(st.text(alphabet="trainsd[]:%.-_+ \n\t٣²0123456789e") | st.text())
@example("train[:]\n")
@example("train[1:+2]")
def test_every_string_parses_or_fails_with_an_explanation(spec: str) -> None:
    error: SplitError | None = None
    try:
        parsed = parse_split(spec)
    except SplitError as err:
        error = err
    if error is None:
        assert parse_split(str(parsed)) == parsed
    else:
        assert error.spec == spec
        assert str(error).startswith(error.tfds_message + "\n")
        assert error.tfds_message.startswith(f"Error parsing split {spec!r}.")
