"""`cowork-curate generate`: write batch folders of raw trajectories plus ground truth.

Output layout (files at the root are not batches, so the pipeline ignores them):
  DIR/<batch>/part-000.jsonl, DIR/<batch>/part-001.jsonl.gz   raw trajectories (+ injected bad lines)
  DIR/labels.jsonl        one line per injection (what, where, expected finding)
  DIR/needed_values.jsonl one line per value a grader needs, with where it first appears
  DIR/manifest.json       expected counts per batch and file

Deterministic: the same arguments give the same bytes (gzip headers carry no timestamp).
"""

from __future__ import annotations

import gzip
import io
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson

from cowork_assets.store.raw_files import batch_name_problem
from cowork_assets.synthetic import services as S
from cowork_assets.synthetic import vocab as V
from cowork_assets.synthetic.runs import Task, build_task, grade, locate, render
from cowork_assets.synthetic.scenarios import Step


@dataclass
class Rates:
    """Injection rates. Task-level rates apply per task, the others per emitted trajectory."""

    unexposed_endpoint: float = 0.04  # task calls/checks a tool the interface does not expose
    count_mismatch: float = 0.3  # of todo tasks: grader expects a different count than the request
    duplicate_creations: float = 0.25  # of passing todo runs: a repeated creation inflates the count
    exact_duplicate: float = 0.02
    near_duplicate: float = 0.02
    over_budget: float = 0.015  # tasks whose runs stay over the character budget
    student_groups: float = 0.3  # tasks that also get a group of student rollouts
    teacher_pass: float = 0.75
    bad_json: float = 0.01
    invalid_utf8: float = 0.008
    missing_field: float = 0.008
    wrong_type: float = 0.008
    truncated_gzip: float = 0.5  # per gzip file: its last member is cut short

    @classmethod
    def names(cls) -> list[str]:
        return list(cls.__dataclass_fields__)


@dataclass
class _File:
    path: Path
    lines: int = 0
    parsed: int = 0
    quarantined: Counter = field(default_factory=Counter)
    buffer: io.BytesIO = field(default_factory=io.BytesIO)


BATCH_PREFIX = "2026-11-29-teacher-"


class _Batches:
    def __init__(self, out: Path, n: int, prefix: str):
        self.names = [f"{prefix}{_letters(i)}" for i in range(n)]
        self.files: dict[str, list[_File]] = {}
        for name in self.names:
            (out / name).mkdir(parents=True)
            self.files[name] = [_File(out / name / "part-000.jsonl"), _File(out / name / "part-001.jsonl.gz")]

    def write(self, rng: random.Random, line: bytes, reason: str | None) -> tuple[str, str, int]:
        batch = rng.choice(self.names)
        f = self.files[batch][rng.random() < 0.5]
        f.buffer.write(line + b"\n")
        f.lines += 1
        if reason:
            f.quarantined[reason] += 1
        else:
            f.parsed += 1
        if f.buffer.tell() > 8 << 20:
            self._spill(f)
        return batch, f.path.name, f.lines

    def _spill(self, f: _File) -> None:
        data = f.buffer.getvalue()
        f.buffer = io.BytesIO()
        with open(f.path, "ab") as fh:
            if data:
                fh.write(gzip.compress(data, mtime=0) if f.path.name.endswith(".gz") else data)

    def close(self) -> None:
        for files in self.files.values():
            for f in files:
                self._spill(f)


