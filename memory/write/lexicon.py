"""Word lists and value normalisation shared by the extractor and the adjudicator (English and Chinese).

Nothing here is tied to a particular sentence: these are the general vocabularies a
rule-based reader needs (fillers, change and negation markers, context qualifiers,
domains) and the normalisers that make "half a million" equal "500,000" and
"六点半" equal "6:30", so two wordings of one value compare equal.
"""

from __future__ import annotations

import re
from functools import lru_cache
from decimal import ROUND_HALF_EVEN, Decimal, localcontext

from memory.core.textcaches import text_cache
from memory.write.lang.script import is_chinese


# --- fillers: turns that carry no fact -------------------------------------------------------
FILLER_EN = frozenset(
    "ok okay k kk thanks thank you thx ty cool great nice good fine sure yes yeah yep no nope hi hello hey "
    "bye goodbye lol haha hahaha hmm hm um uh ah oh wow alright right got it see understood noted please "
    "welcome sounds awesome perfect np cheers morning evening night good-night gotcha yup sorry much a lot so "
    "very too and then well".split()
)
def filler_key(text: str) -> str:
    """A clause as fillers and asides are compared: lower case, every run of punctuation and spaces one space."""
    return re.sub(r"[\s\W_]+", " ", text).strip().lower()


ASIDES_EN = frozenset(filler_key(phrase) for phrase in (
    "just so you know", "so you know", "for what it's worth", "fwiw", "fyi", "just fyi", "by the way", "btw",
    "to be honest", "tbh", "honestly", "just saying", "as you know", "you know", "i mean", "anyway", "anyways",
    "for the record", "for your information", "heads up", "just a heads up", "quick update", "just an update",
    "if you must know", "believe it or not", "long story short", "as i said", "like i said"))
"""Asides that carry no fact of their own ("Just so you know, I'm seeing my dentist on May 3"): dropped as fillers are,
compared by :func:`filler_key`."""
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
NEGATION_EN = ("no longer", "not", "never", "no more")
"""Negation words of the English reader (it reads contractions expanded: "doesn't" is "does not")."""
CESSATION_EN = ("quit", "quitted", "stopped", "stop", "stops", "gave up", "give up", "gives up", "given up", "cut out")
"""Verbs that end a habit ("quit coffee", "gave up smoking"); the Chinese reader's are in its _CESSATION_ZH pattern."""
NEGATION_ZH = ("不再", "不是", "没有", "不", "没", "别", "非")

