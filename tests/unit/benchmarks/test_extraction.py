"""Answer extraction in the 11 MGSM languages: completions written as models write them (native
answer phrase, native separators and digits, or the English "The answer is" our prompts teach
around numbers copied from the native question), the English edge cases of issue 13, a
round-trip over many numbers formatted per language, and MGSM's real gold answers."""
import random
from pathlib import Path

import pytest

from pipeline.benchmarks.extraction import (CONVENTIONS, LANGUAGES, extract_number, numbers_match,
                                            parse_gold_number)
from pipeline.benchmarks.tasks import EvalItem, MGSMTask
from pipeline.scoring import get_metric

SHARED = (Path(__file__).resolve().parents[3] / ".." / "shared" / "benchmarks").resolve()

NNBSP, NBSP = "\u202f", "\u00a0"

# (language, completion, answer). MGSM rows 1-3 (Janet's ducks: 18; Josh's house: 70,000),
# and other GSM-style endings, per language.
COMPLETIONS = [
    # English
    ("en", "Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4, so 16 - 3 - 4 = 9 eggs "
           "are left. She sells them for $2 each, so 9 * 2 = $18. The answer is 18.", 18),
    ("en", "The house cost 80,000 + 50,000 = $130,000. The value rose by 80,000 * 150% = 120,000, "
           "so it is worth 200,000. 200,000 - 130,000 = 70,000. The answer is $70,000.", 70000),
    ("en", "The answer is 10-20 = -10.", -10),
    ("en", "She used 3 of her 4 cups, so 3/4 of the flour. The answer is 3/4.", 0.75),
    ("en", "It was 3 degrees and fell by 8: 3 - 8 = −5. The answer is −5.", -5),
    ("en", "Each slice is 1.25 dollars, 4 slices cost 4 * 1.25 = 5. The answer is 5.", 5),
    ("en", "He walks 1 3/4 miles a day. The answer is 1 3/4 miles.", 1.75),
    ("en", "The answer is 1,234,567.89", 1234567.89),
    # German
    ("de", "Janets Enten legen 16 Eier pro Tag. Sie isst 3 und backt mit 4, also bleiben "
           "16 - 3 - 4 = 9 Eier. Sie verkauft jedes für 2 $, also 9 * 2 = 18 $. "
           "Die Antwort lautet 18.", 18),
    ("de", "Josh kauft das Haus für 80.000 US-Dollar und steckt 50.000 US-Dollar hinein, also "
           "130.000 US-Dollar. Der Wert steigt um 150 %, also um 80.000 * 1,5 = 120.000 US-Dollar "
           "auf 200.000 US-Dollar. Gewinn: 200.000 - 130.000 = 70.000. Die Antwort lautet 70.000.",
     70000),
    ("de", "Josh bought the house for 80.000 and put 50.000 into repairs, 130.000 in total. It is "
           "now worth 200.000, so he made 200.000 - 130.000 = 70.000. The answer is 70.000.", 70000),
    ("de", "Ein Kilo kostet 2,50 €, drei Kilo kosten 3 * 2,50 = 7,50 €. Die Antwort lautet 7,50 €.",
     7.5),
    ("de", "Zusammen 1.000 + 234,5 = 1.234,5 Liter. Die Antwort ist 1.234,5.", 1234.5),
    ("de", "Ein Paket wiegt 1,250 kg.", 1.25),  # a lone 1,250 in German is a decimal
    ("de", "Er fährt 20 : 4 = 5 Runden. Die Antwort lautet 5.", 5),
    ("de", "Sie hatte 12 € und gibt 15 € aus, also 12 - 15 = −3. Die Antwort lautet −3.", -3),
    # Spanish
    ("es", "Los patos de Janet ponen 16 huevos por día. Come 3 y usa 4 para magdalenas: "
           "16 - 3 - 4 = 9. Vende cada uno a 2 $, así que gana 9 * 2 = 18 $. La respuesta es 18.",
     18),
    ("es", "Josh compra la casa por 80 000 $ y gasta 50 000 $ en reparaciones: 130 000 $. El valor "
           "aumenta un 150 %: 80 000 * 1,5 = 120 000 $, así que vale 200 000 $. La ganancia es "
           "200 000 - 130 000 = 70 000. La respuesta es 70 000.", 70000),
    ("es", "Gana 1.500 euros al mes. La respuesta es 1.500 euros.", 1500),
    ("es", "Cada kilo cuesta 0,75 $, tres kilos cuestan 3 * 0,75 = 2,25 $. La respuesta es 2,25.",
     2.25),
    ("es", "The second glass costs 5 * 0,6 = 3 $. The answer is 64.", 64),
    # French
    ("fr", "Les canes de Janet pondent 16 œufs par jour. Elle en mange 3 et en utilise 4 : il en "
           "reste 16 - 3 - 4 = 9. Elle les vend 2 $ pièce : 9 × 2 = 18 $. La réponse est 18.", 18),
    ("fr", f"Josh paie 80{NNBSP}000 $ + 50{NNBSP}000 $ = 130{NNBSP}000 $. La maison vaut "
           f"200{NNBSP}000 $, donc 200{NNBSP}000 - 130{NNBSP}000 = 70{NNBSP}000 $. "
           f"La réponse est 70{NNBSP}000.", 70000),
    ("fr", "Elle paie 3 × 6,00 = 18,00 €.\nRéponse : 18,00 €", 18),
    ("fr", "Il court 7 km en 2 heures, soit 3,5 km par heure. La réponse est 3,5.", 3.5),
    ("fr", f"Il reste 1{NBSP}234 - 1{NBSP}246 = −12 billes. La réponse est −12.", -12),
    ("fr", "Il achète 1 000 + 234 = 1 234 pommes. La réponse est 1 234 pommes.", 1234),
    # Russian
    ("ru", "Утки Джанет несут 16 яиц в день. Она съедает 3 и печёт с 4, остаётся 16 - 3 - 4 = 9 "
           "яиц. Она продаёт их по 2 доллара: 9 * 2 = 18 долларов. Ответ — 18.", 18),
    ("ru", "Дом стоил 80 000 долларов, ремонт 50 000, всего 130 000. Дом теперь стоит 200 000, "
           "прибыль 200 000 - 130 000 = 70 000. Ответ: 70 000.", 70000),
    ("ru", "Он проезжает 5 км за 2 часа, то есть 2,5 км в час. Ответ: 2,5.", 2.5),
    ("ru", "Температура была 5 градусов и упала на 8: 5 - 8 = −3. Ответ равен −3.", -3),
    # Swahili
    ("sw", "Bata wa Janet hutaga mayai 16 kwa siku. Anakula 3 na kuoka na 4, hivyo 16 - 3 - 4 = 9 "
           "yanabaki. Anauza kila yai kwa $2, hivyo 9 * 2 = $18. Jibu ni 18.", 18),
    ("sw", "Josh alinunua nyumba kwa $80,000 na kutumia $50,000 kwa ukarabati, jumla $130,000. "
           "Thamani sasa ni $200,000, faida ni 200,000 - 130,000 = $70,000. Jibu ni 70,000.", 70000),
    ("sw", "Anatembea kilomita 3 kwa saa 2, yaani kilomita 1.5 kwa saa. Jibu ni 1.5.", 1.5),
    ("sw", "Alikuwa na 10 na akatoa 20: 10 - 20 = -10. The answer is -10.", -10),
    # Bengali
    ("bn", "জ্যানেটের হাঁসগুলি প্রতিদিন ১৬টি ডিম পাড়ে। সে ৩টি খায় এবং ৪টি দিয়ে মাফিন বানায়, "
           "তাই ১৬ - ৩ - ৪ = ৯টি ডিম থাকে। সে প্রতিটি ডিম ২ ডলারে বিক্রি করে, তাই ৯ * ২ = ১৮ ডলার। "
           "উত্তর হল ১৮।", 18),
    ("bn", "জশ ৮০,০০০ ডলারে বাড়িটি কিনেছে এবং ৫০,০০০ ডলার মেরামতে খরচ করেছে। লাভ "
           "২,০০,০০০ - ১,৩০,০০০ = ৭০,০০০ ডলার। উত্তর হল ৭০,০০০।", 70000),
    ("bn", "মোট খরচ 1,20,000 টাকা। উত্তর হল 1,20,000 টাকা।", 120000),
    ("bn", "সে ৫ কিমি ২ ঘণ্টায় হাঁটে, অর্থাৎ ঘণ্টায় ২.৫ কিমি। উত্তর হল ২.৫।", 2.5),
    ("bn", "Janet makes 9 * 2 = $18 every day. The answer is 18.", 18),
    # Telugu
    ("te", "జానెట్ బాతులు రోజుకు 16 గుడ్లు పెడతాయి. ఆమె 3 తింటుంది, 4 తో మఫిన్లు చేస్తుంది, కాబట్టి "
           "16 - 3 - 4 = 9 గుడ్లు మిగులుతాయి. ఒక్కో గుడ్డును $2 కు అమ్ముతుంది, కాబట్టి 9 * 2 = $18. "
           "సమాధానం 18.", 18),
    ("te", "ఆమెకు రోజుకు ౯ * ౨ = ౧౮ డాలర్లు వస్తాయి. సమాధానం ౧౮.", 18),
    ("te", "లాభం 2,00,000 - 1,30,000 = 70,000 డాలర్లు. సమాధానం: 70,000", 70000),
    ("te", "మొత్తం ఖర్చు 1,50,000 రూపాయలు. సమాధానం 1,50,000.", 150000),
    # Thai
    ("th", "เป็ดของเจเน็ตวางไข่วันละ 16 ฟอง เธอกิน 3 ฟองและใช้อบขนม 4 ฟอง จึงเหลือ 16 - 3 - 4 = 9 ฟอง "
           "เธอขายฟองละ 2 ดอลลาร์ จึงได้ 9 * 2 = 18 ดอลลาร์ คำตอบคือ 18", 18),
    ("th", "เธอได้เงิน ๙ * ๒ = ๑๘ ดอลลาร์ต่อวัน คำตอบคือ ๑๘ ดอลลาร์", 18),
    ("th", "กำไรคือ 200,000 - 130,000 = 70,000 ดอลลาร์ คำตอบคือ 70,000 ดอลลาร์", 70000),
    ("th", "เขาเดิน 5 กิโลเมตรใน 2 ชั่วโมง คือ 2.5 กิโลเมตรต่อชั่วโมง\nคำตอบ: 2.5", 2.5),
    # Japanese
    ("ja", "ジャネットのアヒルは1日に16個の卵を産みます。3個を朝食に食べ、4個でマフィンを焼くので、"
           "16 - 3 - 4 = 9個残ります。1個2ドルで売るので、9 × 2 = 18ドルです。答えは18です。", 18),
    ("ja", "利益は20万ドル - 13万ドル = 7万ドルです。答えは7万ドルです。", 70000),
    ("ja", "合計で９×２＝１８ドルです。答えは１８です。", 18),
    ("ja", "家賃は2万8000円です。答えは2万8000円です。", 28000),
    ("ja", "5キロを2時間で歩くので、時速2.5キロです。答え：2.5", 2.5),
    ("ja", "1個100円のりんごを10個買うと1,000円です。答えは1,000円です。", 1000),
    # Chinese
    ("zh", "珍妮特的鸭子每天下16个蛋。她早餐吃3个，用4个烤松饼，所以剩下16 - 3 - 4 = 9个。"
           "每个卖2美元，所以她每天赚9 × 2 = 18美元。答案是18。", 18),
    ("zh", "利润是20万 - 13万 = 7万美元。答案是 7万。", 70000),
    ("zh", "利润是 200,000 - 130,000 = 70,000 美元。答案是 70,000。", 70000),
    ("zh", "温度从5度下降了8度，5 - 8 = −3。答案是 −3。", -3),
    ("zh", "每袋5千克，共2袋，即10千克。答案：10千克", 10),
    ("zh", "1亿2000万人口。答案是1亿2000万。", 120_000_000),
]


