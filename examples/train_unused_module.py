import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 2)
        self.aux_head = torch.nn.Linear(8, 2)  # defined, never used in the loss

    def forward(self, x):
        feat = self.backbone(x)
        return self.head(feat)


def main():
    dist.init_process_group("gloo")
    model = DDP(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


def probe_target():
    """For `ddp-doctor probe examples/train_unused_module.py:probe_target`: the model and one
    step, run on one process without DDP. step(model) returns the loss; it does not call
    backward() (the probe does, and records which parameters get a gradient)."""

    def step(model):
        return model(torch.randn(4, 8)).pow(2).mean()

    return Net(), step


if __name__ == "__main__":
    main()