# --- the second look: signals read on the whole statement (memory.write.adjudicate, "second look" rules) ------
CHANGE_EVENT_EN = CHANGE_EN + (
    "relocated", "pushed back", "pushed out", "brought forward", "delayed", "upgraded", "downgraded", "bumped",
    "lowered", "went up", "gone up", "down to", "replaced", "migrated", "rewrote", "rewritten", "handed over",
    "took over", "taken over", "sold", "cancelled", "canceled", "correction", "actually", "promoted", "transferred",
    "renamed", "revised", "shortened", "quit", "stopped", "retired", "got a new", "is now", "are now", "slipped",
)
"""Words that announce that something changed ("got rescheduled to", "was upgraded to", "sold my Civic")."""
CHANGE_EVENT_ZH = CHANGE_ZH + (
    "改用", "改喝", "改到", "换到", "挪到", "调到", "延后", "升级", "涨到", "涨了", "降到", "加到", "减到", "退订", "取消",
    "卖了", "离职", "辞职", "跳槽", "更正", "其实", "瘦到", "胖到", "上调", "下调", "不学了", "不用了", "停了", "戒了",
    "迁到", "迁移到", "移交", "改签", "转学", "转到", "改回", "换回", "调回",
)
WEAK_CHANGE = frozenset({
    "now", "these days", "nowadays", "currently", "at the moment", "recently", "lately", "new", "started", "began",
    "became", "become", "actually", "is now", "are now", "from now on", "grown", "extended",
    "现在", "如今", "目前", "最近", "已经", "新", "其实",
})
"""Change words that also open a fact that adds to the stored one ("started learning Spanish", "a new hobby"): on
their own they retire nothing unless the two statements share a slot (memory.write.adjudicate, update.announced)."""
_STRONG = {words: tuple(w for w in words if w not in WEAK_CHANGE) for words in (CHANGE_EVENT_EN, CHANGE_EVENT_ZH)}
ADDITIVE_EN = ("also", "too", "as well", "another", "second", "additionally", "in addition", "besides")
"""Words that add a value beside the stored one ("also speaks Korean"): nothing is retired."""
ADDITIVE_ZH = ("也", "另外", "又", "第二", "还")
"""(还是 "still is" and 还在 "still at" are not additions: see additive_marker.)"""
QUALIFIERS_EN: dict[str, str] = {
    "days:weekday": r"weekdays?|workdays?|working days?|during the week|term time|school days?",
    "days:weekend": r"weekends?|saturdays?|sundays?|school holidays|holidays?|vacations?",
    "place:work": r"at work|the office|office|business hours|work calls?|for work|corporate|clients?",
    "place:home": r"at home|family|friends|personal|after hours|side projects?|hobby",
    "time:day": r"during the day|daytime|mornings?|breakfast|lunch",
    "time:night": r"at night|nights?|evenings?|dinner|bedtime",
    "season:hot": r"summer|hot|warm",
    "season:cold": r"winter|cold|cool",
    "device:handheld": r"phone|mobile|iphone|android|tablet|ipad|laptop",
    "device:desk": r"desktop|monitor|tv|pc|computer|4k",
    "device:web": r"web|website|browser|frontend",
    "environment:production": r"production|prod",
    "environment:testing": r"staging|test|testing|development|local",
    "tier:free": r"free(?:-tier)?|free tier|basic",
    "tier:paid": r"paid(?:-plan)?|premium|pro plan|enterprise",
    "transport:car": r"by car|driving|drive|car",
    "transport:transit": r"by train|train|subway|metro|bus|by bike|cycling|bike|on foot|walking",
    "distance:long": r"long-haul|long flights?|long trips?|long-distance|international",
    "distance:short": r"short flights?|short trips?|short-haul|domestic|around town",
    "activity:exercise": r"runs?|running|workouts?|exercise",
    "activity:rest": r"resting|at rest",
    "place:travel": r"trips?|travel(?:ling|ing)?|abroad|business trips?",
    "dining:dine_in": r"sit-down|restaurants?|dine-in",
    "dining:takeaway": r"takeaway|take-out|takeout|delivery",
}
"""Conditions a fact can hold under, as ``axis:kind`` -> pattern on the lower-cased statement: two facts qualified by
different kinds on one axis ("on the phone" / "on the desktop", "in production" / "in staging") hold side by side;
kinds on different axes ("on weekdays" / "in the evening") say nothing of the kind."""
QUALIFIERS_ZH: dict[str, str] = {
    "days:weekday": r"工作日|上班日|平时|平日|周一到周五",
    "days:weekend": r"周末|双休|节假日|假期|放假",
    "place:work": r"工作上|上班|公司|单位|办公室|出差|客户",
    "place:home": r"在家|家里|家人|全家|业余|自己的|私人|朋友",
    "time:day": r"早上|早餐|早饭|上午|中午|白天|午饭",
    "time:night": r"晚上|晚饭|晚餐|夜里|睡前|下班后",
    "season:hot": r"夏天|天热|热的时候",
    "season:cold": r"冬天|天冷|冷的时候",
    "device:handheld": r"手机|平板|iPad|笔记本",
    "device:desk": r"电脑|台式|显示器|电视",
    "device:web": r"Web端|网页|浏览器|网站",
    "device:app": r"小程序|App端|安卓端|iOS端|客户端",
    "environment:production": r"生产环境|线上",
    "environment:testing": r"测试环境|开发环境|本地|预发",
    "tier:free": r"免费",
    "tier:paid": r"付费|会员|高级版",
    "transport:car": r"开车|自驾",
    "transport:transit": r"地铁|公交|坐车|骑车|走路|步行|高铁|火车",
    "distance:long": r"长途|国际",
    "distance:short": r"短途|国内航班",
    "region:domestic": r"国内|内地|大陆",
    "region:abroad": r"国外|海外|香港|境外",
    "place:travel": r"旅游|旅行|度假",
}
_QUALIFIERS_EN = {k: re.compile(rf"(?<![a-z])(?:{p})(?![a-z])") for k, p in QUALIFIERS_EN.items()}
_QUALIFIERS_ZH = {k: re.compile(p) for k, p in QUALIFIERS_ZH.items()}