def test_every_language_has_realistic_completions():
    counts = {language: sum(c[0] == language for c in COMPLETIONS) for language in LANGUAGES}
    assert set(LANGUAGES) == {"en", "bn", "de", "es", "fr", "ja", "ru", "sw", "te", "th", "zh"}
    assert min(counts.values()) >= 4, counts


@pytest.mark.parametrize("language, completion, expected", COMPLETIONS)
def test_mgsm_style_completions(language, completion, expected):
    assert extract_number(completion, language) == pytest.approx(expected)


@pytest.mark.parametrize("completion, language, expected", [
    # the same text read in different conventions: only single-separator three-digit forms differ
    ("1.234", "en", 1.234), ("1.234", "de", 1234), ("1,234", "en", 1234), ("1,234", "de", 1.234),
    ("1,234", "fr", 1.234), ("1.234", "es", 1234), ("1,234", "ja", 1234), ("1.234", "zh", 1.234),
    # unambiguous forms read alike everywhere
    ("1.234,5", "en", 1234.5), ("1,234.5", "de", 1234.5), ("1.234.567", "en", 1234567),
    ("1,234,567", "fr", 1234567), ("18,00", "en", 18), ("3.5", "de", 3.5), ("0,500", "en", 0.5),
    ("1234,567", "en", 1234.567), ("1,00,000", "en", 100000),
    # the English phrase in a decimal-comma language: both conventions may be in use
    ("The answer is 5,600.", "de", 5600), ("The answer is 5.600.", "de", 5600),
    ("Die Antwort lautet 5,600.", "de", 5.6), ("The answer is 5.600.", "en", 5.6),
    # plain spaces group thousands only where the language writes them so
    ("La réponse est 18 000.", "fr", 18000), ("The answer is 18 000.", "en", 18),
    (f"The answer is 18{NNBSP}000.", "en", 18000), ("Il a 2023 150 élèves", "fr", 150),
    # signs: Unicode minus and dashes are signs only when attached and not after a digit/letter
    ("The answer is −5.", None, -5), ("The answer is –5.", None, -5), ("答案是－5。", "zh", -5),
    ("pages 10–20", None, 20), ("x−1", None, 1), ("Ответ — 18.", "ru", 18),
    # fractions, not dates
    ("The answer is 3/4.", None, 0.75), ("She ate ¾ of it", None, 0.75), ("1½ cups", None, 1.5),
    ("Due 3/4/2023", None, 2023), ("2 2/3", None, 2 + 2 / 3), ("The answer is 12/4 = 3.", None, 3),
    # an answer phrase followed by working: the working's result
    ("The answer is 10-20 = -10.", None, -10), ("The answer is 5 + 3 = 8 apples.", None, 8),
    ("The answer is $10 - $3 = $7.", None, 7), ("La réponse est 20 : 4 = 5.", "fr", 5),
    ("The answer is 18 (16 - 3 - 4 = 9, 9 * 2 = 18).", None, 18),
    ("The answer is 18: 16-7 = 9 was a slip.", None, 18),
    ("The answer is 18. Check: 16 - 3 - 4 = 9, 9 * 2 = 18, plus 100", None, 18),
    # CJK multipliers, and kilo- units that are not multipliers
    ("答えは5千円です。", "ja", 5000), ("答案是5千米。", "zh", 5), ("1億", "ja", 1e8),
    ("两个数分别是3，4", "zh", 4),  # a full-width comma is punctuation, not a separator
    ("答案是3.5万。", "zh", 35000),
])
def test_conventions_and_edge_cases(completion, language, expected):
    assert extract_number(completion, language) == pytest.approx(expected)


