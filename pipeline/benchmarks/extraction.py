"""Answer extraction from model completions, reading numbers as each MGSM language writes them.

`extract_number(completion, language)` returns the final numeric answer of a chain-of-thought
completion. The conventions per language (decimal separator, thousands separators, answer
phrases, digits) and the rules for ambiguous forms are tabled in pipeline/benchmarks/README.md
("Answer extraction"); `CONVENTIONS` below is that table in code.
"""
from __future__ import annotations

import ast
import math
import re
import unicodedata
from dataclasses import dataclass

from pipeline.text import truncate_at_stop  # noqa: F401  (re-exported: the benchmarks cut completions with it)

_TYPOGRAPHIC_SPACES = "\u00a0\u202f\u2009\u2007"  # no-break, narrow no-break, thin, figure space
_ENGLISH_PHRASE = r"the answer is"


@dataclass(frozen=True)
class NumberConvention:
    """How one language writes numbers, and how its completions state the answer."""

    code: str
    decimal: str  # "." or ","
    group_spaces: str  # space characters that separate thousands (besides the non-decimal of . and ,)
    phrases: tuple[str, ...]  # regexes (case-insensitive) introducing the answer, native ones
    digits: str = "ASCII"  # native digits read besides ASCII (any Unicode decimal digit is read)
    cjk_multipliers: bool = False  # 2万8000 = 28000, 3千 = 3000, 1億 = 10^8

    @property
    def group_by_point(self) -> bool:
        return self.decimal == ","


_SPACES_TOO = " " + _TYPOGRAPHIC_SPACES

CONVENTIONS: dict[str, NumberConvention] = {c.code: c for c in (
    NumberConvention("en", ".", _TYPOGRAPHIC_SPACES, ()),
    NumberConvention("bn", ".", _TYPOGRAPHIC_SPACES,
                     (r"উত্তর\s*(?:হল|হলো|হচ্ছে|[:ঃ])",), digits="Bengali ০-৯"),
    NumberConvention("de", ",", _SPACES_TOO, (r"die antwort (?:lautet|ist)", r"antwort\s*:")),
    NumberConvention("es", ",", _SPACES_TOO, (r"la respuesta (?:final )?es", r"respuesta\s*:")),
    NumberConvention("fr", ",", _SPACES_TOO, (r"la réponse (?:finale )?est", r"réponse\s*:")),
    NumberConvention("ja", ".", _TYPOGRAPHIC_SPACES, (r"答えは", r"答え\s*[:：]"),
                     digits="full-width ０-９", cjk_multipliers=True),
    NumberConvention("ru", ",", _SPACES_TOO,
                     (r"ответ\s*(?:[—–-]|:|равен|равно|будет|составляет)",)),
    NumberConvention("sw", ".", _TYPOGRAPHIC_SPACES, (r"jibu ni", r"jibu\s*:")),
    NumberConvention("te", ".", _TYPOGRAPHIC_SPACES, (r"సమాధానం\s*(?:[:]|అనేది|is)?",),
                     digits="Telugu ౦-౯"),
    NumberConvention("th", ".", _TYPOGRAPHIC_SPACES, (r"คำตอบ\s*(?:คือ|[:])",), digits="Thai ๐-๙"),
    NumberConvention("zh", ".", _TYPOGRAPHIC_SPACES, (r"答案(?:是|为|為|\s*[:：])",),
                     digits="full-width ０-９", cjk_multipliers=True),
)}

LANGUAGES = tuple(CONVENTIONS)


def convention(language: str | None) -> NumberConvention:
    """The convention for an MGSM language code (None: English); a clear error otherwise."""
    if language is None:
        return CONVENTIONS["en"]
    key = str(language).strip().lower()
    if key not in CONVENTIONS:
        raise ValueError(f"answer extraction knows no language {language!r}; "
                         f"known: {', '.join(LANGUAGES)}")
    return CONVENTIONS[key]


# --- tokens ----------------------------------------------------------------------------

