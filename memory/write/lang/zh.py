"""The Chinese reader: a statement's subject, attribute, value and context (:func:`read`), a clause rewritten to stand
alone (:func:`stand_alone`), and the word tables and patterns only Chinese statements need. The shared write path
reaches them through :data:`LANGUAGE` (memory.write.lang.language_of)."""

from __future__ import annotations

import re

from memory.write.lang.base import DEVICE_DOMAINS, VALUE_TOKEN_ATTRS, Language, Reading, read_diet
from memory.write.lang.script import HAN, is_chinese
from memory.write.lexicon import (
    CHANGE_ZH, CONTEXT_WORDS, DIET_ZH, FILLER_ZH, JOB_SUFFIX_ZH, NEGATION_ZH, PARTS_ZH, PHRASES_ZH, PRODUCTS_ZH, WEEKDAYS_ZH,
    domains_of, normalize_values_zh,
)

LANGUAGES_ZH = "日语|英语|法语|德语|韩语|西班牙语|俄语|中文|普通话|粤语|意大利语|葡萄牙语|阿拉伯语"
STOP_ZH = frozenset("的了是在也都就很会还又才把被着过呢吗吧啊呀么和与及或而一个只位名种每天要能说得不再没别非")
_TIME_ADVERBS_ZH = re.compile(r"上个?月|上周|上星期|去年|前年|昨天|前天|今天|今年|本月|这个月|最近|现在|如今|目前|已经|刚刚|刚|正在|一直")
_CONTEXT_FORMS_ZH = tuple((key, tuple(form for form in forms if is_chinese(form))) for key, forms in CONTEXT_WORDS.items())
"""The Chinese forms of :data:`CONTEXT_WORDS`, in the table's order."""
_NEGATION_ZH = re.compile("|".join(NEGATION_ZH))


def _canonical_zh(text: str) -> str:
    s = text.strip().rstrip("。！!.~～；;")
    s = re.sub(r"\s+", "", s) if not re.search(r"[A-Za-z]\s+[A-Za-z0-9]", s) else re.sub(r"\s+", " ", s)
    s = normalize_values_zh(s)
    for pat, rep in PHRASES_ZH:
        s = re.sub(pat, rep, s)
    s = re.sub(r"我(?!们)", "用户", s)
    return s.lower()


_NAMED_BY_CONTEXT_ZH = re.compile(r"推广|活动|项目|促销|营销|新品|课程|大促|发布会|档期|版本|系列|招聘|团建")
"""After a context word, a noun it names rather than qualifies: "夏季推广" is the summer campaign, not "in summer"."""


def _context_zh(s: str) -> tuple[str, list[str]]:
    found: list[str] = []
    day = re.search(r"(?:每周|每个?星期|^(?:用户)?(?:周|星期|礼拜))([一二三四五六日天])(早上|上午|中午|下午|晚上)?", s)
    if day:
        part = {"早上": "morning", "上午": "morning", "中午": "noon", "下午": "afternoon", "晚上": "evening"}.get(day.group(2) or "")
        found.append(WEEKDAYS_ZH[day.group(1)] + (f" {part}" if part else ""))
        s = s.replace(day.group(0), "", 1)
    for key, forms in _CONTEXT_FORMS_ZH:
        for form in forms:
            at = s.find(form)
            if at >= 0 and not _NAMED_BY_CONTEXT_ZH.match(s, at + len(form)):
                s = s[:at] + s[at + len(form):]
                found.append(key)
                break
    when = re.match(r"^(?:用户)?(?:在|当)?([^，,]{1,10}?)(?:的时候|时)(?![间候刻])[，,]?", s)
    topic = re.match(r"^([^，,用是的叫有给被把和让]{1,8}?)[，,]?(?=用户|我们)", s)
    if when and not when.group(1).endswith("小"):
        found.append(when.group(1).replace("用户", ""))
        s = s[when.end():]
    elif topic and not re.match(r"比起|对于|关于|因为|所以|但是|而且|如果|虽然|不过", topic.group(1)) \
            and not _TIME_ADVERBS_ZH.fullmatch(topic.group(1)) and not _CLAUSE_ZH.search(topic.group(1)):
        found.append(re.sub(r"^[在当]", "", topic.group(1)))  # topic-comment: "早餐用户吃燕麦" holds at breakfast
        s = s[topic.end():]
    scoped = re.search(r"(?:买|购买|给|为|换)([\u4e00-\u9fffa-z0-9]{1,6}?)的(预算|价格|要求|上限)", s)
    if scoped:
        found.append(scoped.group(1))
        s = s[: scoped.start()] + "的" + scoped.group(2) + s[scoped.end():]
    return s.strip("，,"), found