def test_no_number_and_unknown_language():
    for language in LANGUAGES:
        assert extract_number("", language) is None
        assert extract_number("no number here", language) is None
    with pytest.raises(ValueError, match="knows no language 'xx'; known: en, bn"):
        extract_number("The answer is 5.", "xx")
    with pytest.raises(ValueError, match="knows no language 'syn-lij'"):
        extract_number("5", "syn-lij")
    assert extract_number("The answer is 5.", "DE") == 5  # codes are case-insensitive
    assert extract_number("9" * 5000) is None  # beyond any float: not a number, not an error
    assert extract_number("The answer is 7. " + "1,000" * 2000) == 7


def test_gold_parsing_is_strict():
    assert parse_gold_number("5,600") == 5600 and parse_gold_number(" -3 ") == -3
    assert parse_gold_number("0.5") == 0.5 and parse_gold_number("1e-05") == 1e-05
    assert parse_gold_number("1.234", "de") == 1234
    for bad in ("nan", "inf", "", "12 apples", "3 4"):
        with pytest.raises(ValueError, match="gold answer is not a number"):
            parse_gold_number(bad)


# --- round trip: a number formatted per a language's convention reads back as itself ----------

_NATIVE_DIGITS = {"bn": "০১২৩৪৫৬৭৮৯", "te": "౦౧౨౩౪౫౬౭౮౯", "th": "๐๑๒๓๔๕๖๗๘๙",
                  "ja": "０１２３４５６７８９", "zh": "０１２３４５６７８９"}
