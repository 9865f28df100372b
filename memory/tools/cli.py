"""The command line: ``python -m memory {demo,recall,erase-audit} ...``.

JSON goes to stdout with ``--json``; progress bars and notes go to stderr.
Bad arguments and bad input exit with status 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn, Sequence

from memory.core.config import MemoryConfig
from memory.embed.embedders import EMBEDDER_NAMES, check_embedder_name
from memory.core.errors import ConfigError, MemoryLabError
from memory.core.safefile import shown
from memory.write.judges import DEFAULT_JUDGE, DEFAULT_WRITE_PATH, JUDGE_NAMES, make_judge

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}
MAX_SCALE = 100
"""Largest ``reliability --scale`` (scale 1 takes about a minute; the work grows with the scale)."""


class CliError(Exception):
    """A one-line message for the user; the CLI exits with status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, no usage block
        raise CliError(one_line(f"{self.prog}: {message}", limit=300))


def command(name: str):
    def register(fn: Callable[[argparse.Namespace], int]):
        COMMANDS[name] = fn
        return fn
    return register


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m memory", description="Memory Governance Lab engine")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("demo", help="reproduce the seed article's demo (lexical embedder, threshold 0.22)")
    p.add_argument("--trace", metavar="PATH", help="write trace.json here")
    p.add_argument("--json", action="store_true", help="print the trace as JSON")

    p = sub.add_parser("recall", help="blind vs governed recall for one user of a scenario")
    _scenario_args(p)
    p.add_argument("--query", required=True)
    p.add_argument("--threshold", type=float)
    p.add_argument("--top-k", type=int)
    p.add_argument("--decay-rate", type=float)
    p.add_argument("--window-size", type=int)
    p.add_argument("--token-budget", type=int)
    p.add_argument("--as-of", help="ISO time the query is asked at (default: the scenario's last message)")
    p.add_argument("--embedder", type=_embedder, metavar=EMBEDDER_METAVAR, help="default: the settings' model, else minilm")
    p.add_argument("--write-path", choices=("raw", "facts"), help="how the scenario is written: raw (each message "
                   "as-is) or facts (distilled and judged); default: the settings' write path, else facts (the lab's)")
    p.add_argument("--judge", choices=JUDGE_NAMES, help="the facts write path's judge; default: the settings' judge, "
                   f"else {DEFAULT_JUDGE}")
    p.add_argument("--settings", metavar="PATH", help="an operating-point file (study --export-point): its model, write "
                   "path, judge and config; the options above override it")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("reliability", help="run the isolation, erasure, hostile-input and crash checks; print figures")
    p.add_argument("--scale", type=int, default=1, help="1 (default, about a minute) or more for larger runs")
    p.add_argument("--embedder", type=_embedder, metavar=EMBEDDER_METAVAR, default="lexical")
    p.add_argument("--skip", metavar="NAMES", default="", help="checks not to run, comma-separated (quick: the "
                   "ones that take seconds, which the test suite runs)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("migrate", help="move a data folder to the per-owner store layout (memory/store/migrate.py)")
    p.add_argument("--data-dir", required=True, help="the data folder (MEMORY_DATA_DIR) to migrate in place")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("synth", help="write a synthetic scenario of any size (deterministic by seed)")
    p.add_argument("--users", type=int, default=6)
    p.add_argument("--tenants", type=int, default=2)
    p.add_argument("--messages", type=int, default=120)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, metavar="PATH")

    p = sub.add_parser("erase-audit", help="load a scenario, erase one user, verify every path")
    _scenario_args(p)
    p.add_argument("--data-dir", help="keep the store in this folder (the disk is then scanned too)")
    p.add_argument("--embedder", type=_embedder, metavar=EMBEDDER_METAVAR, default="lexical")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("forget", help="the forgetting pass: archive a user's facts that stayed cold (a store on disk)")
    p.add_argument("--data-dir", required=True, help="the data folder (MEMORY_DATA_DIR) holding the workspace")
    p.add_argument("--workspace", required=True, help="the workspace's name (MemoryManager(workspace=...))")
    p.add_argument("--embedder", type=_embedder, metavar=EMBEDDER_METAVAR, default="minilm",
                   help="the embedder the workspace was written with (it is part of the store's name)")
    p.add_argument("--tenant", required=True)
    p.add_argument("--user", required=True)
    p.add_argument("--as-of", help="evaluate at this time (ISO 8601; default: now)")
    p.add_argument("--floor", type=float, default=None, help="heat under which a fact is cold (default 0.05)")
    p.add_argument("--days", type=float, default=None, help="days a fact must stay cold (default 90)")
    p.add_argument("--decay-rate", type=float, default=None, help="default: MemoryConfig's")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("study", help="sweep threshold x top_k x decay_rate over labelled data (see docs/study.md)")
    p.add_argument("--dataset", required=True, metavar="PATH|locomo:PATH", help="a scenario file (or shipped name) or locomo:PATH")
    p.add_argument("--unit", choices=("turns", "facts"), default="turns", help="LoCoMo: store raw turns or observation facts")
    p.add_argument("--mode", choices=("dense", "lexical", "hybrid"), default="dense")
    p.add_argument("--embedder", type=_embedder, metavar=EMBEDDER_METAVAR, default="minilm", help="the dense embedder (dense, hybrid)")
    p.add_argument("--threshold", default="0.1:0.9:0.05", metavar="RANGE", help="start:stop:step or a comma list")
    p.add_argument("--top-k", default="5,10", metavar="RANGE")
    p.add_argument("--decay-rate", default="0", metavar="RANGE")
    p.add_argument("--token-budget", type=int, help="default: no budget")
    p.add_argument("--rule", default="f1", metavar="f1|precision@recall>=R", help="how the operating point is chosen")
    p.add_argument("--out", metavar="PATH", help="also write the study here (.json, or .csv for the sweep table)")
    p.add_argument("--export-point", metavar="PATH", help="write the recommended operating point as a settings file "
                   "(.json or .toml) for the library, the lab and the agent adapters (dense mode)")
    p.add_argument("--write-path", choices=("raw", "facts"), default="facts", help="the exported point's write path")
    p.add_argument("--judge", choices=JUDGE_NAMES, default=DEFAULT_JUDGE, help="the exported point's write-path judge")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("compare", help="embedders side by side: recall@k, where similarities lie, threshold per target")
    p.add_argument("--dataset", metavar="PATH|locomo:PATH", help="a scenario file (or shipped name) or locomo:PATH")
    p.add_argument("--unit", choices=("turns", "facts"), default="turns", help="LoCoMo: store raw turns or observation facts")
    p.add_argument("--runs", default="dense:minilm,dense:e5,lexical", metavar="MODE[:EMBEDDER],...",
                   help="e.g. dense:minilm,dense:e5,lexical,hybrid:e5")
    p.add_argument("--write-scales", action="store_true",
                   help="instead: rewrite memory/eval/score_scales.json from the shipped scenarios (built-in embedders)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("dedup", help="plain two-band rule vs governed write-time decision on a dedup pair file")
    p.add_argument("--pairs", required=True, metavar="PATH", help='JSON list of {"id", "existing", "incoming", "expected"?}')
    p.add_argument("--embedder", type=_embedder, metavar=EMBEDDER_METAVAR, default="minilm")
    p.add_argument("--judge", choices=JUDGE_NAMES, default=DEFAULT_JUDGE,
                   help="the governed decision's judge (learned: the model trained on labelled pairs)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("mcp", help="serve one user's governed memory to MCP clients (stdio; --http: 127.0.0.1 only)")
    p.add_argument("--tenant", required=True, help="the tenant served (no tool can name another)")
    p.add_argument("--user", required=True, help="the user served (no tool can name another)")
    p.add_argument("--settings", metavar="FILE", help="an operating-point file (.json or .toml) from a study; "
                   "default: the library's defaults (MiniLM, facts write path)")
    p.add_argument("--data-dir", help="the data folder (default: MEMORY_DATA_DIR or ./.memory-data)")
    p.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1 instead of stdio")
    p.add_argument("--port", type=int, help="the HTTP port (default 8000; needs --http)")
    p.add_argument("--show-blind", action="store_true", help="teaching: recall also returns the blind top-k, each "
                   "item marked admitted: false unless governed recall returned it (off: the governed memories only)")

    return parser


def _scenario_file(value: str) -> str | Path:
    """``--scenario``: a scenario file, else a shipped scenario's name (``workshop_en``), as ``--dataset`` takes (a
    file of that name wins). Neither: one line naming the shipped scenarios."""
    from memory.core.scenario import shipped_scenarios

    if Path(value).exists():
        return value
    shipped = shipped_scenarios()
    if value in shipped:
        return shipped[value]
    raise CliError(f"error: {shown(value)}: cannot read scenario file: no such file, nor a shipped scenario's name "
                   f"(known: {', '.join(shipped)})")


def _scenario_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario", required=True, metavar="PATH|NAME",
                   help="a scenario file, or a shipped scenario's name (workshop_en)")
    p.add_argument("--tenant", required=True)
    p.add_argument("--user", required=True)


def config_from_args(args: argparse.Namespace, base: MemoryConfig | None = None) -> MemoryConfig:
    """MemoryConfig with every CLI override that was given (validated)."""
    names = ("threshold", "top_k", "decay_rate", "window_size", "token_budget")
    changes = {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
    return (base or MemoryConfig()).replace(**changes)


@contextmanager
def progress_bar(desc: str) -> Iterator[Callable[[int, int], None]]:
    """A tqdm bar on stderr, driven by progress(done, total) callbacks."""
    from tqdm import tqdm

    bar = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=desc, unit="msg", file=sys.stderr, leave=False)
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        if bar is not None:
            bar.close()


def emit(data: Any, *, as_json: bool, text: Callable[[Any], str]) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2) if as_json else text(data))


