"""Write a big, realistic multi-rank training log with one real DDP error in it.

    python bench/make_log.py OUT --size 1G [--error-at end|start] [--ranks 8]

What a torchrun job on 8 GPUs leaves behind: every line carries a `[rankN]:` prefix, NCCL
INFO chatter dominates, tqdm progress bars rewrite themselves with carriage returns (so one
"line" holds hundreds of updates), and the error is printed once per failing rank, with
its traceback, close to the end (or, with `--error-at start`, close to the start, then the
job keeps logging). The bytes are reproducible (fixed seed). Never commit the output.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
ERROR_FIXTURE = HERE.parent / "tests" / "fixtures" / "versions" / "torch_1_10_flag_on.txt"
CHUNK_LINES = 500  # lines per generated chunk (~0.8 MB); chunks are varied, then reused


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def _nccl(rng: random.Random, rank: int) -> str:
    channel = rng.randrange(32)
    peer = (rank + 1) % 8
    kind = rng.choice(
        [
            f"Channel {channel:02d}/0 : {rank}[{rank}] -> {peer}[{peer}] via P2P/IPC/read",
            f"Channel {channel:02d}/1 : {rank}[{rank}] -> {peer}[{peer}] [send] via NET/IB/0",
            "Connected all rings",
            "Connected all trees",
            f"comm 0x{rng.getrandbits(40):x} rank {rank} nranks 8 cudaDev {rank} busId "
            f"{rng.randrange(16, 256):x}000 commId 0x{rng.getrandbits(60):x} - Init COMPLETE",
            "threadThresholds 8/8/64 | 64/8/64 | 512 | 512",
            f"{rng.randrange(2, 33)} coll channels, 0 nvls channels, 32 p2p channels, 32 p2p "
            "channels per peer",
            "AllReduce: opCount 1a2b3c sendbuff 0x7f32 recvbuff 0x7f32 count 2359808 "
            "datatype 7 op 0 root 0 comm 0x55d1 [nranks=8] stream 0x55d2",
        ]
    )
    host = f"gpu-node-{rank // 8:02d}"
    return f"[rank{rank}]:{host}:{4000 + rank}:{4100 + rank} [{rank}] NCCL INFO {kind}\n"


def _tqdm(rng: random.Random, rank: int) -> str:
    total = 1000
    start = rng.randrange(total - 60)
    updates = []
    for step in range(start, start + rng.randrange(10, 60)):
        pct = step * 100 // total
        bar = "█" * (pct // 10) + " " * (10 - pct // 10)
        updates.append(
            f"Epoch {rng.randrange(100)}: {pct:3d}%|{bar}| {step}/{total} "
            f"[01:{step % 60:02d}<02:{(total - step) % 60:02d},  5.{step % 90:02d}it/s, "
            f"loss={rng.random():.4f}]"
        )
    return f"[rank{rank}]:" + "\r".join(updates) + "\n"


def _chatter(rng: random.Random, rank: int) -> str:
    return rng.choice(
        [
            f"[rank{rank}]:INFO:train:step {rng.randrange(10**6)} loss {rng.random():.5f} "
            f"lr {rng.random() / 1000:.2e} grad_norm {rng.random() * 5:.3f}\n",
            f"[rank{rank}]:[W reducer.cpp:1300] Warning: grad strides do not match bucket "
            "view strides. This may indicate grad was not created according to the gradient "
            "layout contract\n",
            f"[rank{rank}]:2024-05-0{rng.randrange(1, 10)} 12:{rng.randrange(60):02d}:"
            f"{rng.randrange(60):02d},123 - INFO - evaluating on 5000 images (多卡验证)\n",
        ]
    )


def make_chunk(rng: random.Random) -> bytes:
    lines = []
    for _ in range(CHUNK_LINES):
        rank = rng.randrange(8)
        roll = rng.random()
        if roll < 0.70:
            lines.append(_nccl(rng, rank))
        elif roll < 0.85:
            lines.append(_tqdm(rng, rank))
        else:
            lines.append(_chatter(rng, rank))
    return "".join(lines).encode("utf-8")


def error_block() -> bytes:
    """The real error, printed by ranks 1 and 5, with their prefixes."""
    text = ERROR_FIXTURE.read_text(encoding="utf-8")
    out = []
    for rank in (1, 5):
        body = text.replace("for rank 0:", f"for rank {rank}:")
        out += [f"[rank{rank}]:{line}\n" for line in body.splitlines()]
    return "".join(out).encode("utf-8")


def write_log(path: Path, size: int, error_at: str = "end", seed: int = 0) -> int:
    """Write about `size` bytes; returns the 1-based line number of the first error line."""
    rng = random.Random(seed)
    chunks = [make_chunk(rng) for _ in range(64)]
    error = error_block()
    error_offset = size * 98 // 100 if error_at == "end" else size * 2 // 100
    written, lines, error_line = 0, 0, 0
    with open(path, "wb") as out:
        index = 0
        while written < size or not error_line:
            if not error_line and written >= error_offset:
                error_line = lines + 1
                out.write(error)
                written += len(error)
                lines += error.count(b"\n")
            chunk = chunks[index % len(chunks)]
            index += 1
            out.write(chunk)
            written += len(chunk)
            lines += chunk.count(b"\n")
    return error_line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--size", default="100M", help="e.g. 100M, 1G")
    parser.add_argument("--error-at", choices=("end", "start"), default="end")
    args = parser.parse_args()
    line = write_log(args.out, parse_size(args.size), args.error_at)
    print(f"{args.out}: error block starts at line {line}")


if __name__ == "__main__":
    main()
