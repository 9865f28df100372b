"""Write-time decisions' reasons in the lab's languages, rendered from their codes (:mod:`memory.core.reasons`).

The library gives a :class:`memory.core.reasons.Reason` (a code, its parameters) and its English sentence; the
Chinese sentence of every code is here, so the engine carries no UI language.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from memory import ENGLISH, FALLBACK_PREFIX, Language, Reason, render_reason

ZH_TEMPLATES: dict[str, str] = {
    "new.no_candidate": "这个用户在这一类别下没有可比较的已存事实。",
    "coexist.contexts": "两条都成立，各有其语境（“{old_context}”与“{new_context}”）；两条都保留，并带上语境标签。",
    "new.other_contexts": "语境不同（“{old_context}”与“{new_context}”），也没有其他共同点：这是一条无关的事实。",
    "coexist.refines": "一条带限定语境（“{context}”），另一条是一般情况：限定的那条是细化而不是取代；两条都保留。",
    "update.polarity": "同一{attribute}，但新事实{affirms_or_denies}了它（“{old}” -> “{new}”）：旧事实不再成立。",
    "duplicate.same_value": "同一{attribute}、同一取值（“{value}”）：是复述，强化已存事实，不写入新向量。",
    "update.value_changed": "同一{attribute}有了新取值（“{old}” -> “{new}”）：旧事实被停用，由新事实取代。",
    "new.multi_valued": "{attribute}可以有多个取值（“{old}”、“{new}”）；新的与旧的并存。",
    "update.ceased": "新事实说“{value}”已经结束，而已存事实把它描述为现状。",
    "update.resumed": "已存事实说“{value}”已经结束；新事实说它又成立了。",
    "update.change_event": "新事实说从“{old}”改成了“{new}”，而已存事实说的正是“{old}”：旧事实被停用并被取代。",
    "update.departed": "新的说法表明已存的值不在了（“{value}”已离开、退掉或卖掉）：旧事实退役，由新的取代。",
    "update.polarity_flip": "同一陈述，肯定与否定翻转：旧事实不再成立。",
    "update.value_swapped": "同一陈述，换了一个取值（“{old}” -> “{new}”）：旧事实被停用并被取代。",
    "duplicate.paraphrase": "同一内容的不同说法，向量也一致。",
    "new.other_attributes": "属性不同（{old_attribute}与{new_attribute}）：一条独立的事实。",
    "duplicate.restatement": "复述：{overlap} 的内容词相同，没有取值不同；强化已存事实。",
    "new.values_differ": "取值不同，但没有找到共同属性，因此不停用任何事实：新事实与旧事实并存。",
    "new.unrelated": "没有共同的属性、取值或措辞：一条独立的事实。",
    "duplicate.same_content": "向量接近、措辞有重合（{overlap}），且没有取值、条件、人物或变化上的区别：是复述。",
    "plain.bands": "朴素双阈值规则在相似度 {similarity} 时判为 {verdict}（用于对比的判定器）。",
    "new.adds_value": "新事实在已存事实之外再添一个取值（“{marker}”）：两条都保留。",
    "update.announced": "新事实宣布了同一话题上的变化（“{marker}”）：旧事实被停用并被取代。",
    "coexist.conditioned": "新的说法有自己的条件（{new_context}；已存的：{old_context}）：两条同时成立，都保留。",
    "coexist.qualified": "同一话题、不同条件（{old_kinds} 对 {new_kinds}）：两条同时成立，都保留。",
    "duplicate.same_specifics": "换了说法，名称和数值（“{values}”）相同，也没有任何区别：是复述，新事实不再重复存储。",
    "duplicate.same_values": "措辞不同、取值相同（“{values}”）、话题相同：是复述，已存事实得到加强。",
    "bounded.read_prefix": "只从全部 {total_chars} 个字符中的前 {read_chars} 个提取事实（上限 {read_limit}）{skipped}；整条消息已作为原始记录保存。",
    "model.same_fact": "模型（{model}）判定新的说法是已存事实的复述：不再存储新内容。",
    "model.value_changed": "模型（{model}）判定同一事物有了新的取值：旧事实被停用，由新事实取代。",
    "model.state_ended": "模型（{model}）判定已存事实描述的状态已经结束或不再成立：旧事实被停用，由新事实取代。",
    "model.different_condition": "模型（{model}）判定两条在各自的条件下都成立：两条都保留。",
    "model.added_value": "模型（{model}）判定新的说法在已存事实之外又添了一个取值：两条都保留。",
    "model.different_subject": "模型（{model}）判定两条说的是不同的人或事物：一条独立的事实。",
    "model.unrelated": "模型（{model}）判定两条互不相关：一条独立的事实。",
    "model.fallback": "模型（{model}）没有给出可用的判定（{cause}），改由后备判定器决定：{fallback_text}",
    "learned.overruled": "学习型判定器（综合了两条陈述的解读和向量）判为{verdict}（可能性 {confidence}）；只看规则会判为{rules_verdict}：{fallback_text}",
    "legacy": "{text}",
}
"""The Chinese sentence of every code of :data:`memory.core.reasons.CODES`."""

_KINDS_ZH = {"device": "设备", "habit": "习惯", "count": "数量", "name": "名称"}
ATTRIBUTES_ZH = {
    "residence": "住处", "job": "职业", "diet": "饮食", "allergy": "过敏", "language": "语言", "age": "年龄",
    "marital status": "婚姻状况", "employer": "雇主", "manager": "上级", "salary": "薪水", "budget": "预算",
    "deadline": "截止日期", "favourite": "最喜欢的", "cessation": "戒除", "watch": "手表", "phone": "手机",
    "computer": "电脑", "shopping": "购物", "battery": "电池", "food": "食物", "drink": "饮品", "health": "健康",
    "career": "职业", "project": "项目", "coding": "编程", "schedule": "作息", "fitness": "健身", "pet": "宠物",
    "commute": "通勤", "travel": "出行", "communication": "沟通", "name": "名字", "like": "喜欢", "love": "爱",
    "prefer": "偏好", "hate": "讨厌", "want": "想要", "enjoy": "享受",
}
"""The reader's canonical attribute and domain names (memory/write/extract.py, lexicon.py: English words) in Chinese,
so a Chinese page never names an attribute in English. Words taken from the message itself stay as written."""
_VERDICTS_ZH = {"duplicate": "重复", "update": "更新", "coexist": "并存", "new": "新增"}
WORDS_ZH = {
    # contexts (memory/write/lexicon.py: CONTEXT_WORDS keys, WEEKDAYS_EN) and their kinds (QUALIFIERS_EN / _ZH)
    "weekday": "工作日", "weekend": "周末", "holiday": "节假日", "work": "工作时", "home": "在家", "school": "在学校",
    "summer": "夏天", "winter": "冬天", "spring": "春天", "autumn": "秋天", "morning": "早上", "evening": "晚上",
    "monday": "周一", "tuesday": "周二", "wednesday": "周三", "thursday": "周四", "friday": "周五",
    "saturday": "周六", "sunday": "周日", "day": "白天", "night": "夜里", "hot": "天热时", "cold": "天冷时",
    "handheld": "手持设备", "desk": "桌面设备", "web": "网页端", "app": "应用端", "production": "生产环境",
    "testing": "测试环境", "free": "免费版", "paid": "付费版", "car": "开车", "transit": "公共交通", "long": "长途",
    "short": "短途", "domestic": "国内", "abroad": "国外", "travel": "旅行", "exercise": "运动时", "rest": "休息时",
    "dine_in": "堂食", "takeaway": "外卖", "none": "无条件",
    # values the reader names in English whatever the message's language (memory/write/reading.py)
    "vegetarian": "素食", "single": "单身", "married": "已婚", "divorced": "离婚", "engaged": "订婚", "widowed": "丧偶",
    "(none)": "无",
}
"""The reader's canonical English words that reach a reason's values (contexts, condition kinds, a diet or a marital
status) in Chinese. A value the message wrote itself ("Java", "iPhone 12") is not in the table: it stays as written."""
_WORDS = re.compile(r"(?<![\w-])(" + "|".join(sorted(map(re.escape, WORDS_ZH), key=len, reverse=True)) + r")(?![\w-])")
_VALUE_KEYS = frozenset({"old", "new", "value", "values", "context", "old_context", "new_context", "old_kinds",
                         "new_kinds", "marker"})
"""The params of a reason whose words the reader may have canonicalised (memory.core.reasons: EN's fields)."""


def words_zh(text: str) -> str:
    """The reader's canonical English words inside ``text`` (``tuesday evening``, ``home; monday``) in Chinese
    (``周二晚上``, ``在家；周一``); anything else as written."""
    said = _WORDS.sub(lambda m: WORDS_ZH[m.group(1)], text)
    return _CJK_GAP.sub("", said.replace("; ", "；").replace(", ", "、")) if said != text else text


def tags_zh(tags: str) -> str:
    """A record's ``domain_tags`` or ``context_tags`` as a table shows them (``food, schedule``), in Chinese words."""
    return "、".join(ATTRIBUTES_ZH.get(tag, words_zh(tag)) for tag in tags.split(", ") if tag) if tags else tags


def _values_zh(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with the reader's canonical words of every value field in Chinese (also a fallback's, prefixed)."""
    return {key: words_zh(value) if isinstance(value, str) and key.removeprefix(FALLBACK_PREFIX) in _VALUE_KEYS
            else value for key, value in params.items()}


_CANONICAL = re.compile(r"\b(" + "|".join(sorted(map(re.escape, ATTRIBUTES_ZH), key=len, reverse=True)) + r")\b")
_CJK_GAP = re.compile(r"(?<=[\u3000-\u9fff]) +(?=[\u3000-\u9fff])")


def _in_chinese(words: str) -> str:
    """The reader's English attribute words inside ``words`` (``favourite 颜色``) in Chinese (``最喜欢的颜色``)."""
    return _CJK_GAP.sub("", _CANONICAL.sub(lambda m: ATTRIBUTES_ZH[m.group(1)], words))


def attribute_zh(attribute: str) -> str:
    """An attribute as the reading names it (``prop:budget``), in Chinese words."""
    kind, _, rest = attribute.partition(":")
    rest = _in_chinese(rest)
    if kind == "verb":
        return f"“{rest}”陈述"
    if kind == "prop":
        return f"属性“{rest}”"
    if kind in _KINDS_ZH:
        return f"“{rest}”的{_KINDS_ZH[kind]}"
    if kind == "prefer":
        return "与".join(f"“{o}”" for o in rest.split("|")) + "之间的偏好"
    return f"属性“{_in_chinese(attribute)}”"


CHINESE = Language(ZH_TEMPLATES, attribute_zh, "（朴素规则在相似度 {similarity:.2f} 时会判为{verdict}。）",
                   affirms="肯定", denies="否定", negation="非", skipped="，另有 {n} 个过长的子句未读")
LANGUAGES: dict[str, Language] = {"en": ENGLISH, "zh": CHINESE}


def say(reason: Reason, lang: str) -> str:
    """A reason's sentence in the lab's language (English for any language without templates)."""
    language = LANGUAGES.get(lang, ENGLISH)
    if language is CHINESE and reason.plain is not None:  # the plain rule's verdict in Chinese too
        reason = Reason(reason.code, reason.params, (reason.plain[0], _VERDICTS_ZH.get(reason.plain[1],
                                                                                      reason.plain[1])))
    if language is CHINESE and "rules_verdict" in reason.params:  # learned.overruled: both verdicts in Chinese
        params = dict(reason.params)
        for key in ("verdict", "rules_verdict"):
            params[key] = _VERDICTS_ZH.get(str(params[key]), params[key])
        reason = Reason(reason.code, params, reason.plain)
    if language is CHINESE:  # contexts and values the reader named in English
        reason = Reason(reason.code, _values_zh(reason.params), reason.plain)
    return render_reason(reason, language)


def reason_in(item: Any, lang: str) -> str:
    """The reason of a decision (:class:`memory.write.adjudicate.Decision`, :class:`memory.eval.pairs.PairResult`, or either's
    ``to_dict()``, as the decision log keeps it) in the lab's language."""
    if isinstance(item, Mapping):
        return say(Reason.from_dict(item), lang)
    return say(item.why, lang)


_BOUNDED_FACT = re.compile(r"\(([\d,]+)-character turn, stored raw\)")
"""The fact a bounded read logs (memory.write.ingest: the turn stored raw, in the library's English)."""


def fact_in(fact: str, decision: str, lang: str) -> str:
    """A decision's fact in the lab's language: a bounded read's note on the turn stored raw is worded in Chinese."""
    if lang == "zh" and decision == "bounded" and (match := _BOUNDED_FACT.fullmatch(fact)):
        return f"（{match.group(1)} 字的消息，原样保存）"
    return fact