def _marker(text: str, words: tuple[str, ...]) -> str | None:
    """One of ``words`` the statement contains (whole words in English; the leftmost), or None."""
    found = _alternation(words, is_chinese(text)).search(text if is_chinese(text) else text.lower())
    return found.group(0) if found else None


@lru_cache(maxsize=64)
def _alternation(words: tuple[str, ...], chinese: bool) -> re.Pattern:
    """One pattern for a word list (longest first), in the statement's script."""
    mine = sorted((w for w in words if is_chinese(w) == chinese), key=len, reverse=True)
    body = "|".join(re.escape(w) for w in mine) or "(?!)"
    return re.compile(body if chinese else rf"(?<![a-z])(?:{body})(?![a-z])")


@text_cache(maxsize=8192)
def change_marker(text: str) -> str | None:
    """The word by which the statement says something changed ("moved", "卖了"; a WEAK_CHANGE word only when it has
    no other), or None."""
    words = CHANGE_EVENT_ZH if is_chinese(text) else CHANGE_EVENT_EN
    return _marker(text, _STRONG[words]) or _marker(text, words)


@text_cache(maxsize=8192)
def additive_marker(text: str) -> str | None:
    """The word by which the statement adds a value beside another ("also", "另外"), or None."""
    if is_chinese(text):
        text = re.sub(r"还(?:是|在|没|不)", "", text)  # "still": 还是, 还在, 还没, 还不
    return _marker(text, ADDITIVE_ZH if is_chinese(text) else ADDITIVE_EN)


@text_cache(maxsize=8192)
def qualifier_kinds(text: str) -> frozenset[str]:
    """The conditions the statement is qualified by (QUALIFIERS_EN / QUALIFIERS_ZH keys). Beside a clock time, a
    time of day ("7:45 in the morning", "夜里2:00") is part of the time, not a condition."""
    zh = is_chinese(text)
    table, low = (_QUALIFIERS_ZH, text) if zh else (_QUALIFIERS_EN, text.lower())
    kinds = frozenset(k for k, pattern in table.items() if pattern.search(low))
    clock = re.search(r"(?<![a-z])t\d{4}", normalize_values_zh(text) if zh else normalize_values_en(text))
    return frozenset(k for k in kinds if not k.startswith("time:")) if clock else kinds


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
    (r"\bmum\b|\bmom\b", "mother"),
    (r"\bdad\b", "father"),
    (r"\b(?:is|are) based in\b", "lives in"),
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
    (r"老婆|爱人|太太", "妻子"),
    (r"老公", "丈夫"),
    (r"闺女", "女儿"),
    (r"爸妈", "父母"),
    (r"名叫|名字是|名字叫", "叫"),
    (r"早晨", "早上"),
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
VERB_SKIP_EN = ("also", "really", "usually", "often", "always", "still", "mostly", "now", "sometimes", "never",
                "no longer", "not", "just", "can", "could", "will", "would", "should", "must", "may", "might", "does",
                "do", "did", "to")
"""Adverbs and modals the generic reader skips between subject and main verb ("the user can usually speak ...")."""
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
    for i, w in enumerate(words):
        if w == "a":  # "a hundred", "a million"; "a five-kilometre run" is five
            if i + 1 < len(words) and words[i + 1] in ("hundred", "thousand", "million", "billion"):
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
    spoken = re.fullmatch(r"(.*?([百千万亿]))([一二两三四五六七八九])", text)
    if spoken and spoken.group(1) != spoken.group(2):  # "四千五" is 4,500, "一万二" 12,000, "三百五" 350
        head = zh_number_token(spoken.group(1))
        unit = {**_ZH_SMALL, **_ZH_BIG}[spoken.group(2)]
        if head is not None:
            return f"n{int(head[1:]) + _ZH_DIGITS[spoken.group(3)] * unit // 10}"
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


