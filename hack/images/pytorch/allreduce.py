"""Ranks of a PyTorchJob meet, all-reduce their rank numbers and train a small model with
DistributedDataParallel on random data, over torch.distributed's gloo backend on CPUs
(armada-bridge's own, at /opt/armada-bridge/allreduce.py in armada-bridge.local/pytorch).

The training operator sets what `init_process_group`'s env:// rendezvous reads in each pod:
MASTER_ADDR (the name of the master's Service, resolved by cluster DNS), MASTER_PORT, WORLD_SIZE
and RANK (the master is 0).

    python3 allreduce.py [STEPS]    # prints "rank R/W: all_reduce sum = S", a loss per step and
                                    # the trained weights' sum, the same on every rank
"""

import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from rendezvous import wait_for_names
from torch import nn
from torch.nn.parallel import DistributedDataParallel

# torch 1.13 gives up at once when MASTER_ADDR does not resolve yet: a Service's name is in DNS
# only once its pod is ready (the master's own too), so it waits for it first (rendezvous.py).
RENDEZVOUS_TIMEOUT = timedelta(minutes=5)


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    wait_for_names(os.environ["MASTER_ADDR"])
    dist.init_process_group("gloo", timeout=RENDEZVOUS_TIMEOUT)  # env:// from the variables above
    me = f"rank {dist.get_rank()}/{dist.get_world_size()}"
    assert (dist.get_rank(), dist.get_world_size()) == (rank, world)

    total = torch.tensor([float(rank)])
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    print(f"{me}: all_reduce sum = {total.item()}", flush=True)

    # Each rank its own random data, one model: DDP averages the gradients, so every rank's weights
    # stay equal (their sum printed last) although no two ranks saw the same samples.
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(64, 8, generator=data)
    y = x @ torch.arange(1.0, 9.0).unsqueeze(1)
    for step in range(1, steps + 1):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"{me}: step {step} loss {loss.item():.4f}", flush=True)
    weights = sum(p.detach().sum().item() for p in model.parameters())
    print(f"{me}: trained {steps} steps, weights sum = {weights:.6f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
