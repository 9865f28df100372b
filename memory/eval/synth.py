"""Synthetic scenarios of any size, deterministic by seed, in the scenario file format.

Each user gets durable facts on a few attributes (budget, city, diet, deadline, editor, team),
some of them later updated (the old message labelled ``stale``), chit-chat ``noise`` and
``private`` notes; users share attribute phrasings on purpose, so isolation is tested by
similarity. Every attribute a user has gets a labelled query: ``relevant`` is the current
value's message, ``forbidden`` the user's stale messages on it and other users' messages on it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from memory.core.errors import InputError

ATTRIBUTES: dict[str, tuple[str, str, list[str]]] = {
    # name: (statement template, question, values)
    "budget": ("The campaign budget is {v} yuan.", "What is the campaign budget?",
               ["200,000", "300,000", "450,000", "500,000", "800,000", "1,200,000"]),
    "city": ("I live in {v}.", "Which city does the user live in?",
             ["Hangzhou", "Shanghai", "Beijing", "Shenzhen", "Chengdu", "Berlin", "Lisbon"]),
    "diet": ("For food, I {v}.", "What does the user eat?",
             ["am vegetarian", "eat fish but no meat", "eat everything", "avoid gluten", "am vegan"]),
    "deadline": ("The launch deadline is {v}.", "When is the launch deadline?",
                 ["June 30", "July 15", "August 1", "September 9", "October 20"]),
    "editor": ("My editor of choice is {v}.", "Which editor does the user use?",
               ["VS Code", "Neovim", "Emacs", "IntelliJ", "Sublime Text"]),
    "team": ("I work on the {v} team.", "Which team is the user on?",
             ["payments", "search", "growth", "infrastructure", "mobile"]),
}
NOISE = [
    "Lunch today was noodles again.", "The weather is gloomy this morning.", "ok thanks!",
    "Coffee machine on floor three is broken.", "Haha, good one.", "Traffic was terrible today.",
    "I might grab a sandwich later.", "It's raining again, typical.",
]
PRIVATE = [
    "Private: my doctor's appointment is on Thursday.", "Private: my bank PIN hint is my cat's birthday.",
    "Private: I'm interviewing at another company.", "Private: my sister is in hospital this week.",
]


MAX_USERS = 1_000
"""Most users (and tenants) a synthetic scenario may have."""
MAX_MESSAGES = 100_000
"""Most messages a synthetic scenario may ask for."""
MAX_USER_MESSAGES = 2_000_000
"""Bound on users x messages (each user gets at least 2 messages): a query's ``forbidden`` list names the
other users' messages on its attribute, so the file grows with that product (2,000,000 gives about
1.2 million forbidden ids, a few seconds to generate)."""


@dataclass(frozen=True)
class SynthSpec:
    """What to generate."""

    users: int = 6
    """Users in all; spread round-robin over the tenants."""
    tenants: int = 2
    messages: int = 120
    """Approximate total message count (facts + updates + noise + private)."""
    noise_share: float = 0.3
    """Share of messages that are chit-chat noise."""
    private_share: float = 0.1
    """Share of messages that are private notes."""
    update_share: float = 0.3
    """Share of a user's fact messages that update an earlier one (leaving it stale); a user states at
    most six attributes, so beyond that every further fact message is an update."""
    seed: int = 0

    def __post_init__(self) -> None:
        for name, most in (("users", MAX_USERS), ("tenants", MAX_USERS), ("messages", MAX_MESSAGES)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
                big = isinstance(value, int) and abs(value) > 10**12  # never str() a 5,000-digit int
                shown = f"a number of about {int(value.bit_length() * 0.30103) + 1} digits" if big else repr(value)
                raise InputError(f"{name} must be a whole number in [1, {most:,}], got {shown}")
        if self.users * max(self.messages, 2 * self.users) > MAX_USER_MESSAGES:
            raise InputError(f"users x messages must be at most {MAX_USER_MESSAGES:,} (the queries' forbidden lists "
                             f"grow with it), got {self.users:,} x {max(self.messages, 2 * self.users):,}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise InputError(f"seed must be a whole number, got {type(self.seed).__name__}")
        if self.tenants > self.users:
            raise InputError(f"tenants ({self.tenants}) must not exceed users ({self.users})")
        for name in ("noise_share", "private_share", "update_share"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise InputError(f"{name} must be in [0, 1], got {value!r}")
        if self.noise_share + self.private_share > 0.9:
            raise InputError("noise_share + private_share must leave room for facts (<= 0.9)")


def generate_scenario(spec: SynthSpec) -> dict[str, Any]:
    """A scenario dict (validate it with memory.core.scenario.parse_scenario); the same spec gives the same file."""
    rng = random.Random(spec.seed)
    owners = [(f"tenant-{u % spec.tenants}", f"user-{u}") for u in range(spec.users)]
    per_user = max(spec.messages // spec.users, 2)
    start = datetime(2026, 4, 1, tzinfo=timezone.utc)
    messages: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}  # message id -> message: keeps generation linear in the size
    facts: dict[tuple[str, str], dict[str, list[str]]] = {}  # owner -> attribute -> message ids, oldest first

    def emit(owner: tuple[str, str], content: str, labels: list[str], when: datetime) -> str:
        mid = f"m{len(messages) + 1}"
        messages.append({"id": mid, "tenant_id": owner[0], "user_id": owner[1], "session_id": f"s-{owner[1]}",
                         "role": "user", "content": content, "timestamp": when.isoformat().replace("+00:00", "Z"),
                         "labels": labels})
        by_id[mid] = messages[-1]
        return mid

    for owner in owners:
        n_noise = round(per_user * spec.noise_share)
        n_private = round(per_user * spec.private_share)
        n_facts = max(per_user - n_noise - n_private, 1)
        n_first = min(len(ATTRIBUTES), max(1, round(n_facts * (1 - spec.update_share))))
        attrs = rng.sample(list(ATTRIBUTES), k=n_first)
        n_updates = n_facts - n_first if spec.update_share > 0 else 0
        plan: list[tuple[str, str | None]] = [("fact", a) for a in attrs]
        plan += [("update", rng.choice(attrs)) for _ in range(n_updates)]
        plan += [("noise", None)] * n_noise + [("private", None)] * n_private
        # facts before their updates; the rest shuffled around them
        head, tail = [p for p in plan if p[0] == "fact"], [p for p in plan if p[0] != "fact"]
        rng.shuffle(tail)
        order = head + tail
        order.sort(key=lambda p: (p[0] == "update",))  # every update after every first statement
        when = start + timedelta(hours=rng.randint(0, 48))
        owner_facts = facts.setdefault(owner, {})
        used_by: dict[str, set[str]] = {}  # attribute -> contents this user already stated (kept as it grows)
        for kind, attr in order:
            when += timedelta(hours=rng.randint(3, 60))
            if kind == "noise":
                emit(owner, rng.choice(NOISE), ["noise"], when)
            elif kind == "private":
                emit(owner, rng.choice(PRIVATE), ["private"], when)
            else:
                assert attr is not None  # "fact" and "update" entries always name an attribute
                template, _, values = ATTRIBUTES[attr]
                previous = owner_facts.get(attr, [])
                used = used_by.setdefault(attr, set())
                choices = [v for v in values if template.format(v=v) not in used] or values
                if previous:  # the earlier statement becomes stale
                    by_id[previous[-1]]["labels"] = ["stale"]
                content = template.format(v=rng.choice(choices))
                owner_facts.setdefault(attr, []).append(emit(owner, content, [], when))
                used.add(content)

    queries: list[dict[str, Any]] = []
    last = max(m["timestamp"] for m in messages)
    for owner in owners:
        for attr, ids in sorted(facts.get(owner, {}).items()):
            others = [mid for o, a in facts.items() if o != owner for mid in a.get(attr, [])]
            queries.append({
                "id": f"q{len(queries) + 1}", "tenant_id": owner[0], "user_id": owner[1],
                "query": ATTRIBUTES[attr][1], "relevant": [ids[-1]], "forbidden": ids[:-1] + others, "as_of": last,
            })
    return {"name": f"synthetic-{spec.users}u-{spec.messages}m-seed{spec.seed}", "language": "en",
            "generator": {"users": spec.users, "tenants": spec.tenants, "messages": spec.messages,
                          "noise_share": spec.noise_share, "private_share": spec.private_share,
                          "update_share": spec.update_share, "seed": spec.seed},
            "messages": messages, "queries": queries}