_CLAUSE_ZH = re.compile(r"了|换|改|取消|允许|决定|开始|不再|搬|调")
"""A topic that is a clause of its own ("公司取消了远程，我现在……") is an event, not a condition the fact holds under."""


def _clean_value_zh(v: str) -> str:
    v = _TIME_ADVERBS_ZH.sub("", v)
    v = re.sub(r"^(?:一名|一个|一位|一只|一辆|一台|一部|个)", "", v)
    v = re.sub(r"(?:大约|大概|约|左右|上下|元|块钱|块|人民币|举办|举行|进行|了|的|呢|啊|吧)+$", "", v)
    v = re.sub(r"^(?:大约|大概|约|在|是|为|到)", "", v)
    return v.strip("，, ")


def _subject_zh(prefix: str) -> str:
    rest = re.sub(r"＠的?|[ntd]\d+", "", prefix)
    rest = re.sub(r"^(?:的|每天|每周|每晚|经常|总是|一般|通常|平常)+|(?:的|每天|每周|每晚|经常|总是|一般|通常|平常|也|还|都|会|就|要|能)+$",
                  "", rest).strip("，, ")
    return rest or "user"


_JOB_ZH = "|".join(JOB_SUFFIX_ZH)
_RULES_ZH: tuple[tuple[str, str, int, bool], ...] = (
    (r"对(.+?)过敏", "allergy", 1, False),
    (r"吃(.+?)(?:会|就|容易)?过敏", "allergy", 1, False),
    (r"(?:住在|家在|定居在?|搬到了?|搬去了?|搬家到|移居到?|落户在?)([\u4e00-\u9fffa-z]+)", "residence", 1, True),
    (r"(?:职业|工作|职位|岗位)是(.+)", "job", 1, True),
    (r"(单身|已婚|结婚|离婚|订婚|丧偶)", "marital status", 1, True),
    (r"是做(.+?)的$", "job", 1, True),
    (r"转行(?:做|当|成为?)了?(.+)", "job", 1, True),
    (rf"^＠(?:是|当|做|成为|成了)(?:一名|一个|一位)?([\u4e00-\u9fffa-z]*?(?:{_JOB_ZH}))$", "job", 1, True),
    (r"领导(?:是|换成了?|变成了?|改成了?)(.+)", "manager", 1, True),
    (r"^＠?(?:在|就职于|供职于)(.+?)(?:工作|上班|任职)$", "employer", 1, True),
    (r"(?:雇主|东家|公司)是(.+)", "employer", 1, True),
    (r"(n\d+)岁", "age", 1, True),
    (r"(?:月薪|年薪|收入)(?:是|为|有|大约|大概)*(n\d+)", "salary", 1, True),
    (r"最喜欢的(.+?)是(.+)", "favourite {g1}", 2, True),
    (r"^(.+?)是(?:＠)?最喜欢的(.+)", "favourite {g2}", 1, True),
    (r"叫(.+?)的(狗|猫|宠物|孩子|儿子|女儿)", "name:{g2}", 1, True),
    (r"^(.+?)是＠?的?(狗|猫|宠物|孩子|儿子|女儿)的名字", "name:{g2}", 1, True),
    (r"^(.+?)是＠的?(狗|猫|宠物|孩子|儿子|女儿|丈夫|妻子|老公|老婆)$", "name:{g2}", 1, True),
    (r"(狗|猫|宠物|孩子|儿子|女儿)(?:的名字)?(?:名字)?(?:名)?(?:叫|是)(.+)", "name:{g1}", 2, True),
    (rf"({LANGUAGES_ZH})(?:很|非常|说得|讲得)?(?:流利|地道)", "language", 1, False),
    (rf"(?:流利的|会说|能说|会讲|懂)({LANGUAGES_ZH})", "language", 1, False),
    (r"预算.*?(n\d+)", "budget", 1, True),
    (r"(?:截止日期|截止时间|最后期限|上线时间|上线日期|交付日期|交付时间|发布日期|发布时间)(?:是|为|推迟到|提前到|改到|延期到|延到|改为|改成|"
     r"定在|在|挪到|调到)了?(.+)", "deadline", 1, True),
    (r"最晚(?:在|于)?(d\d{4})(?:之前|以前|前)?(?:要|得|必须|需要|就要)?(?:上线|完成|交付|提交|发布|交|做完|搞定)", "deadline", 1, True),
    (r"(d\d{4})前(?:完成|交付|提交|做完|搞定|交|结束)", "deadline", 1, True),
    (r"(?:有|扩充到了?|扩大到了?|增加到了?|减少到了?|缩减到了?|达到了?|变成了?|只剩了?|增长到了?)(n\d+)"
     r"(个人|人|名员工|个员工|个成员|名成员)", "count:人", 1, True),
    (r"比起(.+?)[，,]?(?:＠)?更(?:喜欢|爱|倾向于?|偏爱)(?:喝|吃|用|玩)?(.+)", "prefer", 2, True),
    (r"(?:喜欢|爱|偏爱)(?:喝|吃|用|玩)?(.+?)[，,](?:但)?(?:不太|不怎么|很少|不大|不)(?:喝|吃|用|玩)?(.+)", "prefer", 1, True),
    (r"每天(?:喝|吃|抽|用)(n\d+)?(?:杯|瓶|包|个|根|次)?(.+)", "habit:{g2}", 1, True),
    (r"(手机|电脑|笔记本|手表|车)(?:是|用的是|换成了?)(.+)", "device:{g1}", 2, True),
    (r"^(.+?)(?:涨到|涨至|升到|升至|降到|降至|调到|调整到|改到|改为|改成|变成|挪到|推迟到|提前到)了?(.+)", "moved", 2, True),
)
_MARITAL_ZH = {"单身": "single", "已婚": "married", "结婚": "married", "离婚": "divorced", "订婚": "engaged", "丧偶": "widowed"}
_CESSATION_ZH = re.compile(r"(?:戒掉?了?|不再(?:喝|吃|抽|用|玩|去)|停止(?:喝|吃|抽|用)|放弃了?)(.+?)了?$")
_SWITCH_ZH = re.compile(r"(?:换成了?|改用了?|换了)(.+)")
_PROP_ZH = re.compile(r"^(?:＠的|＠)?([\u4e00-\u9fff]{1,8}?)(?:是|在|为)(.+)$")
_VERB_ZH = re.compile(r"^(.*?)(喜欢|讨厌|想要|偏好|习惯|负责|参加|练习|学习|睡觉|起床|跑步|喝|吃|用|开|骑|坐|住|租|去|养|遛|"
                      r"买|穿|戴|玩|看|听|学|写|爱|想|要|打|踢|弹|跑|做|练|抽|读|逛|拍|画|唱|跳|种|教|睡)(.*)$")
