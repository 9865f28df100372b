"""Word lists and value normalisation shared by the extractor and the adjudicator (English and Chinese).

Nothing here is tied to a particular sentence: these are the general vocabularies a
rule-based reader needs (fillers, change and negation markers, context qualifiers,
domains) and the normalisers that make "half a million" equal "500,000" and
"六点半" equal "6:30", so two wordings of one value compare equal.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Decimal, localcontext

CJK = re.compile(r"[\u4e00-\u9fff]")

# --- fillers: turns that carry no fact -------------------------------------------------------
FILLER_EN = frozenset(
    "ok okay k kk thanks thank you thx ty cool great nice good fine sure yes yeah yep no nope hi hello hey "
    "bye goodbye lol haha hahaha hmm hm um uh ah oh wow alright right got it see understood noted please "
    "welcome sounds awesome perfect np cheers morning evening night good-night gotcha yup sorry much a lot so "
    "very too and then well".split()
)
FILLER_ZH = (
    "哈哈", "呵呵", "嘿嘿", "嗯嗯", "嗯", "好的", "好吧", "好", "行", "可以", "谢谢", "多谢", "感谢", "没问题", "收到", "知道了",
    "明白", "了解", "你好", "您好", "再见", "拜拜", "晚安", "早安", "早", "对", "是的", "对的", "哦", "噢", "啊", "呀", "吧", "啦",
    "呢", "嘛", "了", "哇", "ok", "OK", "辛苦", "不客气", "没事", "那就这样", "就这样", "太好了", "真好", "不错", "棒",
)

# --- markers -------------------------------------------------------------------------------
CHANGE_EN = (
    "now", "these days", "nowadays", "currently", "at the moment", "anymore", "any more", "no longer", "instead",
    "from now on", "recently", "lately", "switched", "changed", "moved", "new", "grown", "cut", "raised",
    "reduced", "increased", "decreased", "updated", "became", "become", "pushed", "postponed", "extended",
    "shrunk", "shrank", "dropped", "fell", "rescheduled", "started", "began",
)
CHANGE_ZH = (
    "现在", "如今", "目前", "最近", "已经", "不再", "改为", "改成", "换成", "换了", "变成", "变为", "调整", "搬到", "搬去",
    "转行", "推迟", "提前", "延期", "扩充", "扩大", "增加到", "减少到", "削减", "降到", "升到", "新", "戒",
)
NEGATION_EN = ("not", "no longer", "never", "no more", "doesn't", "don't", "isn't", "aren't", "wasn't", "hasn't", "haven't")
CESSATION_EN = ("quit", "quitted", "stopped", "gave up", "given up", "give up", "stop", "no longer", "not anymore")
CESSATION_ZH = ("戒", "不再", "停止", "放弃", "不喝了", "不吃了")
NEGATION_ZH = ("不再", "不是", "没有", "不", "没", "别", "非")

# --- context qualifiers (normalised key -> surface forms) --------------------------------------
CONTEXT_WORDS: dict[str, tuple[str, ...]] = {
    "weekday": ("on weekdays", "on weekday", "during the week", "on workdays", "on working days", "weekdays",
                "工作日", "平时", "平日", "周一到周五"),
    "weekend": ("on weekends", "on weekend", "at weekends", "at the weekend", "on the weekend", "weekends",
                "周末", "双休日", "星期六和星期天"),
    "holiday": ("on holidays", "on holiday", "during holidays", "节假日", "假期", "放假时"),
    "work": ("at work", "in the office", "at the office", "at my job", "在公司", "在单位", "在办公室", "上班时", "上班的时候"),
    "home": ("at home", "in the house", "在家里", "在家"),
    "school": ("at school", "在学校"),
    "summer": ("in summer", "in the summer", "during summer", "夏天", "夏季"),
    "winter": ("in winter", "in the winter", "during winter", "冬天", "冬季"),
    "spring": ("in spring", "in the spring", "春天", "春季"),
    "autumn": ("in autumn", "in the autumn", "in fall", "in the fall", "秋天", "秋季"),
    "morning": ("in the morning", "in the mornings", "早上", "上午", "清晨"),
    "evening": ("in the evening", "in the evenings", "at night", "晚上", "夜里", "傍晚"),
}
WEEKDAYS_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WEEKDAYS_ZH = {"一": "monday", "二": "tuesday", "三": "wednesday", "四": "thursday", "五": "friday", "六": "saturday",
               "日": "sunday", "天": "sunday"}

# --- synonyms: phrases rewritten to one canonical wording before reading -----------------------
PHRASES_EN: tuple[tuple[str, str], ...] = (
    (r"\bget(?:s|ting)? out of bed\b|\bget(?:s|ting)? up\b|\bgot up\b|\bgot out of bed\b|\bwoke up\b|\bwakes up\b|\bwaking up\b",
     "wake up"),
    (r"\b(?:must|has to|have to|need to|needs to|should) be (?:finished|done|completed|delivered|submitted) by\b", "deadline is"),
    (r"\b(?:is|are) due (?:on|by)?\b", "deadline is"),
    (r"\bfavorite\b", "favourite"),
    (r"\bcolor\b", "colour"),
    (r"\bpicks?\b|\bchooses?\b|\bopts? for\b|\bwould rather have\b|\bgoes for\b", "prefers"),
    (r"\brather than\b|\binstead of\b|\bover\b", "over"),
    (r"\bmobile phone\b|\bcell ?phone\b|\bsmartphone\b", "phone"),
    (r"\bboss\b|\bsupervisor\b|\bline manager\b|\bdirect manager\b", "manager"),
    (r"\b(?:can not|cannot|can't) stand\b|\bdetests?\b|\bloathes?\b", "hates"),
    (r"\s(?:was|were) born on\b", "'s birthday is"),
    (r"\bworks? for\b", "works at"),
)
PHRASES_ZH: tuple[tuple[str, str], ...] = (
    (r"起来了?|起身", "起床"),
    (r"截至日期|截止时间|最后期限|deadline", "截止日期"),
    (r"上司|老板|主管|直属领导|顶头上司|经理人", "领导"),
    (r"移动电话|智能手机", "手机"),
    (r"之前|以前", "前"),
    (r"受不了|忍受不了|很反感|反感", "讨厌"),
    (r"睡觉|入睡|上床睡", "睡"),
    (r"每个月|每月", "月"),
    (r"工资|薪水", "月薪"),
)

# --- attribute vocabulary ----------------------------------------------------------------------
JOB_NOUNS_EN = frozenset(
    "engineer manager teacher nurse doctor scientist designer developer programmer student lawyer accountant "
    "professor consultant analyst architect writer artist chef cook pilot driver farmer researcher officer clerk "
    "salesman saleswoman journalist editor photographer musician dentist pharmacist technician mechanic electrician "
    "plumber secretary assistant intern founder ceo cto cfo owner translator tutor lecturer economist banker "
    "trader marketer recruiter librarian waiter waitress barista cashier nanny therapist psychologist surgeon "
    "veterinarian vet soldier police policeman firefighter coach athlete actor actress singer dancer".split()
)
JOB_SUFFIX_ZH = ("工程师", "经理", "老师", "教师", "医生", "护士", "律师", "会计", "学生", "教授", "设计师", "程序员",
                 "科学家", "分析师", "顾问", "司机", "厨师", "记者", "编辑", "店长", "销售", "员", "师", "家", "生")
MODALS_EN = frozenset("can could will would should must may might just does did do shall".split())
"""Words the generic reader skips when looking for the main verb ("the user can speak ...")."""
MULTI_VALUED = frozenset({"allergy", "language", "verb:like", "verb:love", "verb:enjoy", "verb:speak", "verb:play",
                          "verb:visit", "verb:know", "verb:own", "verb:have", "verb:喜欢", "verb:养", "verb:会"})
"""Attributes that can hold several values at once: another value is not a replacement."""

DIET_EN = ((r"\b(?:vegetarian|vegan|pescatarian)\b", False), (r"\beats? (?:any )?meat\b|\beating meat\b", True))
"""(pattern, eats meat) read on the statement with its negation words removed; negation then flips it."""
DIET_ZH = ((r"不再吃素|不再是素食|不是素食|不吃素|开始吃肉|恢复吃肉|又吃肉|吃荤", True),
           (r"素食|吃素|不吃肉|不碰肉|不沾荤", False), (r"吃肉", True))
"""(pattern, eats meat) read on the whole statement (the patterns carry their own negation)."""

# --- domains (tag -> trigger words) --------------------------------------------------------------
DOMAINS: dict[str, tuple[str, ...]] = {
    "watch": ("watch", "smartwatch", "strap", "手表", "表带", "手环"),
    "phone": ("phone", "iphone", "pixel", "galaxy", "huawei", "xiaomi", "手机", "华为", "小米", "荣耀", "三星", "mate"),
    "computer": ("laptop", "macbook", "windows", "notebook", "computer", "pc", "thinkpad", "笔记本", "电脑"),
    "shopping": ("buy", "bought", "purchase", "order", "price", "pink", "gift", "买", "购买", "下单", "价格", "粉色", "礼物"),
    "battery": ("battery", "charge", "charging", "续航", "充电", "电池", "充一次"),
    "budget": ("budget", "yuan", "rmb", "cost", "预算", "元", "块钱"),
    "food": ("vegetarian", "vegan", "meat", "peanut", "mango", "fruit", "cuisine", "lunch", "dinner", "breakfast",
             "eat", "素", "肉", "花生", "芒果", "水果", "菜", "午饭", "晚饭", "早饭", "吃"),
    "drink": ("coffee", "tea", "beer", "wine", "drink", "咖啡", "茶", "喝", "啤酒", "红酒", "白酒", "喝酒"),
    "health": ("allergic", "allergy", "fever", "cold", "colds", "flu", "sick", "过敏", "health", "健康", "感冒", "发烧",
               "生病"),
    "residence": ("live", "lives", "moved", "home", "city", "住在", "搬到", "搬去", "搬家", "家在"),
    "career": ("job", "work as", "works as", "profession", "manager", "career", "职业", "转行", "工作", "领导", "老师"),
    "project": ("deadline", "campaign", "launch", "team", "project", "截止", "活动", "发布会", "团队", "项目"),
    "coding": ("golang", "python", "rust", "java", "code", "coding", "programming", "editor", "neovim", "vim", "tabs", "spaces",
               "indent", "代码", "编程", "缩进", "编辑器"),
    "schedule": ("wake", "weekday", "weekend", "morning", "起床", "工作日", "周末", "早上"),
    "fitness": ("gym", "run", "running", "yoga", "健身", "跑步", "瑜伽"),
    "pet": ("dog", "cat", "pet", "狗", "猫", "宠物", "遛狗"),
    "commute": ("commute", "bike", "subway", "bus", "metro", "taxi", "walk to work", "walks to work", "通勤", "自行车",
                "地铁", "公交", "打车", "走路", "上班"),
    "travel": ("trip", "trips", "holiday", "holidays", "hotel", "hotels", "flight", "seat", "seats", "apartment", "airbnb",
               "出差", "度假", "旅行", "酒店", "民宿", "座位", "航班"),
    "language": ("japanese", "english", "french", "german", "chinese", "spanish", "korean", "日语", "英语", "法语",
                 "德语", "中文", "韩语", "西班牙语"),
    "communication": ("email", "emails", "chat", "message", "tone", "邮件", "微信", "语气", "消息"),
}

# --- numbers -------------------------------------------------------------------------------------
_UNITS_EN = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
_TENS_EN = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_SCALES_EN = {"hundred": 100, "thousand": 1000, "k": 1000, "million": 1_000_000, "m": 1_000_000, "billion": 1_000_000_000}
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_SMALL = {"十": 10, "百": 100, "千": 1000}
_ZH_BIG = {"万": 10_000, "亿": 100_000_000}
MONTHS_EN = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
             "november", "december")

_NUM_WORD = r"(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|" \
            r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|" \
            r"thousand|million|billion|and|a|half)"
_EN_WORDS_NUMBER = re.compile(rf"\b(?:{_NUM_WORD}[\s-]+)*(?:{_NUM_WORD})\b")


MAX_WORD_NUMBER_DIGITS = 30
"""A spelled-out number ("one hundred hundred ...") whose value would pass this many digits is left as words."""


def words_to_int(text: str) -> int | None:
    """'half a million' -> 500000, 'twelve' -> 12, 'three hundred thousand' -> 300000; None if not a number.

    None too when the value would have more than MAX_WORD_NUMBER_DIGITS digits (a run of "hundred"s
    is not a quantity anyone says), so the arithmetic stays small for any input.
    """
    words = [w for w in re.split(r"[\s-]+", text.lower().strip()) if w and w != "and"]
    if not words or words in (["a"], ["half"]):
        return None
    if words[0] == "half" and len(words) >= 2:  # "half a million"
        rest = words_to_int(" ".join(w for w in words[1:] if w != "a") or "one")
        return None if rest is None else rest // 2
    limit = 10 ** MAX_WORD_NUMBER_DIGITS
    total, current, seen = 0, 0, False
    for w in words:
        if w == "a":
            current = max(current, 1)
        elif w in _UNITS_EN:
            current += _UNITS_EN[w]
            seen = True
        elif w in _TENS_EN:
            current += _TENS_EN[w]
            seen = True
        elif w == "hundred":
            current = max(current, 1) * 100
            seen = True
        elif w in ("thousand", "million", "billion"):
            total += max(current, 1) * _SCALES_EN[w]
            current = 0
            seen = True
        else:
            return None
        if total >= limit or current >= limit:
            return None
    return total + current if seen else None


def decimal_token(number: str, scale: int = 1) -> str:
    """Digits (commas and one decimal point allowed) times ``scale``, rounded half to even, as ``n<digits>``.

    Exact for any length (decimal arithmetic at the number's own precision: no float, so no
    overflow at 309 digits and no lost digits past 17; no int, so no limit on digits converted):
    ``decimal_token("1,500")`` is ``n1500``, ``decimal_token("1.5", 10_000)`` is ``n15000``.
    """
    d = Decimal(number.replace(",", ""))
    with localcontext() as ctx:
        ctx.prec = len(number) + len(str(scale)) + 2
        ctx.Emax = ctx.prec + 10  # room for the number's own digits, whatever their count
        rounded = (d * scale).quantize(Decimal(1), rounding=ROUND_HALF_EVEN)
    return "n" + format(rounded, "f")


_ZH_SCALE = {"": 1, "百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}


def zh_to_int(text: str) -> int | None:
    """'五十万' -> 500000, '50万' -> 500000, '十二' -> 12, '1500' -> 1500, '1.5万' -> 15000; None if not a number.

    For Arabic digits of any length use :func:`zh_number_token` (a digit string, no int limit).
    """
    token = zh_number_token(text)
    if token is None or len(token) > 1 + MAX_WORD_NUMBER_DIGITS:
        return None
    return int(token[1:])


def zh_number_token(text: str) -> str | None:
    """``n<digits>`` of a Chinese number ('五十万', '50万', '1.5万', '1500'), exact for any length; None if not one."""
    text = text.strip()
    if not text:
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([万亿千百]?)", text.replace(",", ""))
    if m:
        return decimal_token(m.group(1), _ZH_SCALE[m.group(2)])
    if len(text) > 3 * MAX_WORD_NUMBER_DIGITS:
        return None  # numerals spelled out in characters: a quantity is a few of them
    total, section, current = 0, 0, 0
    for ch in text:
        if ch in _ZH_DIGITS:
            current = _ZH_DIGITS[ch]
        elif ch in _ZH_SMALL:
            section += max(current, 1) * _ZH_SMALL[ch]
            current = 0
        elif ch in _ZH_BIG:
            total += (section + current) * _ZH_BIG[ch]
            section, current = 0, 0
        else:
            return None
    return f"n{total + section + current}"


_TIME_EN = re.compile(r"\b(\d{1,2})(?::|\.)(\d{2})\s*(am|pm|a\.m\.|p\.m\.)?|\b(\d{1,2})\s*(am|pm|a\.m\.|p\.m\.)\b|"
                      r"\bhalf past (\w+)\b|\bquarter past (\w+)\b|\b(\w+) o'clock\b")
_DATE_EN = re.compile(rf"\b({'|'.join(MONTHS_EN)})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b|\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({'|'.join(MONTHS_EN)})\b")
_MONEY_EN = re.compile(r"(?<![\w:.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?:\s*(k|m|million|thousand|billion))?\b")
_ZH_NUM_CHARS = "零〇一二两三四五六七八九十百千万亿"
_TIME_ZH = re.compile(rf"(上午|下午|晚上|早上|中午|凌晨)?([\d{_ZH_NUM_CHARS}]{{1,3}})点(半|一刻|三刻|(\d{{1,2}}|[{_ZH_NUM_CHARS}]{{1,3}})分?)?")
_DATE_ZH = re.compile(rf"([\d{_ZH_NUM_CHARS}]{{1,3}})月([\d{_ZH_NUM_CHARS}]{{1,3}})(?:日|号)")
_NUM_ZH = re.compile(rf"(?<![a-z\d])\d+(?:,\d{{3}})*(?:\.\d+)?[万亿千百]?|(?<![周期拜])[{_ZH_NUM_CHARS}]{{1,8}}")


def _clock(hour: int, minute: int, meridiem: str | None) -> str:
    if meridiem and meridiem.startswith("p") and hour < 12:
        hour += 12
    return f"t{hour:02d}{minute:02d}"


def _en_time(m: re.Match) -> str:
    if m.group(1):
        return _clock(int(m.group(1)), int(m.group(2)), m.group(3))
    if m.group(4):
        return _clock(int(m.group(4)), 0, m.group(5))
    word = m.group(6) or m.group(7) or m.group(8)
    hour = int(word) if word.isdigit() else words_to_int(word)
    if hour is None or not 0 <= hour <= 24:
        return m.group(0)
    minute = 30 if m.group(6) else 15 if m.group(7) else 0
    return _clock(hour, minute, None)


def _en_date(m: re.Match) -> str:
    month = m.group(1) or m.group(4)
    day = m.group(2) or m.group(3)
    return f"d{MONTHS_EN.index(month) + 1:02d}{int(day):02d}"


_EN_SCALE = {None: 1, "k": 1000, "thousand": 1000, "m": 1_000_000, "million": 1_000_000, "billion": 1_000_000_000}


def _en_number(m: re.Match) -> str:
    return decimal_token(m.group(1), _EN_SCALE[m.group(2)])


def _en_word_number(m: re.Match) -> str:
    value = words_to_int(m.group(0))
    return m.group(0) if value is None else f"n{value}"


def normalize_values_en(text: str) -> str:
    """Lower-cased English with times (t0630), dates (d0630) and numbers (n500000) in one canonical spelling."""
    out = text.lower()
    out = _TIME_EN.sub(_en_time, out)
    out = _DATE_EN.sub(_en_date, out)
    out = _MONEY_EN.sub(_en_number, out)  # digits first: "2 million" is one number, not 2 and 1,000,000
    return _EN_WORDS_NUMBER.sub(_en_word_number, out)


def _zh_time(m: re.Match) -> str:
    hour = zh_to_int(m.group(2))
    if hour is None or (m.group(2) == "一" and not m.group(1) and not m.group(3)):
        return m.group(0)  # "有一点" is "a little", not one o'clock
    minute_part = m.group(3) or ""
    minute = {"半": 30, "一刻": 15, "三刻": 45, "": 0}.get(minute_part)
    if minute is None:
        minute = zh_to_int(m.group(4) or "") or 0
    meridiem = "pm" if m.group(1) in ("下午", "晚上") else None
    return _clock(hour, minute, meridiem)


def _zh_date(m: re.Match) -> str:
    month, day = zh_to_int(m.group(1)), zh_to_int(m.group(2))
    return m.group(0) if month is None or day is None else f"d{month:02d}{day:02d}"


def _zh_number(m: re.Match) -> str:
    token = m.group(0)
    if all(ch in "一" for ch in token) and len(token) == 1:
        return token  # a lone 一 is mostly an article ("一只", "一辆")
    value = zh_number_token(token)
    return token if value is None else value


def normalize_values_zh(text: str) -> str:
    """Chinese with times, dates and numbers (Arabic or Chinese numerals, 万/亿) in one canonical spelling."""
    out = _TIME_ZH.sub(_zh_time, text)
    out = _DATE_ZH.sub(_zh_date, out)
    return _NUM_ZH.sub(_zh_number, out)


def is_chinese(text: str) -> bool:
    return bool(CJK.search(text))


def _domain_pattern(triggers: tuple[str, ...]) -> re.Pattern:
    parts = [re.escape(w) if (CJK.search(w) or " " in w) else rf"\b{re.escape(w)}s?\b" for w in triggers]
    return re.compile("|".join(parts))


_DOMAIN_PATTERNS = {tag: _domain_pattern(triggers) for tag, triggers in DOMAINS.items()}


def domains_of(text: str) -> list[str]:
    """Domain tags whose trigger words occur in the text (whole words, plural allowed, for English)."""
    low = text.lower()
    return [tag for tag, pattern in _DOMAIN_PATTERNS.items() if pattern.search(low)]


# --- extraction ----------------------------------------------------------------------------------
PRODUCTS_EN = ("smartwatch", "smart watch", "watch", "phone", "laptop", "headphones", "earbuds", "tablet", "camera",
               "keyboard", "monitor", "speaker", "bike", "car", "sofa", "bed")
PRODUCTS_ZH = ("智能手表", "手表", "手环", "手机", "笔记本电脑", "笔记本", "电脑", "耳机", "平板", "相机", "键盘", "显示器",
               "音箱", "自行车", "沙发")
PARTS_EN = ("strap", "band", "battery", "battery life", "screen", "display", "case", "charger", "lens", "keyboard")
PARTS_ZH = ("表带", "续航", "电池", "屏幕", "表盘", "充电器", "镜头", "外壳")