# A dash is a minus sign only when it is attached to the digits and does not follow a digit, a
# letter of a space-separated alphabet (Latin, Greek, Cyrillic) or a closing bracket: "10-20",
# "x-1" and "(3+2)-1" are subtractions. CJK and Thai text may precede a sign directly.
_SIGN = (r"(?P<sign>(?<![\dA-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u0370-\u03ff"
         r"\u0400-\u04ff)\]}])[-\u2212\u2013\u2012\u2010\u2011\ufe63\uff0d])?")
_FRACTION = r"(?<![\d/\u2044])(?P<num>\d+)[/\u2044](?P<den>\d+)(?![\d/\u2044])"
_VULGAR = r"(?P<vwhole>\d+)?(?P<vulgar>[\u00bc-\u00be\u2150-\u215e])"
_MULTIPLIERS = {"万": 1e4, "萬": 1e4, "亿": 1e8, "億": 1e8, "千": 1e3}


def _token_pattern(conv: NumberConvention) -> re.Pattern:
    spaces = re.escape(conv.group_spaces)
    run = (r"(?P<lead>(?<![\w.,])\.(?=\d))?"
           rf"(?P<run>\d+(?:(?:[.,]|[{spaces}](?=\d{{3}}(?!\d)))\d+)*)")
    # 千 before 克/米/瓦/卡/焦 is the kilo- of a unit (5千克 = 5 kg), not a multiplier
    mult = r"(?P<mult>[万萬亿億]|千(?![克米瓦卡焦]))?" if conv.cjk_multipliers else ""
    return re.compile(f"{_SIGN}(?:{_FRACTION}|{_VULGAR}|{run}{mult})")


_PATTERNS = {code: _token_pattern(conv) for code, conv in CONVENTIONS.items()}


@dataclass
class _Number:
    start: int
    end: int
    value: float  # the reading as a grouped integer when ambiguous
    decimal_value: float | None = None  # the decimal reading, when ambiguous
    separator: str = ""  # the ambiguous separator
    multiplier: float = 0.0  # CJK multiplier that ended the token
    signed: bool = False

    def read(self, decimals: frozenset[str]) -> float:
        """The value under the decimal separators in force: an ambiguous `1,234` or `1.234` is
        a decimal only if its separator is the decimal separator of every convention in force."""
        if self.decimal_value is not None and decimals == {self.separator}:
            return float(self.decimal_value)
        return float(self.value)


def _grouped(digits: list[str], seps: list[str]) -> bool:
    """Digits joined by one thousands separator: 1,234,567 / 1.234 / 1 234 / 1,00,000 (lakh)."""
    if not seps:
        return True
    if len(set(seps)) != 1 or digits[0].startswith("0"):
        return False
    if 1 <= len(digits[0]) <= 3 and all(len(d) == 3 for d in digits[1:]):
        return True
    return (seps[0] == "," and len(digits) >= 3 and 1 <= len(digits[0]) <= 2
            and len(digits[-1]) == 3 and all(len(d) == 2 for d in digits[1:-1]))


def _read_run(text: str, start: int, sign: float) -> list[_Number]:
    """A run of digits and separators: one number, or, when no reading fits, its digit groups."""
    parts = re.split(r"([.,]|\s)", text)
    digits, seps = parts[0::2], ["space" if s.isspace() else s for s in parts[1::2]]
    end = start + len(text)
    if not seps:
        return [_Number(start, end, sign * float(text))]
    as_integer = _grouped(digits, seps)
    as_decimal = (seps[-1] in ".," and _grouped(digits[:-1], seps[:-1])
                  and (len(seps) == 1 or seps[0] != seps[-1]))
    integer = sign * float("".join(digits)) if as_integer else None
    decimal = sign * float("".join(digits[:-1]) + "." + digits[-1]) if as_decimal else None
    if integer is not None and decimal is not None:  # 1,234 or 1.234: the language decides
        return [_Number(start, end, integer, decimal, seps[0])]
    if integer is not None or decimal is not None:
        return [_Number(start, end, integer if integer is not None else decimal)]
    numbers, position = [], start  # 1,2,3 or 10.05.2023: no single number; read each group
    for i, group in enumerate(digits):
        numbers.append(_Number(position, position + len(group), (sign if i == 0 else 1) * float(group)))
        position += len(group) + (len(parts[2 * i + 1]) if 2 * i + 1 < len(parts) else 0)
    return numbers