_DEVICE_NOUNS = {"手机": "phone", "电脑": "computer", "笔记本": "computer", "手表": "watch"}


def read(text: str) -> Reading:
    s = _canonical_zh(text)
    s, contexts = _context_zh(s)
    changed = any(m in s for m in CHANGE_ZH)
    core = _TIME_ADVERBS_ZH.sub("", s)
    core = re.sub(r"的新", "的", core)
    core = re.sub(r"了$", "", core).strip("，, ").replace("用户", "＠")
    subject, attribute, value, single, ceased = "user", "", "", True, False
    comparative = re.search(r"比起|[，,](?:但)?(?:不太|不怎么|很少|不大)", core)
    negated = bool(_NEGATION_ZH.search(core)) and not comparative

    diet = read_diet(core, DIET_ZH)
    if diet is not None:
        attribute, value, negated = "diet", "vegetarian", diet
    cess = _CESSATION_ZH.search(core)
    if not attribute and cess and "素" not in core:
        attribute, value, ceased, changed, negated = "cessation", _clean_value_zh(cess.group(1)), True, True, False
    if not attribute:
        for pattern, attr, group, single_valued in _RULES_ZH:
            m = re.search(pattern, core)
            if not m:
                continue
            groups = {f"g{i}": _clean_value_zh(g or "") for i, g in enumerate(m.groups(), 1)}
            attribute = attr.format(**groups)
            if attr == "prefer":
                options = sorted({_strip_zh_verb(groups["g1"]), _strip_zh_verb(groups["g2"])})
                attribute = "prefer:" + "|".join(options)
                value = _strip_zh_verb(groups[f"g{group}"])
            else:
                value = groups[f"g{group}"]
            if attribute.startswith("device:"):
                attribute = "device:" + _DEVICE_NOUNS.get(attribute[7:], attribute[7:])
            single = single_valued
            if attr in ("budget", "count:人"):
                subject = _subject_zh(core[: m.start()])
            if attr == "residence" and _subject_zh(core[: m.start()]) != "user":
                attribute, changed = "prop:" + _subject_zh(core[: m.start()]), True
            if attr == "moved":
                owner = _subject_zh(m.group(1))
                if owner == "user":
                    attribute = ""
                    continue
                attribute, changed = "prop:" + owner, True
            if attr == "marital status":
                value = _MARITAL_ZH[value]
            if attr in VALUE_TOKEN_ATTRS:
                token = re.search(r"[ntd]\d+", value)
                value = token.group(0) if token else value
            break
    if not attribute:
        switch = _SWITCH_ZH.search(core)
        device = [d for d in domains_of(switch.group(1)) if d in DEVICE_DOMAINS] if switch else []
        if switch and device:
            attribute, value, changed = "device:" + device[0], _clean_value_zh(switch.group(1)), True
    if not attribute:
        subject, attribute, value, single = _generic_zh(core)
    if attribute.startswith("verb:") and value:
        device = [d for d in domains_of(value) if d in DEVICE_DOMAINS]
        if device and attribute[5:] in ("用", "买", "换"):
            attribute = "device:" + device[0]
    return Reading(
        text=text, language="zh", subject=subject, attribute=attribute, value=value,
        context="; ".join(sorted(set(contexts))), negated=negated, changed=changed, ceased=ceased,
        single_valued=single, tokens=_tokens_zh(core), domains=tuple(domains_of(core)),
    )


