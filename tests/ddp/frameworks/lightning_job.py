"""A Lightning 2.x job on 2 CPU processes (gloo) with a module that is never called.

    python lightning_job.py --strategy ddp_find_unused_parameters_true --out DIR

--strategy is the exact spelling a user passes to `L.Trainer(strategy=...)`; `DDPStrategy`
builds `DDPStrategy(find_unused_parameters=True)` instead. Each rank saves its parameters
after the last step to DIR/rank<r>.pt.
"""

from __future__ import annotations

import argparse

import lightning as L
import torch
import torch.nn.functional as F
from common import LR, PER_DEVICE, STEPS, data, end_process_group, model, save
from lightning.pytorch.strategies import DDPStrategy
from torch.utils.data import DataLoader, TensorDataset


class Module(L.LightningModule):
    def __init__(self, out_dir: str):
        super().__init__()
        self.net = model()
        self.out_dir = out_dir

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.net.parameters(), lr=LR)

    def on_train_end(self):
        save(self.net, self.out_dir, self.global_rank)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--strategy", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    strategy = (
        DDPStrategy(find_unused_parameters=True)
        if args.strategy == "DDPStrategy"
        else args.strategy
    )
    x, y = data()
    loader = DataLoader(TensorDataset(x, y), batch_size=PER_DEVICE, shuffle=False)
    trainer = L.Trainer(
        accelerator="cpu",
        devices=2,
        strategy=strategy,
        max_steps=STEPS,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Module(args.out), loader)
    end_process_group()


if __name__ == "__main__":
    main()