# --- commands -------------------------------------------------------------------

@command("demo")
def _demo(args: argparse.Namespace) -> int:
    from memory.eval.demo import run_seed_demo

    trace = run_seed_demo(trace_path=args.trace)
    emit(trace, as_json=args.json, text=_demo_text)
    if args.trace:
        print(f"trace written: {args.trace}", file=sys.stderr)
    return 0


def _demo_text(trace: dict[str, Any]) -> str:
    lines = [f"query: {trace['query']}", "", "blind top-k:"]
    lines += [f"  {i['score']:.3f}  {i['record']['content']}" for i in trace["blind_top_k"]]
    lines += ["", "thresholded:"]
    lines += [f"  {i['score']:.3f}  {i['record']['content']}" for i in trace["thresholded"]]
    lines += ["", f"guest records after erase: {len(trace['guest_records_after_erase'])}"]
    return "\n".join(lines)


EMBEDDER_METAVAR = "|".join(EMBEDDER_NAMES) + "|openai|st:FOLDER|vectors:FILE.npz"


def _embedder(value: str) -> str:
    """argparse type of --embedder: a known name (checked before anything loads)."""
    try:
        return check_embedder_name(value, field="")
    except MemoryLabError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _loading_note(embedder: str) -> None:
    """Say on stderr that a model loads (it takes seconds); the lexical scorer has none."""
    if embedder != "lexical":
        print(f"loading the {embedder} model (once per process)...", file=sys.stderr)