def _strip_zh_verb(v: str) -> str:
    return re.sub(r"^(?:喝|吃|用|玩)", "", v)


def _generic_zh(core: str) -> tuple[str, str, str, bool]:
    from memory.write.lexicon import MULTI_VALUED

    m = _PROP_ZH.match(core)
    if m and not m.group(1).endswith(("用", "喜欢")):
        return "user", "prop:" + m.group(1), _clean_value_zh(m.group(2)), True
    m = _VERB_ZH.match(core)
    if m:
        subject = _subject_zh(m.group(1))
        attr = "verb:" + m.group(2)
        return subject, attr, _clean_value_zh(m.group(3)), attr not in MULTI_VALUED
    return "user", "", "", True


def _tokens_zh(core: str) -> tuple[str, ...]:
    core = core.replace("＠", " ")
    out = []
    for piece in re.findall(r"[ntd]\d+|[a-z][a-z0-9.+#-]*|\d+|[\u4e00-\u9fff]", core):
        if re.fullmatch(r"[ntd]\d+", piece):
            out.append(piece)
        elif piece not in STOP_ZH and piece.strip():
            out.append(piece)
    return tuple(out)


# --- standing alone -------------------------------------------------------------------------------

_KIN_ZH = ("哥哥|哥|姐姐|姐|弟弟|弟|妹妹|妹|爸爸|爸|妈妈|妈|爷爷|奶奶|姥姥|姥爷|外公|外婆|老公|老婆|儿子|女儿|闺女|孩子|"
           "男朋友|女朋友|对象|同事|老板|领导|室友|邻居|父亲|母亲|丈夫|妻子")


def stand_alone(clause: str, topic: str) -> str:
    s = re.sub(r"(?<!\s)\s+(?=[\u4e00-\u9fff])|(?<=[\u4e00-\u9fff])\s+", "", clause.strip())
    s = re.sub(r"我的", "用户的", s)
    s = re.sub(rf"我(?=(?:{_KIN_ZH}))", "用户的", s)  # "我哥" is the user's brother, not "用户哥"
    s = re.sub(r"我(?!们)", "用户", s)
    if topic:
        s = re.sub(r"^(?:别|不要)?像用户那个", f"用户现有的{topic}", s)
        s = re.sub(r"(一个|一款|一只|一块|一台|一部)([^，。]*?的)$", rf"\1\2{topic}", s)
        part = "|".join(sorted(PARTS_ZH, key=len, reverse=True))
        if re.match(rf"^(?:{part})", s):
            s = f"{topic}的{s}"
    if "用户" not in s:
        if re.match(r"^(?:预算|目标|计划)", s):
            s = "用户的" + s
        elif re.match(r"^(?:想|要|希望|打算|准备|喜欢|讨厌|买|也|还|会|不|没|在|给|去|每天|经常|一直|已经|现在|今天)", s):
            s = "用户" + s
    return s.rstrip("。.!！;；") + "。"



# --- splitting a turn into clauses ---------------------------------------------------------------