_PHRASE = {"en": "The answer is {}.", "bn": "উত্তর হল {}।", "de": "Die Antwort lautet {}.",
           "es": "La respuesta es {}.", "fr": "La réponse est {}.", "ja": "答えは{}です。",
           "ru": "Ответ: {}.", "sw": "Jibu ni {}.", "te": "సమాధానం {}.", "th": "คำตอบคือ {}",
           "zh": "答案是{}。"}


def _format(value: float, decimals: int, language: str, rng: random.Random) -> str:
    """`value` as a writer of `language` would write it, with a randomly chosen (valid) style."""
    conv = CONVENTIONS[language]
    text = f"{abs(value):.{decimals}f}"
    whole, _, fraction = text.partition(".")
    group = rng.choice([",", ""] if conv.decimal == "." else [".", " ", NNBSP, NBSP, ""])
    if language in ("bn", "te") and group and rng.random() < 0.5:  # lakh grouping
        head, tail = whole[:-3], whole[-3:]
        pairs = [head[max(0, i - 2):i] for i in range(len(head), 0, -2)][::-1]
        grouped = ",".join([*pairs, tail]) if head else tail
    elif group:
        grouped = f"{int(whole):,}".replace(",", group)
    else:
        grouped = whole
    number = grouped + (conv.decimal + fraction if fraction else "")
    if language in _NATIVE_DIGITS and rng.random() < 0.5:
        number = number.translate(str.maketrans("0123456789", _NATIVE_DIGITS[language]))
    if value < 0:
        number = rng.choice(["-", "\u2212"]) + number
    return number


