"""Small models and steps for tests/test_probe.py, one per way a step can miss parameters.

Each `make_*` factory returns `(model, step)`, the shape `ddp-doctor probe file.py:factory`
expects, so the CLI tests can import this file by path.
"""

from __future__ import annotations

import torch
from torch import nn

FEATURES = 4


def batch(rows: int = 3) -> torch.Tensor:
    # A fixed generator: the data must not consume the global RNG the probe restores.
    return torch.randn(rows, FEATURES, generator=torch.Generator().manual_seed(0))


class UnusedModule(nn.Module):
    """`unused` is defined, registered, and never called."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(FEATURES, FEATURES)
        self.head = nn.Linear(FEATURES, 2)
        self.unused = nn.Linear(FEATURES, 2)

    def forward(self, x):
        return self.head(torch.relu(self.encoder(x)))


class IgnoredOutput(nn.Module):
    """forward returns an auxiliary output that the loss never looks at."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(FEATURES, FEATURES)
        self.head = nn.Linear(FEATURES, 2)
        self.aux_head = nn.Linear(FEATURES, 3)

    def forward(self, x):
        features = torch.relu(self.encoder(x))
        return self.head(features), self.aux_head(features)


class MultiTask(nn.Module):
    """Two task heads returned in a dict; the buggy loss forgets task `depth`."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(FEATURES, 8), nn.ReLU())
        self.heads = nn.ModuleDict({"seg": nn.Linear(8, 2), "depth": nn.Linear(8, 1)})

    def forward(self, x):
        features = self.backbone(x)
        return {name: head(features) for name, head in self.heads.items()}


class TwoLosses(nn.Module):
    """The seed article's case: one loss from an intermediate feature, one from the output."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(FEATURES, 8)
        self.decoder = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, x):
        feature = torch.relu(self.stem(x))
        return feature, self.decoder(feature)


class Branchy(nn.Module):
    """`rare` runs only on odd-numbered calls: a step-dependent branch."""

    def __init__(self):
        super().__init__()
        self.common = nn.Linear(FEATURES, FEATURES)
        self.rare = nn.Linear(FEATURES, FEATURES)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        x = self.common(x)
        if self.calls % 2 == 1:
            x = self.rare(x)
        return x


class FrozenBackbone(nn.Module):
    """A fine-tuning model: the backbone is frozen before training, the head trains."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(FEATURES, 8), nn.BatchNorm1d(8), nn.ReLU())
        self.head = nn.Sequential(nn.Dropout(0.5), nn.Linear(8, 2))
        self.backbone.requires_grad_(False)

    def forward(self, x):
        return self.head(self.backbone(x))


class TiedLM(nn.Module):
    """Input embedding and output projection share one weight (weight tying)."""

    def __init__(self, vocab: int = 10):
        super().__init__()
        self.embed = nn.Embedding(vocab, FEATURES)
        self.body = nn.Linear(FEATURES, FEATURES)
        self.lm_head = nn.Linear(FEATURES, vocab, bias=False)
        self.lm_head.weight = self.embed.weight

    def forward(self, tokens):
        return self.lm_head(torch.tanh(self.body(self.embed(tokens))))


class TiedUnused(nn.Module):
    """Two projections share a weight and neither is called."""

    def __init__(self):
        super().__init__()
        self.used = nn.Linear(FEATURES, 2)
        self.proj_a = nn.Linear(FEATURES, FEATURES, bias=False)
        self.proj_b = nn.Linear(FEATURES, FEATURES, bias=False)
        self.proj_b.weight = self.proj_a.weight

    def forward(self, x):
        return self.used(x)


class ReentrantCheckpoint(nn.Module):
    """Reentrant checkpointing of a block whose input does not require grad."""

    def __init__(self, use_reentrant: bool):
        super().__init__()
        self.block = nn.Linear(FEATURES, FEATURES)
        self.head = nn.Linear(FEATURES, 1)
        self.use_reentrant = use_reentrant

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint

        return self.head(checkpoint(self.block, x, use_reentrant=self.use_reentrant))


class Clean(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURES, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, x):
        return self.net(x)


# ---------------------------------------------------------------------------- factories


def make_unused_module():
    return UnusedModule(), lambda model: model(batch()).pow(2).mean()


def make_ignored_output():
    def step(model):
        logits, _aux = model(batch())
        return logits.pow(2).mean()

    return IgnoredOutput(), step


def make_multitask_forgets_task():
    def step(model):
        out = model(batch())
        return out["seg"].pow(2).mean()  # the depth loss was left out of the sum

    return MultiTask(), step


def make_multitask_fixed():
    def step(model):
        out = model(batch())
        return out["seg"].pow(2).mean() + out["depth"].abs().mean()

    return MultiTask(), step


def make_two_losses():
    def step(model):
        feature, output = model(batch())
        # two backward() calls per step in the real loop: loss1.backward(); loss2.backward()
        return feature.mean(), output.pow(2).mean()

    return TwoLosses(), step


def make_two_losses_summed():
    def step(model):
        feature, output = model(batch())
        return feature.mean() + output.pow(2).mean()

    return TwoLosses(), step


def make_branchy():
    return Branchy(), lambda model: model(batch()).sum()


def make_frozen_backbone():
    return FrozenBackbone(), lambda model: model(batch()).pow(2).mean()


def make_tied():
    tokens = torch.tensor([[1, 2, 3], [4, 5, 6]])
    return TiedLM(), lambda model: model(tokens).logsumexp(-1).mean()


def make_tied_unused():
    return TiedUnused(), lambda model: model(batch()).sum()


def make_clean():
    return Clean(), lambda model: model(batch()).pow(2).mean()


def make_hf_style_dict():
    """A step returning a dict with a `loss` entry and other outputs (HF/Lightning style)."""

    def step(model):
        logits, aux = model(batch())
        return {"loss": logits.pow(2).mean(), "logits": logits, "aux": aux}

    return IgnoredOutput(), step


def make_no_grad_loss():
    def step(model):
        with torch.no_grad():
            return model(batch()).sum()

    return Clean(), step


def make_all_frozen():
    model = Clean()
    model.requires_grad_(False)
    return model, lambda model: model(batch()).sum()


def make_failing_step():
    def step(model):
        raise ValueError("shapes do not match\nsecond line that must not show")

    return Clean(), step


def make_failing_factory():
    raise RuntimeError("the dataset is missing")


def make_not_a_pair():
    return Clean()
