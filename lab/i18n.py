"""UI text in English and Chinese. ``t(key, **values)`` in the language of the sidebar switch (default English).

Every key exists in both languages (tests check it); a missing key shows as the key itself.
"""

from __future__ import annotations

import streamlit as st

LANGUAGES: dict[str, str] = {"en": "English", "zh": "中文"}
DEFAULT_LANGUAGE = "en"

TEXT: dict[str, dict[str, str]] = {
    # navigation
    "page.recall": {"en": "Recall", "zh": "召回"},
    "page.pollution": {"en": "Pollution", "zh": "污染注入"},
    "page.dedup": {"en": "Dedup", "zh": "去重"},
    "page.erasure": {"en": "Erasure", "zh": "删除验证"},
    "page.study": {"en": "Study", "zh": "阈值研究"},
    "page.inspector": {"en": "Inspector", "zh": "记录检查"},
    # sidebar
    "sidebar.title": {"en": "Memory settings", "zh": "记忆参数"},
    "sidebar.advanced": {"en": "Advanced", "zh": "高级"},
    "sidebar.embedder": {"en": "Embedder", "zh": "向量模型"},
    "sidebar.embedder_help": {
        "en": "minilm: all-MiniLM-L6-v2 (sentence-transformers, offline). lexical: the seed article's tokenizer.",
        "zh": "minilm：all-MiniLM-L6-v2（sentence-transformers，离线）。lexical：原文的分词打分。",
    },
    "sidebar.scenario": {"en": "Scenario (fixtures/)", "zh": "场景（fixtures/）"},
    "sidebar.upload": {"en": "…or upload a scenario file", "zh": "……或上传场景文件"},
    "sidebar.upload_help": {
        "en": "A JSON scenario as in DESIGN.md section 4; it replaces the selected scenario while it is loaded.",
        "zh": "DESIGN.md 第 4 节格式的 JSON 场景；上传后替代上面选择的场景。",
    },
    "sidebar.upload_error": {
        "en": "The uploaded scenario cannot be used: {error}. The selected scenario is shown instead.",
        "zh": "上传的场景无法使用：{error}。当前仍显示所选场景。",
    },
    "sidebar.upload_ok": {"en": "Using the uploaded scenario “{name}”.", "zh": "正在使用上传的场景“{name}”。"},
    "sidebar.config_error": {"en": "Invalid settings: {error}", "zh": "参数组合无效：{error}"},
    "sidebar.reset_defaults": {"en": "Reset to defaults", "zh": "恢复默认值"},
    "sidebar.reset_lab": {"en": "Reset lab", "zh": "重置实验"},
    "sidebar.reset_lab_help": {
        "en": "Throw away this session's injections, canaries and erasures and reload the scenario.",
        "zh": "丢弃本会话的注入、金丝雀和删除操作，重新载入场景。",
    },
    "sidebar.share": {
        "en": "Settings live in the page address: copy the URL to share them.",
        "zh": "参数保存在页面地址里：复制网址即可分享。",
    },
    "knob.threshold": {"en": "Similarity threshold", "zh": "相似度阈值"},
    "knob.threshold.help": {"en": "Governed recall drops candidates below this cosine similarity.",
                            "zh": "治理召回丢弃余弦相似度低于该值的候选。"},
    "knob.top_k": {"en": "top_k", "zh": "top_k"},
    "knob.top_k.help": {"en": "At most this many memories are injected (blind top-k always injects this many).",
                        "zh": "最多注入的记忆条数（盲目 top-k 总是注入这么多条）。"},
    "knob.window_size": {"en": "Recent window (messages)", "zh": "近期窗口（条）"},
    "knob.window_size.help": {"en": "Messages kept verbatim; older ones are folded into the summary.",
                              "zh": "原样保留的消息条数；更早的折叠进摘要。"},
    "knob.decay_rate": {"en": "Decay rate (per day)", "zh": "衰减率（每天）"},
    "knob.decay_rate.help": {"en": "Recency term exp(-rate × age in days); 0 disables decay.",
                             "zh": "时效项 exp(-衰减率 × 天数)；0 表示不衰减。"},
    "knob.alpha": {"en": "α: weight of similarity", "zh": "α：相似度权重"},
    "knob.alpha.help": {"en": "Composite score = α·similarity + β·recency + γ·importance.",
                        "zh": "综合分 = α·相似度 + β·时效 + γ·重要性。"},
    "knob.beta": {"en": "β: weight of recency", "zh": "β：时效权重"},
    "knob.beta.help": {"en": "Weight of exp(-decay × age).", "zh": "exp(-衰减 × 天数) 的权重。"},
    "knob.gamma": {"en": "γ: weight of importance", "zh": "γ：重要性权重"},
    "knob.gamma.help": {"en": "Weight of max(importance, access frequency).", "zh": "max(重要性, 访问频率) 的权重。"},
    "knob.duplicate_band": {"en": "Duplicate band", "zh": "重复阈带"},
    "knob.duplicate_band.help": {"en": "Plain rule: similarity at or above this is a duplicate (dedup page).",
                                 "zh": "朴素规则：相似度不低于该值视为重复（去重页使用）。"},
    "knob.conflict_band": {"en": "Conflict band", "zh": "冲突阈带"},
    "knob.conflict_band.help": {"en": "Plain rule: similarity in [conflict, duplicate) is a conflict; must not exceed "
                                      "the duplicate band.",
                                "zh": "朴素规则：相似度在 [冲突, 重复) 之间视为冲突；不得高于重复阈带。"},
    "knob.token_budget": {"en": "Token budget (memories)", "zh": "记忆 token 预算"},
    "knob.token_budget.help": {"en": "Most tokens of long-term memory injected into one context.",
                               "zh": "一次上下文最多注入的长期记忆 token 数。"},
    # shared page text
    "page.invalid_config": {"en": "Fix the settings in the sidebar first: {error}",
                            "zh": "请先修正侧栏中的参数：{error}"},
    "page.user": {"en": "User (tenant/user)", "zh": "用户（租户/用户）"},
    "page.no_users": {"en": "This lab holds no users (all erased?). Use “Reset lab” in the sidebar.",
                      "zh": "本实验中没有用户（都被删除了？）。请点侧栏的“重置实验”。"},
    "page.unknown_user": {
        "en": "User “{user}” is not in this lab (erased, or the link is from another scenario). Known users: {known}.",
        "zh": "用户“{user}”不在本实验中（已删除，或链接来自其他场景）。现有用户：{known}。",
    },
    "page.query_pick": {"en": "Query (the scenario's labelled queries)", "zh": "查询（场景中带标注的查询）"},
    "page.query": {"en": "Your query", "zh": "你的查询"},
    "page.query_placeholder": {"en": "e.g. what is the budget?", "zh": "例如：预算是多少？"},
    "page.bad_query": {"en": "This query cannot be used: {error}", "zh": "该查询无法使用：{error}"},
    "page.empty_query": {"en": "Type a query to see what would be recalled.", "zh": "请输入查询，查看会召回什么。"},
    "engine.loading_model": {"en": "Loading the MiniLM model (once per server process)…",
                             "zh": "正在加载 MiniLM 模型（每个服务进程只加载一次）……"},
    "engine.ingesting": {"en": "Loading scenario “{name}”: {done}/{total} messages",
                         "zh": "正在载入场景“{name}”：{done}/{total} 条消息"},
    "fig.similarity": {"en": "similarity", "zh": "相似度"},
    "fig.score": {"en": "composite score", "zh": "综合分"},
    "fig.candidate": {"en": "candidate (message id)", "zh": "候选（消息 id）"},
    "fig.memories": {"en": "polluted memories", "zh": "被污染的记忆条数"},
    "fig.items": {"en": "items of the user", "zh": "该用户的条目数"},
    # recall
    "recall.title": {"en": "Blind top-k vs governed recall", "zh": "盲目 top-k 与治理召回"},
    "recall.lead": {
        "en": "Top-k guarantees k results, not k good ones. Move the sliders: the candidates are fetched once and "
              "only re-ranked, so every number below follows at once.",
        "zh": "top-k 保证返回 k 条，而不是 k 条好结果。拖动滑块：候选只取一次，之后只重新排序，下面的数字立刻跟着变。",
    },
    "recall.m_governed": {"en": "Governed", "zh": "治理召回"},
    "recall.m_governed.help": {"en": "Memories governed recall injects.", "zh": "治理召回注入的记忆条数。"},
    "recall.m_blind": {"en": "Blind top-k", "zh": "盲目 top-k"},
    "recall.m_blind.help": {"en": "Memories blind top-k injects.", "zh": "盲目 top-k 注入的记忆条数。"},
    "recall.m_polluted_blind": {"en": "Polluted in blind", "zh": "盲目召回中的污染"},
    "recall.m_polluted_governed": {"en": "Polluted in governed", "zh": "治理召回中的污染"},
    "recall.m_tokens": {"en": "Memory tokens / budget", "zh": "记忆 token / 预算"},
    "recall.blind": {"en": "Blind top-k", "zh": "盲目 top-k"},
    "recall.blind_caption": {"en": "The {k} most similar memories of this user: no threshold, no lifecycle.",
                             "zh": "该用户最相似的 {k} 条记忆：无阈值，无生命周期过滤。"},
    "recall.governed": {"en": "Governed", "zh": "治理召回"},
    "recall.governed_caption": {
        "en": "Lifecycle-filtered in the store, thresholded, rescored, cut to top_k, within the token budget.",
        "zh": "存储层过滤生命周期，再按阈值、综合分、top_k 和 token 预算筛选。",
    },
    "recall.nothing": {"en": "Nothing is injected.", "zh": "没有注入任何记忆。"},
    "recall.candidates": {"en": "Every candidate and the stage that decided it", "zh": "每个候选及决定它去留的阶段"},
    "recall.no_candidates": {"en": "This user has no memories.", "zh": "该用户没有记忆。"},
    "recall.chart_cap": {"en": "The chart shows the {n} most similar of {total} candidates; the table has all.",
                         "zh": "图中显示 {total} 个候选中最相似的 {n} 个；表格包含全部。"},
    "recall.parts_caption": {
        "en": "score = {alpha}·similarity + {beta}·recency + {gamma}·importance; recency = exp(-{decay}·age in days).",
        "zh": "综合分 = {alpha}·相似度 + {beta}·时效 + {gamma}·重要性；时效 = exp(-{decay}·天数)。",
    },
    "recall.context": {"en": "The context that would be injected", "zh": "将被注入的上下文"},
    "recall.budget": {"en": "Memory tokens {used} of a budget of {budget} (whole context: {total} tokens)",
                      "zh": "记忆 token {used} / 预算 {budget}（整个上下文：{total} token）"},
    "recall.m_recent": {"en": "Recent window messages", "zh": "近期窗口消息"},
    "recall.m_summary": {"en": "Summary characters", "zh": "摘要字符数"},
    "recall.m_context_tokens": {"en": "Context tokens", "zh": "上下文 token"},
    "recall.empty_context": {"en": "(empty)", "zh": "（空）"},
    # pollution
    "pollution.title": {"en": "Pollution injection", "zh": "污染注入"},
    "pollution.lead": {
        "en": "Inject one kind of pollution at a time into this session's own workspace and count how much of the "
              "injected context is polluted, blind vs governed, before and after.",
        "zh": "一次注入一种污染（只写入本会话自己的工作区），比较盲目召回与治理召回在注入前后被污染的程度。",
    },
    "pollution.inject": {"en": "Inject", "zh": "注入"},
    "inject.noise": {"en": "Noise", "zh": "噪声"},
    "inject.noise.help": {"en": "Three chit-chat messages that mention the query's topic.",
                          "zh": "三条提到查询主题的闲聊。"},
    "inject.private": {"en": "Another user's private data", "zh": "他人私密数据"},
    "inject.private.help": {"en": "A private note of another user of the same tenant, worded like the query.",
                            "zh": "同一租户下另一位用户的私密笔记，措辞与查询相近。"},
    "inject.stale": {"en": "Stale fact + update", "zh": "过时事实 + 更新"},
    "inject.stale.help": {"en": "A fact from two months ago, then yesterday's update of it.",
                          "zh": "两个月前的事实，以及昨天对它的更新。"},
    "inject.contradiction": {"en": "Contradiction", "zh": "矛盾"},
    "inject.contradiction.help": {"en": "A message saying the opposite of what was said before.",
                                  "zh": "一条与之前说法相反的消息。"},
    "inject.erased": {"en": "Data of an erased user", "zh": "已删除用户的数据"},
    "inject.erased.help": {"en": "Another user writes a note like the query, then asks to be forgotten (erased).",
                           "zh": "另一位用户写下与查询相近的笔记，随后要求被遗忘（删除）。"},
    "pollution.injected": {"en": "Injected: {kind}", "zh": "已注入：{kind}"},
    "pollution.write_path_note": {
        "en": "Honest state: the lab writes injections with MemoryManager.add; the write path (extraction, "
              "adjudication, versioning) is not wired into the lab yet, so a stale fact and its update are both "
              "active records and governed recall can still inject the stale one.",
        "zh": "如实说明：本实验用 MemoryManager.add 写入注入的消息；写入链路（抽取、裁决、版本化）尚未接入本实验，"
              "所以过时事实和它的更新都是有效记录，治理召回仍可能注入过时的那条。",
    },
    "pollution.erased_note": {
        "en": "{owner} was erased: an unisolated ranking held {before} of their notes before, {after} after "
              "(erase verified: {ok}).",
        "zh": "{owner} 已删除：无隔离排序中删除前有 {before} 条其笔记，删除后 {after} 条（删除验证：{ok}）。",
    },
    "pollution.before": {"en": "Before injections", "zh": "注入前"},
    "pollution.after": {"en": "After injections", "zh": "注入后"},
    "pollution.m_blind": {"en": "Polluted / injected, blind", "zh": "污染 / 注入（盲目）"},
    "pollution.m_governed": {"en": "Polluted / injected, governed", "zh": "污染 / 注入（治理）"},
    "pollution.m_share": {"en": "{share} of the injected memory tokens are polluted.",
                          "zh": "注入的记忆 token 中有 {share} 被污染。"},
    "pollution.token_share": {"en": "Polluted share of memory tokens: blind {blind}, governed {governed}.",
                              "zh": "记忆 token 的污染占比：盲目 {blind}，治理 {governed}。"},
    "pollution.col.blind_before": {"en": "blind, before", "zh": "盲目，注入前"},
    "pollution.col.governed_before": {"en": "governed, before", "zh": "治理，注入前"},
    "pollution.col.blind_after": {"en": "blind, after", "zh": "盲目，注入后"},
    "pollution.col.governed_after": {"en": "governed, after", "zh": "治理，注入后"},
    "pollution.col.sandbox_before": {"en": "sandbox (NO isolation), before", "zh": "沙盒（无隔离），注入前"},
    "pollution.col.sandbox_after": {"en": "sandbox (NO isolation), after", "zh": "沙盒（无隔离），注入后"},
    "pollution.isolation_note": {
        "en": "Blind and governed recall are both isolated by (tenant, user) inside the store query, so “private” "
              "(another user's data) and “erased” stay 0 for both. Only the teaching sandbox, which ranks every "
              "user's vectors together, shows what top-k without isolation would inject.",
        "zh": "盲目召回和治理召回都在存储查询内按（租户，用户）隔离，所以“private”（他人数据）和“erased”两者始终为 0。"
              "只有把所有用户向量放在一起排序的教学沙盒，才会显示没有隔离时 top-k 会注入什么。",
    },
    "pollution.injected_title": {"en": "What the lab injected", "zh": "本实验注入的消息"},
    "pollution.nothing_injected": {"en": "Nothing injected yet: click a button above.",
                                   "zh": "还没有注入：点击上面的按钮。"},
    "pollution.sandbox": {"en": "Teaching sandbox: top-k WITHOUT isolation", "zh": "教学沙盒：没有隔离的 top-k"},
    "pollution.sandbox_warning": {
        "en": "Teaching only. This ranks plain numpy cosine over every user's stored vectors (fetched user by user "
              "through the library's isolated reads). The library itself never ranks across users.",
        "zh": "仅供教学。这里用 numpy 余弦对所有用户的向量一起排序（向量通过库的隔离读取逐个用户取出）。库本身从不跨用户排序。",
    },
    # erasure
    "erasure.title": {"en": "Erasure verification", "zh": "删除验证"},
    "erasure.lead": {
        "en": "Plant canary strings in a user's memory, erase the user, and check every path: recent window, summary, "
              "long-term vectors and text, recall, the query cache and the bytes of this lab's data folder on disk.",
        "zh": "在用户记忆中埋入金丝雀字符串，删除该用户，然后检查每条路径：近期窗口、摘要、长期向量与文本、召回、查询缓存，"
              "以及本实验数据目录在磁盘上的字节。",
    },
    "erasure.plant": {"en": "Plant {n} canaries", "zh": "埋入 {n} 个金丝雀"},
    "erasure.canary_text": {"en": "Remember my locker code {token}, please.", "zh": "请记住我的储物柜密码 {token}。"},
    "erasure.planted": {"en": "Canaries planted: {canaries}", "zh": "已埋入的金丝雀：{canaries}"},
    "erasure.erase": {"en": "Erase {owner}", "zh": "删除 {owner}"},
    "erasure.done": {"en": "{owner} erased.", "zh": "{owner} 已删除。"},
    "erasure.result": {"en": "Erasure of {owner}", "zh": "{owner} 的删除结果"},
    "erasure.ok": {"en": "Verified: nothing of the user remains on any path, and no other user lost a record.",
                   "zh": "已验证：任何路径上都没有残留，其他用户的记录也没有减少。"},
    "erasure.not_ok": {"en": "NOT verified: something remained (see the paths not cleared).",
                       "zh": "未通过验证：仍有残留（见未清除的路径）。"},
    "erasure.before": {"en": "Before erasure", "zh": "删除前"},
    "erasure.after": {"en": "After erasure", "zh": "删除后"},
    "erasure.holds": {"en": "held now", "zh": "当前持有"},
    "erasure.now": {"en": "What the lab holds of {owner} now", "zh": "本实验当前持有的 {owner} 数据"},
    "erasure.m_removed": {"en": "Items removed", "zh": "删除的条目"},
    "erasure.m_others_before": {"en": "Other users' records before", "zh": "其他用户记录（删除前）"},
    "erasure.m_others_after": {"en": "Other users' records after", "zh": "其他用户记录（删除后）"},
    "erasure.canaries": {"en": "Canaries in the files of this lab's data folder", "zh": "本实验数据目录文件中的金丝雀"},
    "erasure.paths_note": {
        "en": "Every row is the library's own check (memory.erase.verify_erased), run before and after on the same "
              "data; the disk row scans the bytes of every file in this lab's data folder.",
        "zh": "每一行都是库自己的检查（memory.erase.verify_erased），删除前后在同一份数据上运行；disk 一行扫描本实验数据目录中每个文件的字节。",
    },
    "erasure.report_json": {"en": "The EraseReport as JSON", "zh": "EraseReport（JSON）"},
    # inspector
    "inspector.title": {"en": "Stored records", "zh": "存储的记录"},
    "inspector.lead": {"en": "Every record of this lab's workspace with all its metadata (the A6 contract).",
                       "zh": "本实验工作区的每条记录及全部元数据（A6 约定）。"},
    "inspector.who": {"en": "Users", "zh": "用户"},
    "inspector.who_help": {"en": "“all”: every user of this lab's workspace.", "zh": "“all”：本实验工作区的全部用户。"},
    "inspector.scope": {"en": "Scope", "zh": "范围"},
    "inspector.scope_help": {
        "en": "all: archive included. active: recallable now. inactive: deprecated or expired. hot: not archived.",
        "zh": "all：含归档。active：当前可召回。inactive：已弃用或过期。hot：未归档。",
    },
    "inspector.filter": {"en": "Filter", "zh": "筛选"},
    "inspector.filter_placeholder": {"en": "text in the content, or an exact id", "zh": "内容中的文字，或完整 id"},
    "inspector.category": {"en": "Category", "zh": "类别"},
    "inspector.labels": {"en": "Labels", "zh": "标签"},
    "inspector.m_records": {"en": "Records shown", "zh": "显示的记录"},
    "inspector.m_owners": {"en": "Users", "zh": "用户数"},
    "inspector.m_deprecated": {"en": "Deprecated", "zh": "已弃用"},
    "inspector.empty": {"en": "No records in this scope.", "zh": "该范围内没有记录。"},
    "inspector.csv": {"en": "Download CSV", "zh": "下载 CSV"},
    "inspector.trace": {"en": "Download trace.json", "zh": "下载 trace.json"},
}


def language() -> str:
    """The UI language chosen in the sidebar (``en`` until the switch is drawn)."""
    lang = st.session_state.get("lang", DEFAULT_LANGUAGE)
    return lang if lang in LANGUAGES else DEFAULT_LANGUAGE


def t(key: str, **values: object) -> str:
    """The text of ``key`` in the current language, formatted with ``values``."""
    entry = TEXT.get(key)
    if entry is None:
        return key
    text = entry.get(language()) or entry[DEFAULT_LANGUAGE]
    return text.format(**values) if values else text
