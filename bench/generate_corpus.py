"""Write seeded synthetic corpora of AOE training result files, indented as AOE writes them.

Two shapes:
- `bank` (the default): 200 files x 3 reports x 2,000 operators (about 0.7 GB), indent 4. Operator names
  come from one model's pool, as when the same training script is tuned again and again.
- `random`: 80 files x 3 reports x 2,000 operators, indent 2, names drawn at random from 30,000 distinct
  entries (random path-like names, op types and modes), so each entry is tuned about 16 times across the
  corpus and the bank they imply is five times larger than the bank shape's.
"""

from __future__ import annotations

import argparse
import json
import random
import string
from pathlib import Path

OP_TYPES = ["MatMulV2", "BatchMatMulV2", "SoftmaxV2", "Conv2D", "LayerNorm", "Add", "Mul", "stridedsliced", "FastGelu"]
MODES = ["Format", "Schedule", "Impl"]
SHAPES = ("bank", "random")
_NAME_CHARACTERS = string.ascii_lowercase + string.digits + "_"


def operator(rng: random.Random, pool: int) -> dict:  # type: ignore[type-arg]
    index = rng.randrange(pool)
    op_type = OP_TYPES[index % len(OP_TYPES)]
    name = f"model/layer_{index % 48}/{op_type}_{index}"
    return _record(rng, name, [op_type, "Relu"] if index % 17 == 0 else op_type, MODES[index % 3])


def _record(rng: random.Random, name: str, op_type: str | list[str], mode: str) -> dict:  # type: ignore[type-arg]
    before = round(rng.uniform(2, 600), 3)
    after = round(before / rng.uniform(1.0, 2.4), 3)
    return {
        "op_name": name,
        "op_type": op_type,
        "tune_performance": {
            mode: {
                "performance_after_tune(us)": after,
                "performance_before_tune(us)": before,
                "performance_improvement": f"{(before / after - 1) * 100:.2f}%",
                "update_mode": rng.choice(["add", "update"]),
            }
        },
    }


def random_entries(rng: random.Random, count: int) -> list[tuple[str, str | list[str], str]]:
    """`count` distinct (name, op type, mode) entries with random path-like names of 2 to 5 parts."""
    entries: dict[str, tuple[str, str | list[str], str]] = {}
    while len(entries) < count:
        parts = ["".join(rng.choices(_NAME_CHARACTERS, k=rng.randint(3, 12))) for _ in range(rng.randint(2, 5))]
        op_type = rng.choice(OP_TYPES)
        name = "/".join(parts) + f"/{op_type}"
        fused: str | list[str] = [op_type, rng.choice(OP_TYPES)] if rng.random() < 0.06 else op_type
        entries[name] = (name, fused, rng.choice(MODES))
    return list(entries.values())


def write_corpus(
    directory: Path,
    files: int,
    reports: int,
    operators: int,
    pool: int,
    seed: int,
    shape: str = "bank",
    indent: int = 4,
) -> int:
    """Write the corpus; returns its size in bytes. `pool` is the number of distinct bank entries."""
    rng = random.Random(seed)
    entries = random_entries(rng, pool) if shape == "random" else None
    directory.mkdir(parents=True, exist_ok=True)
    total = 0
    for number in range(files):
        day = 1 + number % 28
        document = {}
        for report in range(reports):
            key = f"report_202603{day:02d}{10 + report:02d}{number % 60:02d}00{report:03d}_{40000 + number * 10 + report}"
            records = (
                [_record(rng, *rng.choice(entries)) for _ in range(operators)]
                if entries
                else [operator(rng, pool) for _ in range(operators)]
            )
            document[key] = [
                {"basic": {"tuning_name": f"合成模型_graph_{report}", "tuning_time(s)": rng.randint(10, 4000)}},
                {
                    "OPAT": {
                        "opat_tuning_result": "tuning successful",
                        "repo_modified_operators": records,
                        "repo_summary": {
                            "repo_add_num": operators,
                            "repo_hit_num": 10,
                            "repo_reserved_num": 10,
                            "repo_unsatisfied_num": 3,
                            "repo_update_num": 0,
                            "total_num": operators + 13,
                        },  # fmt: skip
                    }
                },
            ]
        path = directory / f"aoe_result_opat_202603{day:02d}120000{number % 1000:03d}_{30000 + number}.json"
        text = json.dumps(document, indent=indent, ensure_ascii=False)
        path.write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--shape", choices=SHAPES, default="bank")
    parser.add_argument("--files", type=int, help="default: 200 (bank), 80 (random)")
    parser.add_argument("--reports", type=int, default=3)
    parser.add_argument("--operators", type=int, default=2000)
    parser.add_argument("--pool", type=int, help="distinct bank entries; default: 6,000 (bank), 30,000 (random)")
    parser.add_argument("--indent", type=int, help="default: 4 (bank), 2 (random)")
    parser.add_argument("--seed", type=int, default=20261121)
    args = parser.parse_args()
    bank = args.shape == "bank"
    files = args.files or (200 if bank else 80)
    pool = args.pool or (6000 if bank else 30000)
    indent = args.indent if args.indent is not None else (4 if bank else 2)
    size = write_corpus(args.directory, files, args.reports, args.operators, pool, args.seed, args.shape, indent)
    print(f"wrote {files} files, {size / 1e6:.0f} MB, to {args.directory}")


if __name__ == "__main__":
    main()