_TIME_EN = re.compile(r"\b(\d{1,2})(?::|\.)(\d{2})\s*(am|pm|a\.m\.?|p\.m\.?)?|\b(\d{1,2})\s*(am|pm|a\.m\.?|p\.m\.?)(?![a-z])|"
                      r"\bhalf past (\w+)\b|\bquarter past (\w+)\b|\b(\w+) o'clock\b")
_DATE_EN = re.compile(rf"\b({'|'.join(MONTHS_EN)})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b|\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({'|'.join(MONTHS_EN)})\b")
_MONEY_EN = re.compile(r"(?<![\w:.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?:\s*(k|m|million|thousand|billion))?\b")
_ZH_NUM_CHARS = "零〇一二两三四五六七八九十百千万亿"
_TIME_ZH = re.compile(rf"(上午|下午|晚上|早上|中午|凌晨|夜里)?([\d{_ZH_NUM_CHARS}]{{1,3}})点(半|一刻|三刻|(\d{{1,2}}|[{_ZH_NUM_CHARS}]{{1,3}})分?)?")
_DATE_ZH = re.compile(rf"([\d{_ZH_NUM_CHARS}]{{1,3}})月([\d{_ZH_NUM_CHARS}]{{1,3}})(?:日|号)")
_NUMERIC_DATE_ZH = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
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


_NUMERIC_DATE_EN = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b|\b(\d{1,2})/(\d{1,2})/(\d{4})\b")


def _en_numeric_date(m: re.Match) -> str:
    """2025-03-15, 15/03/2025 and 03/15/2025 -> d0315 n2025 (a day/month order that both readings allow is left)."""
    if m.group(1):
        year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    else:
        first, second, year = int(m.group(4)), int(m.group(5)), int(m.group(6))
        if first > 12 >= second:
            day, month = first, second
        elif second > 12 >= first:
            month, day = first, second
        else:
            return m.group(0)
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return m.group(0)
    return f"d{month:02d}{day:02d} {year}"


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


_ORDINALS_EN = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
                "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth",
                "nineteenth", "twentieth")
_ORDINAL_OF_MONTH_EN = re.compile(
    rf"\b(?:the\s+)?({'|'.join(_ORDINALS_EN)}|twenty-(?:{'|'.join(_ORDINALS_EN[:9])})|thirtieth|thirty-first)\s+of\s+"
    rf"({'|'.join(MONTHS_EN)})\b")
_TIME_OF_DAY_EN = re.compile(rf"\b(\d{{1,2}}(?::\d{{2}})?|{_NUM_WORD})\s+(?:o'clock\s+)?(in the morning|in the afternoon|"
                             rf"in the evening|at night)\b")


def _en_ordinal_of_month(m: re.Match) -> str:
    """'the first of June' -> 'june 1' (then a date like any other)."""
    word = m.group(1)
    if word.startswith("twenty-"):
        day = 20 + _ORDINALS_EN.index(word.split("-")[1]) + 1
    else:
        day = {"thirtieth": 30, "thirty-first": 31}.get(word) or _ORDINALS_EN.index(word) + 1
    return f"{m.group(2)} {day}"


def _en_time_of_day(m: re.Match) -> str:
    """'ten in the morning' -> '10am', '7:45 in the morning' -> '7:45am', 'eleven at night' -> '11pm'."""
    hour_text, _, minutes = m.group(1).partition(":")
    hour = int(hour_text) if hour_text.isdigit() else words_to_int(hour_text)
    if hour is None or not 1 <= hour <= 12:
        return m.group(0)
    if m.group(2) == "in the morning":
        meridiem = "am"
    elif m.group(2) == "at night":
        meridiem = "pm" if hour >= 6 else "am"  # "eleven at night" is 23:00, "two at night" 02:00
    else:
        meridiem = "pm"
    return f"{hour}:{minutes}{meridiem}" if minutes else f"{hour}{meridiem}"


def normalize_values_en(text: str) -> str:
    """Lower-cased English with times (t0630), dates (d0630) and numbers (n500000) in one canonical spelling, and
    durations and weights in one unit each (:func:`whole_quantities_en`)."""
    out = whole_quantities_en(text.lower())
    out = _ORDINAL_OF_MONTH_EN.sub(_en_ordinal_of_month, out)
    out = _TIME_OF_DAY_EN.sub(_en_time_of_day, out)
    out = _NUMERIC_DATE_EN.sub(_en_numeric_date, out)
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
    meridiem = "pm" if m.group(1) in ("下午", "晚上") or (m.group(1) == "夜里" and hour >= 6) else None
    return _clock(hour, minute, meridiem)