def _numbers(text: str, conv: NumberConvention) -> list[_Number]:
    numbers: list[_Number] = []
    for m in _PATTERNS[conv.code].finditer(text):
        sign = -1.0 if m.group("sign") else 1.0
        if m.group("num") is not None:
            num, den = float(m.group("num")), float(m.group("den"))
            if den == 0:
                numbers += [_Number(m.start("num"), m.end("num"), sign * num),
                            _Number(m.start("den"), m.end("den"), 0.0)]
            else:
                numbers.append(_Number(m.start(), m.end(), sign * num / den, signed=sign < 0))
                _join_mixed_fraction(text, numbers)
        elif m.group("vulgar") is not None:
            whole = float(m.group("vwhole")) if m.group("vwhole") else 0.0
            numbers.append(_Number(m.start(), m.end(),
                                   sign * (whole + unicodedata.numeric(m.group("vulgar")))))
        else:
            run = _read_run(m.group("run"), m.start("run"), sign)
            if m.group("lead") and re.fullmatch(r"\d+", m.group("run")):  # .5
                run = [_Number(m.start(), m.end(), sign * float("0." + m.group("run")))]
            run[0].start, run[0].signed = m.start(), sign < 0
            numbers += run
            multiplier = m.groupdict().get("mult")
            if multiplier:
                _apply_multiplier(numbers, _MULTIPLIERS[multiplier], m.end())
            elif conv.cjk_multipliers:
                _merge_with_previous_part(numbers)
    return [n for n in numbers if math.isfinite(n.value)  # digits beyond any float: no number
            and (n.decimal_value is None or math.isfinite(n.decimal_value))]


def _join_mixed_fraction(text: str, numbers: list[_Number]) -> None:
    """1 3/4 = 1.75: a whole number, one space, then a proper fraction."""
    if len(numbers) < 2:
        return
    whole, fraction = numbers[-2], numbers[-1]
    if (fraction.start == whole.end + 1 and text[whole.end] == " " and not fraction.signed
            and 0 < fraction.value < 1 and whole.decimal_value is None
            and float(whole.value).is_integer()):
        magnitude = abs(whole.value) + fraction.value
        numbers[-2:] = [_Number(whole.start, fraction.end,
                                -magnitude if whole.value < 0 else magnitude)]


def _apply_multiplier(numbers: list[_Number], multiplier: float, end: int) -> None:
    """2万 = 20000, and 1億2000万5000 = 120005000: each part adds to a preceding larger part."""
    token = numbers[-1]
    value = token.read(frozenset(".")) * multiplier
    token.value, token.decimal_value, token.end, token.multiplier = value, None, end, multiplier
    _merge_with_previous_part(numbers)


def _merge_with_previous_part(numbers: list[_Number]) -> None:
    if len(numbers) < 2:
        return
    previous, token = numbers[-2], numbers[-1]
    if (previous.multiplier and previous.end == token.start and not token.signed
            and abs(token.value) < previous.multiplier):
        total = previous.value + (abs(token.value) if previous.value >= 0 else -abs(token.value))
        numbers[-2:] = [_Number(previous.start, token.end, total,
                                multiplier=token.multiplier or 1.0)]


# --- the answer ------------------------------------------------------------------------

_PHRASES = {code: re.compile("|".join(f"(?P<native{i}>{p})" for i, p in enumerate(conv.phrases))
                             + ("|" if conv.phrases else "") + f"(?P<english>{_ENGLISH_PHRASE})",
                             re.IGNORECASE)
            for code, conv in CONVENTIONS.items()}
