"""A Lightning 2.x job with two losses per step, the seed article's case (issue 22, item 20):
loss1 from an intermediate feature map through its own head, loss2 from the final output.

    python lightning_two_losses_job.py --mode sum|manual_sum|two_backward --out DIR

`sum` and `manual_sum` are the spellings rules/fixes.yaml gives Lightning users for
`sum_losses_single_backward` (the sum returned from `training_step`; one
`self.manual_backward` under manual optimisation); `two_backward` is the mistake, one
`manual_backward` per loss. Each rank saves its parameters after the last step.
"""

from __future__ import annotations

import argparse

import lightning as L
import torch
import torch.nn.functional as F
from common import (
    LR,
    PER_DEVICE,
    STEPS,
    data,
    end_process_group,
    save,
    sc,  # tests/ddp/scenarios.py, on the path common.py sets
)
from torch.utils.data import DataLoader, TensorDataset


def two_task_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return sc.FeatureHeadThenOutput(frozenset())


def losses(net, x, y):
    feat, out = net(x)
    return F.softplus(-feat).mean(), F.mse_loss(out, y)


def reference() -> dict[str, torch.Tensor]:
    """One process, the whole data set per step, one backward over the summed losses."""
    net = two_task_model()
    optimizer = torch.optim.SGD(net.parameters(), lr=LR)
    x, y = data()
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss1, loss2 = losses(net, x, y)
        (loss1 + loss2).backward()
        optimizer.step()
    return {name: p.detach().clone() for name, p in net.named_parameters()}


class Module(L.LightningModule):
    def __init__(self, mode: str, out_dir: str):
        super().__init__()
        self.net = two_task_model()
        self.mode, self.out_dir = mode, out_dir
        self.automatic_optimization = mode == "sum"

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        inputs, targets = batch
        loss1, loss2 = losses(self, inputs, targets)
        if self.mode == "sum":
            return loss1 + loss2  # Lightning calls backward() once, on the sum
        opt = self.optimizers()
        opt.zero_grad()
        if self.mode == "manual_sum":
            self.manual_backward(loss1 + loss2)
        else:  # two_backward: one backward per loss, as in plain PyTorch's mistake
            self.manual_backward(loss1, retain_graph=True)
            self.manual_backward(loss2)
        opt.step()
        return None

    def configure_optimizers(self):
        return torch.optim.SGD(self.net.parameters(), lr=LR)

    def on_train_end(self):
        save(self.net, self.out_dir, self.global_rank)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", required=True, choices=["sum", "manual_sum", "two_backward"])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    x, y = data()
    loader = DataLoader(TensorDataset(x, y), batch_size=PER_DEVICE, shuffle=False)
    trainer = L.Trainer(
        accelerator="cpu",
        devices=2,
        strategy="ddp",
        max_steps=STEPS,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Module(args.mode, args.out), loader)
    end_process_group()


if __name__ == "__main__":
    main()