def _letters(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(97 + r) + s
    return s


def _line(traj: dict) -> bytes:
    return orjson.dumps(traj)


def _corrupt(rng: random.Random, traj: dict, reason: str) -> tuple[bytes, str]:
    """A malformed line derived from a real trajectory, and a short description of the damage."""
    bad = dict(traj, trajectory_id=traj["trajectory_id"] + "-bad")
    if reason == "bad_json":
        line = _line(bad)
        return line[: rng.randint(len(line) // 4, len(line) // 2)], "line cut mid-object"
    if reason == "invalid_utf8":
        line = _line(bad)
        at = line.index(b'"content":') + 11
        return line[:at] + b"\xff\xfe" + line[at:], "bytes 0xff 0xfe inside a message"
    if reason == "missing_field":
        key = rng.choice(["messages", "task", "teacher", "trajectory_id"])
        bad.pop(key)
        return _line(bad), key
    key = rng.choice(["trajectory_id", "messages", "teacher"])
    bad[key] = {"trajectory_id": 40213, "messages": "see attachment", "teacher": ["model-x"]}[key]
    return _line(bad), key


MALFORMED = ("bad_json", "invalid_utf8", "missing_field", "wrong_type")


def generate(
    out: Path,
    trajectories: int,
    batches: int,
    seed: int,
    rates: Rates | None = None,
    progress: Callable[[int], None] | None = None,
    prefix: str = BATCH_PREFIX,
) -> dict:
    """Write `trajectories` valid trajectories (plus injected bad lines) into `batches` batch folders, named
    `<prefix>a`, `<prefix>b`, ..."""
    rates = rates or Rates()
    if trajectories < 1 or batches < 1:
        raise ValueError("need at least one trajectory and one batch")
    if problem := batch_name_problem(f"{prefix}{_letters(batches - 1)}"):
        raise ValueError(f"--prefix {prefix!r} makes batch names that cannot be batches: {problem}")
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty; choose a new folder")
    out.mkdir(parents=True, exist_ok=True)
    files = _Batches(out, batches, prefix)
    master = random.Random(seed)
    labels: list[dict] = []
    needed = open(out / "needed_values.jsonl", "wb")
    emitted = 0
    roles: Counter = Counter()
    t = 0

    def emit(traj: dict, task: Task, values: list[str]) -> dict:
        nonlocal emitted
        batch, name, record = files.write(master, _line(traj), None)
        emitted += 1
        roles[traj["teacher"]["role"]] += 1
        if progress and emitted % 1000 == 0:
            progress(emitted)
        for value in dict.fromkeys(values):
            where = locate(traj["messages"], value)
            if where:
                needed.write(
                    orjson.dumps(
                        {"trajectory_id": traj["trajectory_id"], "task_id": task.task_id, "value": value, **where}
                    )
                    + b"\n"
                )
        for reason in MALFORMED:
            if master.random() < getattr(rates, reason):
                line, what = _corrupt(master, traj, reason)
                b, f, r = files.write(master, line, reason)
                labels.append(
                    {
                        "kind": "malformed",
                        "reason": reason,
                        "batch": b,
                        "raw_file": f"{b}/{f}",
                        "raw_record": r,
                        "detail": what,
                    }
                )
        return {"batch": batch, "raw_file": f"{batch}/{name}", "raw_record": record}

    while emitted < trajectories:
        rng = random.Random(seed * 1_000_003 + t)
        task_id = f"{rng.choice(['contacts', 'ops', 'admin', 'finance', 'assist'])}-{t:05d}"
        over = rng.random() < rates.over_budget
        task = build_task(rng, task_id, "bulk_review" if over else None)
        t += 1
        injected = _inject_task(rng, task, rates, labels)
        user = f"{rng.choice(V.FIRST)} {rng.choice(V.LAST)}"
        runs = [("teacher", f"run-{r}", None) for r in range(rng.randint(2, 4))]
        if rng.random() < rates.student_groups:
            runs += [("student", f"rollout-{r}", f"{task_id}/grp-0") for r in range(4)]
        for role, run_id, group in runs:
            if emitted >= trajectories:
                break
            p_pass = rates.teacher_pass if role == "teacher" else 0.5
            fail_parts = {i for i in range(len(task.parts)) if rng.random() > p_pass ** (1 / len(task.parts))}
            messages, outcome, values = render(rng, task, fail_parts, user)
            traj = {
                "schema": "cowork.trajectory/v1",
                "trajectory_id": f"{task_id}-{run_id}-{rng.randrange(16**6):06x}",
                "task": task.package,
                "teacher": {
                    "model": "teacher-large-2026-10" if role == "teacher" else "student-7b-sft",
                    "run_id": run_id,
                    "role": role,
                },
                "group_id": group or f"{task_id}/{run_id}",
                "messages": messages,
                "grade": grade(task, outcome),
            }
            dup = _maybe_duplicate_creation(rng, task, traj, rates, role, fail_parts)
            where = emit(traj, task, values)
            if dup:
                labels.append(
                    {
                        "kind": "duplicate_creations",
                        "task_id": task_id,
                        "trajectory_id": traj["trajectory_id"],
                        **where,
                        **dup,
                    }
                )
            if over:
                labels.append(
                    {
                        "kind": "over_budget",
                        "task_id": task_id,
                        "trajectory_id": traj["trajectory_id"],
                        "chars": sum(len(m["content"] or "") for m in messages),
                        **where,
                    }
                )
            for kind in injected:
                labels.append(
                    {
                        "kind": kind["kind"],
                        "task_id": task_id,
                        "trajectory_id": traj["trajectory_id"],
                        **where,
                        **{k: v for k, v in kind.items() if k != "kind"},
                    }
                )
            if role == "teacher" and not (dup or over or injected):
                for kind in ("exact_duplicate", "near_duplicate"):
                    if master.random() < getattr(rates, kind) and emitted < trajectories:  # clean originals only
                        copy = _copy(traj, kind)
                        w = emit(copy, task, values)
                        labels.append(
                            {
                                "kind": kind,
                                "task_id": task_id,
                                "trajectory_id": copy["trajectory_id"],
                                "duplicate_of": traj["trajectory_id"],
                                **w,
                            }
                        )
    needed.close()
    files.close()
    labels += _truncate_gzip_members(master, files, rates)
    manifest = _manifest(files, seed, trajectories, batches, rates, roles, t)
    with open(out / "labels.jsonl", "wb") as fh:
        for label in labels:
            fh.write(orjson.dumps(label) + b"\n")
    (out / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    return manifest


def _inject_task(rng: random.Random, task: Task, rates: Rates, labels: list[dict]) -> list[dict]:
    """Task-package inconsistencies; returned so each run of the task is labelled with them."""
    found = []
    exposed = {t["name"] for t in task.package["tools"]}
    candidates = [n for n in S.UNEXPOSED if n in exposed and any(s.tool == n for p in task.parts for s in p.steps)]
    if candidates and rng.random() < rates.unexposed_endpoint:
        real = rng.choice(candidates)
        fake, endpoint = S.UNEXPOSED[real]
        for part in task.parts:
            for steps in (part.steps, part.wrong_steps):
                for i, step in enumerate(steps):
                    if step.tool == real:
                        steps[i] = Step(fake, step.args, step.observation)
            if part.creation and part.creation[0] == real:
                part.creation = (fake, *part.creation[1:])
        for check in task.package["checks"]:
            if check.get("tool") == real:
                check["tool"] = fake
        found.append(
            {
                "kind": "unexposed_endpoint",
                "called": fake,
                "endpoint": endpoint,
                "exposed": real,
                "exposed_endpoint": next(t["endpoint"] for t in task.package["tools"] if t["name"] == real),
            }
        )
    for part in task.parts:
        if part.creation and rng.random() < rates.count_mismatch:
            check = next(c for c in part.checks if c["type"] == "distinct_items")
            asked = part.creation[2]
            check["expected"] = asked - 1 if asked > 2 else asked + 1
            found.append(
                {"kind": "count_mismatch", "check_id": check["id"], "requested": asked, "expected": check["expected"]}
            )
    return found


def _maybe_duplicate_creation(
    rng, task: Task, traj: dict, rates: Rates, role: str, fail_parts: set[int]
) -> dict | None:
    """A passing run that repeats one creation: a call-counting grader still passes it."""
    for i, part in enumerate(task.parts):
        if not part.creation or i in fail_parts or role != "teacher" or rng.random() >= rates.duplicate_creations:
            continue
        check = next(c for c in part.checks if c["type"] == "distinct_items")
        if check["expected"] != part.creation[2]:
            continue  # keep one defect per part so labels stay unambiguous
        tool, key, _ = part.creation
        calls = [
            (j, m)
            for j, m in enumerate(traj["messages"])
            if m["role"] == "assistant" and m.get("tool_calls") and m["tool_calls"][0]["function"]["name"] == tool
        ]
        (_, first), (j, last) = calls[0], calls[-1]
        args = first["tool_calls"][0]["function"]["arguments"]
        last["tool_calls"][0]["function"]["arguments"] = args
        title = (orjson.loads(args) if isinstance(args, str) else args)[key]
        created = {"id": f"t_{rng.randrange(100000, 999999)}", key: title, "status": "open"}
        traj["messages"][j + 1]["content"] = orjson.dumps(created).decode()
        return {"check_id": check["id"], "calls": len(calls), "distinct": len(calls) - 1, "repeated": title}
    return None


def _copy(traj: dict, kind: str) -> dict:
    copy = orjson.loads(orjson.dumps(traj))
    copy["trajectory_id"] = traj["trajectory_id"] + ("-x" if kind == "exact_duplicate" else "-n")
    if kind == "near_duplicate":
        copy["messages"][-1]["content"] += " Thanks again."
    return copy


def _truncate_gzip_members(rng: random.Random, files: _Batches, rates: Rates) -> list[dict]:
    """Append a last gzip member that is cut short: one record the reader must report as truncated."""
    labels = []
    for batch, parts in files.files.items():
        f = parts[1]
        if rng.random() >= rates.truncated_gzip:
            continue
        member = gzip.compress(
            b'{"schema": "cowork.trajectory/v1", "trajectory_id": "cut-'
            + batch.encode()
            + b'", "note": "'
            + b"x" * 400
            + b'"}\n',
            mtime=0,
        )
        with open(f.path, "ab") as fh:
            fh.write(member[: len(member) // 2])
        f.lines += 1
        f.quarantined["truncated_gzip"] += 1
        labels.append(
            {
                "kind": "malformed",
                "reason": "truncated_gzip",
                "batch": batch,
                "raw_file": f"{batch}/{f.path.name}",
                "raw_record": f.lines,
                "detail": "last gzip member cut in half",
            }
        )
    return labels


def _manifest(files: _Batches, seed, trajectories, batches, rates, roles, tasks) -> dict:
    per_batch = {}
    for batch, parts in files.files.items():
        per_file = {
            f.path.name: {"records": f.lines, "parsed": f.parsed, "quarantined": dict(sorted(f.quarantined.items()))}
            for f in parts
        }
        q = sum((Counter(v["quarantined"]) for v in per_file.values()), Counter())
        per_batch[batch] = {
            "records": sum(v["records"] for v in per_file.values()),
            "parsed": sum(v["parsed"] for v in per_file.values()),
            "quarantined": dict(sorted(q.items())),
            "files": per_file,
        }
    return {
        "seed": seed,
        "trajectories": trajectories,
        "batches": per_batch,
        "tasks": tasks,
        "roles": dict(sorted(roles.items())),
        "rates": asdict(rates),
    }
