"""A Hugging Face Trainer job with a module that is never called; run under torchrun:

    python -m torch.distributed.run --nproc_per_node=2 hf_trainer_job.py --find-unused true --out DIR

--find-unused true / false is `TrainingArguments(ddp_find_unused_parameters=...)`, `default`
leaves it unset. CPU, gloo. Each rank saves its parameters after training to DIR/rank<r>.pt.
"""

from __future__ import annotations

import argparse
import os

import torch.nn.functional as F
from common import LR, PER_DEVICE, STEPS, data, end_process_group, model, save
from torch import nn
from transformers import Trainer, TrainingArguments


class WithLoss(nn.Module):
    """The Trainer calls forward(**batch) and reads the loss from the output."""

    def __init__(self):
        super().__init__()
        self.net = model()

    def forward(self, x, labels):
        return {"loss": F.mse_loss(self.net(x), labels)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--find-unused", choices=["true", "false", "default"], required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    flag = {"true": True, "false": False, "default": None}[args.find_unused]
    x, y = data()
    samples = [{"x": x[i], "labels": y[i]} for i in range(len(x))]
    training_args = TrainingArguments(
        output_dir=args.out,
        ddp_find_unused_parameters=flag,
        ddp_backend="gloo",
        use_cpu=True,
        per_device_train_batch_size=PER_DEVICE,
        max_steps=STEPS,
        learning_rate=LR,
        optim="sgd",
        lr_scheduler_type="constant",
        weight_decay=0.0,
        max_grad_norm=0.0,  # no clipping: plain SGD, as the reference
        report_to="none",
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    wrapped = WithLoss()
    Trainer(model=wrapped, args=training_args, train_dataset=samples).train()
    save(wrapped.net, args.out, int(os.environ.get("RANK", "0")))
    end_process_group()


if __name__ == "__main__":
    main()
