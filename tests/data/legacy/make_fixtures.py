"""Write the legacy Auto Tune fixtures beside this file: `python tests/data/legacy/make_fixtures.py`.

Shaped after AOE.md §5: one object keyed by operator name, about 600 entries of which a quarter
were added to the bank, some holding only status_data, fused groups keyed by a stringified list. The numbers
are made up (seeded), the shapes are not.

- tune_result_20210714_102345123_pid24513.json: a complete BERT training run, 600 entries, 150 added.
- tune_result_20210715_081502007_pid31877.json: the next night's run, cut off in the middle of an entry.
- tune_result_20210716_143000450_pid8802.json: a ResNet-50 run with fused groups and status-only entries.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
FLAGS = ("bank_append", "bank_hit", "bank_reserved", "bank_update")
OUTCOMES = {
    "added": (True, False, False, False),
    "updated": (False, True, False, True),
    "reserved": (False, True, True, False),
    "unsatisfied": (False, False, False, False),
}


def bert_ops() -> list[str]:
    ops = []
    for layer in range(12):
        scope = f"bert/encoder/layer_{layer}"
        ops += [
            f"{scope}/attention/self/MatMul", f"{scope}/attention/self/MatMul_1", f"{scope}/attention/self/Softmax",
            f"{scope}/attention/self/Mul", f"{scope}/attention/self/add", f"{scope}/attention/self/query/MatMul",
            f"{scope}/attention/self/key/MatMul", f"{scope}/attention/self/value/MatMul",
            f"{scope}/attention/output/dense/MatMul", f"{scope}/attention/output/LayerNorm/batchnorm/add_1",
            f"{scope}/intermediate/dense/MatMul", f"{scope}/intermediate/dense/Gelu/mul_1",
            f"{scope}/output/dense/MatMul", f"{scope}/output/LayerNorm/batchnorm/add_1",
        ]  # fmt: skip
        grads = f"gradients/{scope}"
        ops += [
            f"{grads}/attention/self/MatMul_grad/MatMul", f"{grads}/attention/self/MatMul_grad/MatMul_1",
            f"{grads}/attention/self/Softmax_grad/mul", f"{grads}/attention/self/Softmax_grad/Sum",
            f"{grads}/attention/self/query/MatMul_grad/MatMul_1", f"{grads}/attention/output/dense/MatMul_grad/MatMul",
            f"{grads}/intermediate/dense/MatMul_grad/MatMul", f"{grads}/intermediate/dense/MatMul_grad/MatMul_1",
            f"{grads}/intermediate/dense/Gelu/mul_1_grad/Mul", f"{grads}/output/dense/MatMul_grad/MatMul_1",
            f"{grads}/output/LayerNorm/batchnorm/mul_grad/Mul_1",
        ]  # fmt: skip
    ops += [f"Adam/mul_{index}" for index in range(1, 301)]
    ops += ["bert/embeddings/LayerNorm/batchnorm/add_1", "bert/embeddings/MatMul", "bert/pooler/dense/MatMul"]
    return ops


def entry(rng: random.Random, outcome: str, start: datetime, status_only: bool = False) -> dict[str, object]:
    value: dict[str, object] = {}
    if not status_only:
        before = rng.randint(900, 240_000)
        if outcome in ("added", "updated"):
            after = max(int(before / rng.uniform(1.0, 2.6)), 1)
        elif outcome == "reserved":
            after = before - rng.randint(0, before // 200)
        else:
            after = before + rng.randint(0, before // 50)
        ticks, best, moment = [], before, start + timedelta(seconds=rng.randint(0, 7200))
        for _ in range(rng.randint(1, 3)):
            best = max(after, int(best - (best - after) * rng.uniform(0.4, 1.0)))
            moment += timedelta(seconds=rng.randint(20, 400))
            ticks.append(f"[{best}, {moment:%Y-%m-%d %H:%M:%S}]")
        ticks[-1] = f"[{after}, {moment:%Y-%m-%d %H:%M:%S}]"
        value["result_data"] = {"after_tune": after, "before_tune": before}
    value["status_data"] = dict(zip(FLAGS, OUTCOMES[outcome], strict=True))
    if not status_only:
        value["ticks_best"] = ticks
    return value


def complete_run() -> dict[str, object]:
    rng = random.Random(24513)
    ops = bert_ops()[:600]
    outcomes = ["added"] * 150 + ["updated"] * 30 + ["reserved"] * 170 + ["unsatisfied"] * 250
    rng.shuffle(outcomes)
    start = datetime(2021, 7, 14, 10, 23, 45)
    return {
        f"[{op}]": entry(rng, outcome, start, status_only=outcome == "reserved" and rng.random() < 0.3)
        for op, outcome in zip(ops, outcomes, strict=True)
    }


def next_night_cut_off(first_night: dict[str, object]) -> str:
    """The second run over part of the graph, into the same bank; the file ends inside an entry, as when the tool was killed.

    What the first night put in the bank is found again (hit): kept, or updated with a faster strategy.
    """
    rng = random.Random(31877)
    start = datetime(2021, 7, 15, 8, 15, 2)
    entries: dict[str, object] = {}
    for op in bert_ops()[200:290]:
        key = f"[{op}]"
        earlier = first_night[key]
        assert isinstance(earlier, dict)
        if earlier["status_data"]["bank_append"] or earlier["status_data"]["bank_update"]:
            value = entry(rng, "reserved", start, status_only=rng.random() < 0.5)
            if rng.random() < 0.3:
                value = entry(rng, "updated", start)
                before = earlier["result_data"]["after_tune"]
                value["result_data"] = {"after_tune": int(before * rng.uniform(0.8, 0.97)), "before_tune": before}
        else:
            value = entry(rng, rng.choices(["added", "reserved", "unsatisfied"], weights=[20, 30, 50])[0], start)
        entries[key] = value
    text = json.dumps(entries, indent=4)
    return text[: int(len(text) * 0.7)]


def resnet_with_fused_groups() -> dict[str, object]:
    rng = random.Random(8802)
    start = datetime(2021, 7, 16, 14, 30, 0)
    entries: dict[str, object] = {}
    for block in range(1, 17):
        conv = f"resnet_model/conv2d_{block}/Conv2D"
        norm = f"resnet_model/batch_normalization_{block}/FusedBatchNormV3"
        relu = f"resnet_model/Relu_{block}"
        outcome = rng.choice(["added", "added", "updated", "unsatisfied"])
        entries[f"[{[conv, norm, relu]!r}]"] = entry(rng, outcome, start)
        entries[f"[{[f'gradients/{relu}_grad/ReluGrad', f'gradients/{norm}_grad/FusedBatchNormGradV3']!r}]"] = entry(
            rng, rng.choice(["added", "reserved", "unsatisfied"]), start
        )
        entries[f"[resnet_model/add_{block}]"] = entry(rng, "reserved", start, status_only=True)
    entries["[resnet_model/dense/MatMul]"] = entry(rng, "updated", start)
    entries["[gradients/resnet_model/dense/MatMul_grad/MatMul]"] = entry(rng, "unsatisfied", start, status_only=True)
    entries["[Momentum/update_resnet_model/dense/kernel/ApplyMomentum]"] = entry(rng, "reserved", start, status_only=True)
    return entries


def main() -> None:
    first_night = complete_run()
    (HERE / "tune_result_20210714_102345123_pid24513.json").write_text(json.dumps(first_night, indent=4) + "\n")
    (HERE / "tune_result_20210715_081502007_pid31877.json").write_text(next_night_cut_off(first_night))
    (HERE / "tune_result_20210716_143000450_pid8802.json").write_text(json.dumps(resnet_with_fused_groups()) + "\n")


if __name__ == "__main__":
    main()