def _loaded_manager(args: argparse.Namespace, config: MemoryConfig, location=None, *, write_path: str = "raw",
                    judge: str = DEFAULT_JUDGE):
    """A MemoryManager with the scenario of ``args`` written into it (progress on stderr): as-is (``raw``), or through
    the ``facts`` write path with ``judge``, as an operating point's manager writes (OperatingPoint.open)."""
    from memory.embed.embedders import make_embedder
    from memory.runtime.manager import MemoryManager
    from memory.core.scenario import load_scenario, replay
    from memory.core.schema import validate_identifier
    from memory.write.ingest import Ingestor

    args.tenant = validate_identifier(args.tenant, "--tenant")
    args.user = validate_identifier(args.user, "--user")
    scenario = load_scenario(_scenario_file(args.scenario))
    if (args.tenant, args.user) not in scenario.owners():
        known = ", ".join(f"{t}/{u}" for t, u in scenario.owners())
        raise CliError(f"error: {shown(args.scenario)} has no messages of tenant {args.tenant!r} user {args.user!r} "
                       f"(known: {known[:300]})")
    _loading_note(args.embedder)
    manager = MemoryManager(config, embedder=make_embedder(args.embedder), location=location, workspace="cli")
    with progress_bar(f"ingesting ({write_path})") as bar:
        if write_path == "facts":
            Ingestor(manager, judge=make_judge(judge)).ingest_many(scenario.messages, progress=bar)
        else:
            replay(manager, scenario, progress=bar)
    return manager, scenario