_CLOCK_ZH = re.compile(r"(上午|下午|晚上|早上|中午|凌晨|夜里)?(?<!\d)(\d{1,2})[:：](\d{2})(?!\d)")


def _zh_clock(m: re.Match) -> str:
    """A clock time with a colon ("10:00", "下午3:30", "夜里2:00") -> t1000, t1530, t0200."""
    hour, minute = int(m.group(2)), int(m.group(3))
    if hour > 23 or minute > 59:
        return m.group(0)
    pm = m.group(1) in ("下午", "晚上") or (m.group(1) == "夜里" and 6 <= hour < 12)
    return _clock(hour, minute, "pm" if pm and hour < 12 else None)


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
    """Chinese with times, dates and numbers (Arabic or Chinese numerals, 万/亿) in one canonical spelling, and
    durations and weights in one unit each (:func:`whole_quantities_zh`)."""
    out = whole_quantities_zh(text)
    out = _NUMERIC_DATE_ZH.sub(lambda m: f"{m.group(1)}年{int(m.group(2))}月{int(m.group(3))}日", out)  # 2025-06-30
    out = _CLOCK_ZH.sub(_zh_clock, out)
    out = _TIME_ZH.sub(_zh_time, out)
    out = _DATE_ZH.sub(_zh_date, out)
    return _NUM_ZH.sub(_zh_number, out)


_HOURS_EN = re.compile(r"\b(?:an?\s+hour\s+and\s+a\s+half|(an?|one|\d+(?:\.\d+)?)\s+and\s+a\s+half\s+hours?|"
                       r"(\d+(?:\.\d+)?|an?|one)(?:\s+|-)(?:hours?|hrs?)|(half)\s+an?\s+hour)\b")
_MINUTES_EN = re.compile(r"\b(\d+(?:\.\d+)?)(?:\s+|-)?(?:mins?|minutes?)\b")
_KILOS_EN = re.compile(r"\b(\d+(?:\.\d+)?)(?:\s+|-)?(?:kgs?|kilos?|kilograms?|kilogrammes?)\b")
_HOURS_ZH = re.compile(rf"(?<![\d.])(\d+(?:\.\d+)?|[{_ZH_NUM_CHARS}]{{1,4}})?(个)?(半)?(?:个)?(?:小时|钟头)")
_JIN_ZH = re.compile(rf"(?<![公\d.])(\d+(?:\.\d+)?|[{_ZH_NUM_CHARS}]{{1,6}})斤")
_KILOS_ZH = re.compile(rf"(?<![\d.])(\d+(?:\.\d+)?|[{_ZH_NUM_CHARS}]{{1,6}})(?:千克|kg|KG|公斤)")


def _whole(value: Decimal) -> str | None:
    """A quantity as digits when it is whole (90, not 90.0), else None."""
    return str(int(value)) if value == value.to_integral_value() else None


def whole_quantities_en(text: str) -> str:
    """Durations in minutes and weights in kg, the number and its unit kept together: "1.5 hours", "an hour and a half"
    and "90 mins" are all "90 minutes"; "82 kilos" is "82 kg" (lower-cased text in, as :func:`normalize_values_en`
    has it). A duration that is not a whole number of minutes is left as written."""
    def hours(m: re.Match) -> str:
        if m.group(3):
            count = Decimal("0.5")
        elif m.group(1) is not None:
            count = Decimal(1 if m.group(1) in ("a", "an", "one") else m.group(1)) + Decimal("0.5")
        elif m.group(2) is not None:
            count = Decimal(1 if m.group(2) in ("a", "an", "one") else m.group(2))
        else:  # "an hour and a half"
            count = Decimal("1.5")
        minutes = _whole(count * 60)
        return m.group(0) if minutes is None else f"{minutes} minutes"

    out = _HOURS_EN.sub(hours, text)
    out = _MINUTES_EN.sub(lambda m: f"{_whole(Decimal(m.group(1))) or m.group(1)} minutes", out)
    return _KILOS_EN.sub(lambda m: f"{m.group(1)} kg", out)