@pytest.mark.parametrize("language", LANGUAGES)
def test_formatting_per_convention_round_trips(language):
    rng = random.Random(f"round-trip-{language}")
    for _ in range(1500):
        decimals = rng.choice([0, 0, 1, 2, 3])
        magnitude = 10 ** rng.randint(0, 9)
        value = round(rng.uniform(0, magnitude), decimals) * rng.choice([1, 1, 1, -1])
        written = _format(value, decimals, language, rng)
        for completion in (written, _PHRASE[language].format(written),
                           f"12 + 30 = 42\n{_PHRASE[language].format(written)}"):
            got = extract_number(completion, language)
            assert got == pytest.approx(value, abs=1e-9), (completion, value, got)


# --- the pipeline's callers pass each item's language -----------------------------------------

def test_mgsm_task_scores_each_item_in_its_language():
    task = MGSMTask({"name": "mgsm"})
    items = [EvalItem(id="de", prompt="", reference=1234.0, group="de"),
             EvalItem(id="en", prompt="", reference=1234.0, group="en"),
             EvalItem(id="fr", prompt="", reference=70000.0, group="fr")]
    completions = [["Die Antwort lautet 1.234."], ["The answer is 1.234."],
                   ["La réponse est 70 000."]]
    metrics, records = task.score(items, completions)
    assert [r["correct"] for r in records] == [True, False, True]
    assert [r["extracted"] for r in records] == [1234, 1.234, 70000]


def test_gsm_accuracy_reads_a_row_language_when_present():
    rows = [{"prompt": "q", "target": "1234", "language": "de"}, {"prompt": "q", "target": "1234"}]
    summary, records = get_metric("gsm_accuracy")(rows, [["Die Antwort lautet 1.234."]] * 2, {})
    assert [r["correct"] for r in records] == [True, False]


# --- MGSM's real gold answers, written natively -----------------------------------------------

@pytest.mark.skipif(not (SHARED / "mgsm").is_dir(), reason=f"MGSM copy not found at {SHARED}")
def test_mgsm_gold_answers_written_natively_read_back_in_every_language():
    from pipeline.benchmarks import data

    rng = random.Random(13)
    for language in LANGUAGES:
        rows = data.load_mgsm(language, local_dir=str(SHARED / "mgsm"), hub_id=None)
        assert len(rows) == 250
        for row in rows:
            gold = parse_gold_number(row["answer"])  # the dataset writes "5,600" in every language
            assert numbers_match(extract_number(f"The answer is {row['answer']}.", language), gold)
            native = _PHRASE[language].format(_format(gold, 0, language, rng))
            assert numbers_match(extract_number(f"{row['question']}\n{native}", language), gold), \
                (language, native)
            extract_number(row["question"], language)  # every native question reads without error


def test_any_text_gives_a_finite_number_or_none():
    """Fuzz over the characters the rules treat specially: never an exception, never inf/nan."""
    pool = list("0123456789১৮౧๑１.,，． \u00a0\u202f/⁄½¾-−–=+*×:万億千克x()The answer is答案是Ответ—\n。।$€")
    rng = random.Random(0)
    for _ in range(3000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
        for language in LANGUAGES:
            value = extract_number(text, language)
            assert value is None or abs(value) < float("inf"), (text, language)