def _settings(path: str | None):
    """The operating point of ``--settings`` (a one-line error naming the file and field), or None. Read before any
    model or adapter loads: a file over 64 KB, a device or FIFO, or text past the settings limits (nesting, dotted
    keys, number length; memory.core.datafile_limits) is refused in well under a second."""
    if path is None:
        return None
    from memory.eval.operating_point import load_operating_point

    return load_operating_point(path)


@command("recall")
def _recall(args: argparse.Namespace) -> int:
    """The scenario written as the settings say (model, write path, judge, config: every field of the file, each
    option overriding its own), then the lab's recall: every memory of the user is a candidate, ranked by the config
    (memory.runtime.recall.govern), so the governed list is the one the lab shows for the same settings and query."""
    from memory.core.schema import parse_time, validate_text
    from memory.runtime.recall import govern

    point = _settings(args.settings)
    args.embedder = args.embedder or (point.embedder if point else "minilm")
    config = config_from_args(args, point.config if point else None)
    write_path = args.write_path or (point.write_path if point else DEFAULT_WRITE_PATH)
    judge = args.judge or (point.judge if point else DEFAULT_JUDGE)
    validate_text(args.query, "--query", max_chars=config.max_message_chars)
    as_of = None if args.as_of is None else parse_time(args.as_of, "--as-of")
    manager, scenario = _loaded_manager(args, config, write_path=write_path, judge=judge)
    owner = {"tenant_id": args.tenant, "user_id": args.user}
    cands = manager.candidates(args.query, **owner, as_of=scenario.last_time if as_of is None else as_of,
                               pool=max(manager.count(**owner), 1))
    data = govern(cands, config, token_counter=manager.token_counter).to_dict()
    out = {"query": data["query"], "tenant_id": args.tenant, "user_id": args.user, "embedder": args.embedder,
           "write_path": write_path, "judge": judge if write_path == "facts" else None, "config": config.to_dict(),
           "blind": data["blind"], "governed": data["governed"], "dropped": data["dropped"]}
    emit(out, as_json=args.json, text=_recall_text)
    return 0


def _recall_text(out: dict[str, Any]) -> str:
    lines = [f"query: {out['query']}  ({out['tenant_id']}/{out['user_id']})", "", "blind top-k:"]
    lines += [f"  {h['similarity']:.3f}  {h['id']:>6}  {h['content']}" for h in out["blind"]]
    lines += ["", "governed (similarity, score):"]
    lines += [f"  {h['similarity']:.3f} {h['score']:.3f}  {h['id']:>6}  {h['content']}" for h in out["governed"]]
    lines += ["", "dropped:"]
    lines += [f"  {d['stage']:>10}  {d['id']:>6}  {d['reason']}" for d in out["dropped"]]
    return "\n".join(lines)


@command("erase-audit")
def _erase_audit(args: argparse.Namespace) -> int:
    from memory.core.safefile import check_folder
    from memory.store.chroma import StoreLocation

    data_dir = check_folder(args.data_dir, what="--data-dir") if args.data_dir else None
    location = StoreLocation(data_dir=data_dir) if data_dir else StoreLocation()
    manager, _ = _loaded_manager(args, MemoryConfig(), location)
    report = manager.erase_user(tenant_id=args.tenant, user_id=args.user, actor="cli", disk_scan=data_dir is not None)
    emit(report.to_dict(), as_json=args.json, text=_erase_text)
    return 0 if report.ok else 1