def whole_quantities_zh(text: str) -> str:
    """Durations in 分钟 and weights in 公斤, the number and its unit kept together: "1.5小时", "一个半小时" and "90分钟"
    are all "90分钟"; "164斤" is "82公斤" (an odd number of 斤 is left as written)."""
    def hours(m: re.Match) -> str:
        number, half = m.group(1), bool(m.group(3))
        if number is None:
            if not half:
                return m.group(0)  # "小时候" and the like: no number
            count = Decimal("0.5")
        else:
            whole = _zh_decimal(number)
            if whole is None:
                return m.group(0)
            count = whole + (Decimal("0.5") if half else 0)
        minutes = _whole(count * 60)
        return m.group(0) if minutes is None else f"{minutes}分钟"

    def jin(m: re.Match) -> str:
        value = _zh_decimal(m.group(1))
        kilos = None if value is None else _whole(value / 2)
        return m.group(0) if kilos is None else f"{kilos}公斤"

    def kilos(m: re.Match) -> str:
        value = _zh_decimal(m.group(1))
        return m.group(0) if value is None else f"{_whole(value) or m.group(1)}公斤"

    out = _HOURS_ZH.sub(hours, text)
    out = _JIN_ZH.sub(jin, out)
    return _KILOS_ZH.sub(kilos, out)


def _zh_decimal(number: str) -> Decimal | None:
    """'1.5' -> 1.5, '一' -> 1, '两' -> 2; None when it is not a number."""
    if re.fullmatch(r"\d+(?:\.\d+)?", number):
        return Decimal(number)
    value = zh_to_int(number)
    return None if value is None else Decimal(value)


def _domain_index() -> tuple[dict[str, frozenset[str]], dict[str, re.Pattern | None]]:
    """The triggers of :data:`DOMAINS` as two lookups: an English word (a whole ``\\w+`` run of the text, or that
    word with a plural ``s``) -> its tags, and per tag the triggers that match anywhere as text (Chinese ones and
    those with a space)."""
    words: dict[str, set[str]] = {}
    anywhere: dict[str, re.Pattern | None] = {}
    for tag, triggers in DOMAINS.items():
        loose = []
        for w in triggers:
            if is_chinese(w) or " " in w:
                loose.append(w)
            else:
                if not re.fullmatch(r"\w+", w):
                    raise ValueError(f"DOMAINS[{tag!r}]: {w!r} is neither one word nor a phrase")
                for form in (w, w + "s"):
                    words.setdefault(form, set()).add(tag)
        anywhere[tag] = re.compile("|".join(map(re.escape, loose))) if loose else None
    return {w: frozenset(tags) for w, tags in words.items()}, anywhere


_DOMAIN_WORDS, _DOMAIN_ANYWHERE = _domain_index()
_WORD = re.compile(r"\w+")


def domains_of(text: str) -> list[str]:
    """Domain tags whose trigger words occur in the text (whole words, plural allowed, for English; Chinese
    triggers and phrases anywhere), in the order of :data:`DOMAINS`."""
    low = text.lower()
    hit: set[str] = set()
    for word in set(_WORD.findall(low)):
        hit |= _DOMAIN_WORDS.get(word, frozenset())
    return [tag for tag, loose in _DOMAIN_ANYWHERE.items() if tag in hit or (loose is not None and loose.search(low))]


# --- extraction ----------------------------------------------------------------------------------
PRODUCTS_EN = ("smartwatch", "smart watch", "watch", "phone", "laptop", "headphones", "earbuds", "tablet", "camera",
               "keyboard", "monitor", "speaker", "bike", "car", "sofa", "bed")
PRODUCTS_ZH = ("智能手表", "手表", "手环", "手机", "笔记本电脑", "笔记本", "电脑", "耳机", "平板", "相机", "键盘", "显示器",
               "音箱", "自行车", "沙发")
PARTS_EN = ("strap", "band", "battery", "battery life", "screen", "display", "case", "charger", "lens", "keyboard")
PARTS_ZH = ("表带", "续航", "电池", "屏幕", "表盘", "充电器", "镜头", "外壳")