_CLAUSE_END = re.compile(r"\n|[.。।!?！？](?!\d)")
_OPERATOR_GAP = re.compile(r"\s*[$€£¥₹%]?\s*(?:[-+*/×÷·x−–]|\s:)\s*[$€£¥₹]?\s*")
_EQUALS = re.compile(r"[=＝]")


def extract_number(completion: str, language: str | None = None) -> float | None:
    """The final numeric answer of a chain-of-thought completion, or None.

    `language`: the MGSM language code of the item (None: English). The number after the last
    answer phrase (English "The answer is", or the language's own) when there is one, else the
    last number. After the phrase, a calculation ("The answer is 10-20 = -10.") gives its final
    result. Thousands separators, currency signs, units and trailing periods are not part of
    the number.
    """
    conv = convention(language)
    if not completion:
        return None
    numbers = _numbers(completion, conv)
    if not numbers:
        return None
    markers = list(_PHRASES[conv.code].finditer(completion))
    if markers:
        marker = markers[-1]
        after = [n for n in numbers if n.start >= marker.end()]
        if after:
            in_force = {conv.decimal}
            if marker.group("english") is not None:
                in_force.add(".")  # English around native numbers: either convention may be in use
            return _answer_after(completion, marker.end(), after).read(frozenset(in_force))
    return numbers[-1].read(frozenset(conv.decimal))


def _answer_after(text: str, start: int, after: list[_Number]) -> _Number:
    """The first number of the answer's clause, or the result of a calculation written there."""
    end = _CLAUSE_END.search(text, start)
    clause_end = end.start() if end else len(text)
    clause = [n for n in after if n.end <= clause_end]
    if len(clause) < 2:
        return after[0]
    first, second = clause[0], clause[1]
    if not _OPERATOR_GAP.fullmatch(text[first.end:second.start]):
        return first
    equals = [m.end() for m in _EQUALS.finditer(text, first.end, clause_end)]
    results = [n for n in clause if equals and n.start >= equals[-1]]
    return results[0] if results else first


_CALCULATION = re.compile(r"\s*([0-9.,+\-*/x×÷() ]+?)\s*=")
_CALCULATOR_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
                   ast.Div: lambda a, b: a / b}


def calculator_result(completion: str) -> float | None:
    """The value of the calculation a completion opens with ("96 + 1 = ..." -> 97), or None.

    GSM8K's solutions mark each calculation for a calculator (`<<96+1=97>>`); its paper decoded with one: when
    the model writes "=", the calculator writes the result. For a one-step answer that is this: the text before
    the first "=" is read as arithmetic (numbers, + - * / x × ÷, parentheses; commas as thousands separators)
    and evaluated, whatever the model wrote after the "=". Anything else (words, no "=", a division by 0) is None.
    """
    match = _CALCULATION.match(completion or "")
    if not match:
        return None
    text = match.group(1).replace(",", "").replace("×", "*").replace("x", "*").replace("÷", "/")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return None

    def value(node) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _CALCULATOR_OPS:
            return _CALCULATOR_OPS[type(node.op)](value(node.left), value(node.right))
        raise ValueError("not arithmetic")

    try:
        result = value(tree.body)
    except (ValueError, ZeroDivisionError):
        return None
    return result if math.isfinite(result) else None


# --- gold answers ----------------------------------------------------------------------

def parse_gold_number(text: str, language: str | None = None) -> float:
    """A gold answer as the dataset writes it (GSM8K and MGSM: English style, "5,600")."""
    conv = convention(language)
    stripped = str(text).strip()
    numbers = _numbers(stripped, conv)
    if len(numbers) == 1 and numbers[0].start == 0 and numbers[0].end == len(stripped):
        return numbers[0].read(frozenset(conv.decimal))
    try:  # a float's repr, as the synthetic worlds write references (e.g. 1e-05)
        value = float(stripped)
    except ValueError:
        value = float("nan")
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"gold answer is not a number: {text!r}")
    return value


def numbers_match(predicted: float | None, gold: float) -> bool:
    return predicted is not None and abs(predicted - gold) <= 1e-6 * max(1.0, abs(gold))