def _erase_text(r: dict[str, Any]) -> str:
    lines = [f"erased {r['tenant_id']}/{r['user_id']}: removed {r['removed']}"]
    lines += [f"  {'OK ' if p['remaining'] == 0 else 'LEFT'} {p['name']:<18} remaining={p['remaining']}  {p['detail']}"
              for p in r["paths"]]
    lines.append(f"  other users' rows touched: {r['others_touched']}")
    lines.append("verified: nothing remains" if r["ok"] else "NOT VERIFIED: something remains")
    return "\n".join(lines)


@command("forget")
def _forget(args: argparse.Namespace) -> int:
    from memory.core.safefile import check_folder
    from memory.embed.embedders import make_embedder
    from memory.runtime.lifecycle import DEFAULT_DAYS, DEFAULT_FLOOR, forget
    from memory.runtime.manager import MemoryManager
    from memory.store.chroma import StoreLocation, workspace_key

    folder = check_folder(args.data_dir, what="--data-dir")
    embedder = make_embedder(args.embedder)
    if not (folder / "text" / f"{workspace_key(args.workspace, embedder.name)}.sqlite3").is_file():
        raise CliError(f"error: --data-dir {folder} holds no workspace {args.workspace!r} written with "
                       f"{embedder.name} (nothing was changed)")
    manager = MemoryManager(MemoryConfig(), embedder=embedder, location=StoreLocation(data_dir=folder),
                            workspace=args.workspace)
    report = forget(manager, tenant_id=args.tenant, user_id=args.user, as_of=args.as_of,
                    floor=DEFAULT_FLOOR if args.floor is None else args.floor,
                    days=DEFAULT_DAYS if args.days is None else args.days, decay_rate=args.decay_rate)
    emit(report.to_dict(), as_json=args.json, text=lambda r: (
        f"{r['tenant_id']}/{r['user_id']} at {r['as_of']}: {len(r['archived'])} of {r['checked']} facts archived "
        f"(heat under {r['floor']:g} for {r['days']:g} days)" + "".join(f"\n  {m}" for m in r["archived"])))
    return 0