_QUALIFIER_ZH = re.compile(r"(?:时|的时候|的话|以后|之后|之前)$|^(?:比起|如果|因为|虽然|对于|关于|当)")
_VERBISH_ZH = re.compile(r"[是有在买想要用喜欢住做吃喝去给带穿戴玩看听学写开骑坐租养遛充换搬戒紧松]")
_POINTS_BACK_ZH = re.compile(r"^(?:它|他|她|这(?![次周天里儿边会])|那(?![次周天里儿边时会]))|[它他她]$")
_OPENS_WITH_VERB_ZH = re.compile(
    r"^(?:一\w{1,2}就|全|也|还|又|再|就|才|都|已经|已|刚|正在|在|不|没|去|来|改|换|搬|辞|戒|卖|退|想|要|打算|准备|希望|喜欢|讨厌|爱|说|觉得|"
    r"感觉|开始|继续|加|买|养|学|报|从|把|被|让|每天|经常|一直|现在|目前|如今|后来|结果|于是|很|挺|特别|非常|太|有点|比较|"
    r"[\d一二两三四五六七八九十]+(?:月|日|号|点|天|年|个|次|岁|斤|公斤))")
"""A Chinese clause with no subject of its own: it opens with an adverb, a verb or a date ("去了字节跳动", "现在住上海",
"不加糖也不加奶", "8日退房")."""


def is_filler(stripped: str) -> bool:
    """A Chinese pleasantry or acknowledgement (its :func:`memory.write.lexicon.filler_key`): "哈哈好的"."""
    rest = stripped.replace(" ", "")
    for word in sorted(FILLER_ZH, key=len, reverse=True):
        rest = rest.replace(word.lower(), "")
    return not rest


def is_qualifier(clause: str) -> bool:
    """A leading qualifier that needs the next clause: "写Go时", "比起咖啡"."""
    return len(clause) <= 12 and bool(_QUALIFIER_ZH.search(clause))


def continues(clause: str, same_sentence: bool) -> bool:
    """The clause needs the one before it (memory.write.extract.continues): it opens or ends with a pronoun ("它坏了"),
    or, in the same sentence, it opens with an adverb, a verb or a date ("去了字节跳动")."""
    return bool(_POINTS_BACK_ZH.search(clause)) or same_sentence and bool(_OPENS_WITH_VERB_ZH.match(clause))


def is_fragment(clause: str) -> bool:
    """A clause without a predicate ("黑色那个")."""
    return len(clause) <= 8 and not _VERBISH_ZH.search(clause) or bool(re.search(r"(?:那个|那款|那只|那种)$", clause))


# --- what the rules and the learned judge's features ask -----------------------------------------

DEPARTURES = (
    re.compile(r"([\u4e00-\u9fffA-Za-z0-9]{1,6}?)(?:已经|被)?(?:调走了|走了|离职了|辞职了|退休了)"),
    re.compile(r"从(.{1,10}?)(?:离职|辞职|退出|搬走|毕业)"),
    re.compile(r"(?:取消了|退掉了|停掉了|卖掉了|卖了|退订了)(?:我的|我们的)?([\u4e00-\u9fffA-Za-z0-9 ]{1,8}?)(?=[，,。；！]|$)"),
    re.compile(r"(?:把|将)(?:我的|我们的)?([\u4e00-\u9fffA-Za-z0-9 ]{1,8}?)(?:卖了|退了|停了|注销了|退订了|取消了|卖掉了)"),
)
PURPOSE = rf"(?:管理|负责|用来|用于)([{HAN}]{{1,4}})"
"""What a Chinese statement says a thing is for ("管理代码"): the rules' other-aspect test (memory.write.adjudicate)."""


def surface(text: str) -> frozenset[str]:
    """The statement's Chinese characters (stop characters and 用户 out) as overlapping pairs."""
    chars = "".join(ch for ch in re.sub(rf"[^{HAN}]+", "", text).replace("用户", "") if ch not in STOP_ZH)
    return frozenset(chars[i : i + 2] for i in range(len(chars) - 1))


def stems(text: str) -> frozenset[str]:
    return surface(text)


def words(text: str) -> set[str]:
    chars = re.sub(rf"[^{HAN}]+", "", text).replace("用户", "")
    return {chars[i : i + 2] for i in range(len(chars) - 1)} | set(re.findall(r"[a-z0-9]+", text.lower()))


def units(text: str) -> set[str]:
    chars = re.sub(r"\s+", "", text)
    return {chars[i : i + 2] for i in range(len(chars) - 1)} | set(chars)


LANGUAGE = Language(name="zh", read=read, stand_alone=stand_alone, comma="，", products=PRODUCTS_ZH,
                    departures=DEPARTURES, surface=surface, stems=stems, words=words, units=units, is_filler=is_filler,
                    is_qualifier=is_qualifier, continues=continues, is_fragment=is_fragment)
