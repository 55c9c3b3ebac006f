"""ddp-doctor: diagnose PyTorch DDP unused-parameter errors and print fixes that work."""

__version__ = "0.1.0"