@command("migrate")
def _migrate(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from tqdm import tqdm

    from memory.store.migrate import migrate_folder
    from memory.core.safefile import check_folder

    folder = check_folder(args.data_dir, what="--data-dir")
    with tqdm(desc="migrating workspaces", unit="workspace", file=sys.stderr, leave=False) as bar:
        def step(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        done = migrate_folder(folder, progress=step)
    emit([asdict(m) for m in done], as_json=args.json, text=lambda rows: "\n".join(
        [f"{m['old_collection']} -> workspace {m['workspace']!r} ({m['embedder']}): "
         + (f"left as it was: {m['skipped']}" if m["skipped"] else f"{m['records']} records, rows {m['rows']}")
         for m in rows] or ["nothing to migrate: no layout-1 workspace in this folder"]))
    return 0


@command("reliability")
def _reliability(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from memory.embed.embedders import make_embedder
    from memory.reliability.runner import STEPS, checks_named, run_report

    if not 1 <= args.scale <= MAX_SCALE:
        raise CliError(f"error: --scale must be a whole number in [1, {MAX_SCALE}], got {_brief_int(args.scale)}")
    try:
        skipped = checks_named(args.skip)
    except MemoryLabError as exc:
        raise CliError(f"error: --skip: {exc}") from None
    only = tuple(name for name in STEPS if name not in skipped)
    embedder = make_embedder(args.embedder)
    with tqdm(total=len(only), desc="reliability", unit="check", file=sys.stderr, leave=False) as bar:
        started = False

        def step(name: str) -> None:  # called before each check
            nonlocal started
            if started:
                bar.update(1)
            started = True
            bar.set_postfix_str(name)

        report = run_report(embedder, scale=args.scale, progress=step, only=only)
        bar.update(bar.total - bar.n)
    emit(report.to_dict(), as_json=args.json, text=lambda _: report.text())
    return 0 if report.ok else 1


@command("synth")
def _synth(args: argparse.Namespace) -> int:
    from memory.core.scenario import parse_scenario
    from memory.eval.synth import SynthSpec, generate_scenario

    data = generate_scenario(SynthSpec(users=args.users, tenants=args.tenants, messages=args.messages, seed=args.seed))
    text = json.dumps(data, ensure_ascii=False, indent=1)
    scenario = parse_scenario(text, source=args.out)  # what we write always loads
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"wrote {args.out}: {len(scenario.messages)} messages, {len(scenario.owners())} users, "
          f"{len(scenario.queries)} queries", file=sys.stderr)
    return 0


@command("study")
def _study(args: argparse.Namespace) -> int:
    from memory.eval.study import check_out_path, format_study, run_study, validate_options

    validate_options(thresholds=args.threshold, top_ks=args.top_k, decay_rates=args.decay_rate, rule=args.rule,
                     token_budget=args.token_budget)
    if args.out:
        check_out_path(args.out)
    if args.export_point and Path(args.export_point).suffix.lower() not in (".json", ".toml"):
        raise CliError(f"error: --export-point must end in .json or .toml, got {Path(args.export_point).name!r}")
    if args.export_point and args.mode != "dense":
        raise CliError("error: --export-point needs --mode dense (only a model's similarity has a threshold to carry)")
    dataset, name, digest = args.dataset, None, None
    if args.export_point:  # the file names the bytes studied: read once, hashed, parsed from the same bytes
        from memory.eval.operating_point import load_studied

        dataset, name, digest = load_studied(args.dataset, unit=args.unit)
    if args.mode != "lexical":
        _loading_note(args.embedder)
    with progress_bar("study") as bar:
        result = run_study(
            dataset, mode=args.mode, embedder=args.embedder, thresholds=args.threshold, top_ks=args.top_k,
            decay_rates=args.decay_rate, unit=args.unit, rule=args.rule, token_budget=args.token_budget, progress=bar,
        )
    if args.out:  # the JSON, or the sweep table as CSV with no cell a spreadsheet would run (memory.core.exports)
        print(f"written: {result.write(args.out)}", file=sys.stderr)
    if args.export_point:
        from memory.eval.operating_point import operating_point_from_study

        point = operating_point_from_study(result, write_path=args.write_path, judge=args.judge, dataset=name,
                                           sha256=digest)
        print(f"operating point written: {point.save(args.export_point)}", file=sys.stderr)
    emit(result.to_dict(), as_json=args.json, text=lambda _: format_study(result))
    return 0


@command("compare")
def _compare(args: argparse.Namespace) -> int:
    from memory.eval.calibration import compare, format_comparison, parse_runs
    from memory.eval.datasets import load_dataset

    if args.write_scales:
        return _write_scales()
    if not args.dataset:
        raise CliError("error: compare needs --dataset (or --write-scales)")
    runs = parse_runs(args.runs)
    for name in dict.fromkeys(e for _, e in runs if e):
        check_embedder_name(name, "--runs")
    data = load_dataset(args.dataset, unit=args.unit)
    for name in dict.fromkeys(e for _, e in runs if e):
        _loading_note(name)
    with progress_bar("compare") as bar:
        result = compare(data, runs=runs, progress=bar)
    payload = {"dataset": data.source, "unit": args.unit, "runs": [c.to_dict() for c in result]}
    emit(payload, as_json=args.json, text=lambda _: format_comparison(result, source=data.source))
    return 0


def _write_scales() -> int:
    from memory.eval.calibration import SCALES_PATH, reference_scales

    with progress_bar("score scales") as bar:
        data = reference_scales(EMBEDDER_NAMES, progress=bar)
    SCALES_PATH.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"written: {SCALES_PATH}", file=sys.stderr)
    return 0


@command("dedup")
def _dedup(args: argparse.Namespace) -> int:
    from memory.eval.pairs import evaluate_pairs, load_pairs
    from memory.embed.embedders import make_embedder

    from memory.eval.calibration import config_for
    from memory.write.lang import is_chinese

    pairs = load_pairs(args.pairs)
    _loading_note(args.embedder)
    # the bands on this model's scale for this language, as the write path carries them (MemoryConfig's are MiniLM's)
    chinese = sum(is_chinese(p.existing + p.incoming) for p in pairs)
    config = config_for(args.embedder, language="zh" if 2 * chinese > len(pairs) else "en")
    report = evaluate_pairs(pairs, embedder=make_embedder(args.embedder), source=args.pairs, config=config,
                            judge=make_judge(args.judge))
    emit(report.to_dict(), as_json=args.json, text=lambda _: _dedup_text(report))
    return 0


def _dedup_text(report) -> str:
    from memory.eval.pairs import ERROR_KINDS

    lines = [f"{'id':>6}  {'similarity':>10}  {'plain_rule':<10} {'decision':<10} {'expected':<10} reason"]
    for r in report.results:
        mark = "" if r.expected is None else ("  " if r.decision == r.expected else "x ")
        lines.append(f"{r.id:>6}  {r.similarity:>10.3f}  {r.plain_rule:<10} {r.decision:<10} {r.expected or '-':<10} "
                     f"{mark}{r.reason}")
    if report.labelled:
        n = len(report.labelled)
        for rule in ("plain", "governed"):
            acc = report.accuracy(rule)
            errors = ", ".join(f"{k}={v}" for k, v in report.errors(rule).items())
            lines.append(f"accuracy {rule + ':':<9} {acc:.3f} ({round(acc * n)}/{n})   errors: {errors}")
        lines.append("error kinds: " + "; ".join(f"{k}: {v}" for k, v in ERROR_KINDS.items()))
    return "\n".join(lines)


@command("mcp")
def _mcp(args: argparse.Namespace) -> int:
    from memory.core.schema import validate_identifier

    tenant, user = validate_identifier(args.tenant, "--tenant"), validate_identifier(args.user, "--user")
    if args.port is not None and not args.http:
        raise CliError("error: --port needs --http (stdio has no port)")
    if args.port is not None and not 1 <= args.port <= 65535:
        raise CliError(f"error: --port must be in [1, 65535], got {_brief_int(args.port)}")
    point = _settings(args.settings)  # a bad file is refused before the adapters import and the model loads
    if getattr(args, "from_process", False):  # what an erasure frees is overwritten, not kept in the server's memory
        from memory.store.heap import restart_scrubbing

        restart_scrubbing(["-m", "memory", *sys.argv[1:]])  # returns where it cannot (or did already)
    try:
        from memory.adapters import mcp_server
    except ModuleNotFoundError as exc:  # an optional extra
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "uvicorn", "starlette"):
            raise
        raise CliError("error: install the adapters: pip install -r requirements-adapters.txt") from None
    config = mcp_server.server_config(tenant=tenant, user=user, settings=point, data_dir=args.data_dir)
    if args.show_blind:  # a teaching flag: the blind top-k beside the governed memories, marked not admitted
        from dataclasses import replace

        config = replace(config, show_blind=True)
    mcp_server.serve(config, http=args.http, port=mcp_server.DEFAULT_PORT if args.port is None else args.port)
    return 0


def one_line(text: str, *, limit: int = 2000) -> str:
    """``text`` as one printable line: every character that would start a new line is escaped; long texts cut."""
    flat = text.translate(_ESCAPES)
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


_ESCAPES = {ord(c): ascii(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}


def _brief_int(value: int) -> str:
    return f"a number of {len(str(value))} digits" if abs(value) > 10**12 else str(value)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        args.from_process = argv is None  # this process's own command line (`python -m memory ...`), not a caller's
        return COMMANDS[args.command](args)
    except CliError as exc:
        print(one_line(str(exc)), file=sys.stderr)
    except (MemoryLabError, ConfigError, KeyError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(one_line(f"error: {message}"), file=sys.stderr)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return 2
