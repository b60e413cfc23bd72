"""The workers of a collective PaddleJob all-reduce their ranks and train a few data-parallel steps
over Paddle's gloo backend on CPUs (armada-bridge's own, at /opt/armada-bridge/allreduce.py in
armada-bridge.local/paddle).

Run under `python3 -m paddle.distributed.launch`, as the operator's sample runs its program: the
training operator sets PADDLE_MASTER (worker 0's pod address and port there, its Service's name on
the others), PADDLE_NNODES and PADDLE_JOB_ID, from which the launcher of each pod meets the others
at the master, ranks the nodes and starts this program with PADDLE_TRAINER_ID,
PADDLE_TRAINERS_NUM and the trainers' endpoints, which `init_parallel_env` reads.

    python3 -m paddle.distributed.launch allreduce.py [STEPS]
        # prints "rank R/W: all_reduce sum = S", a loss per step and the trained weights' sum,
        # the same on every rank
"""

import sys

import paddle
import paddle.distributed as dist


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    paddle.set_device("cpu")
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    me = f"rank {rank}/{world}"

    total = paddle.to_tensor([float(rank)])
    dist.all_reduce(total)
    print(f"{me}: all_reduce sum = {float(total.numpy()[0])}", flush=True)

    # Each rank its own random data, one model: DataParallel averages the gradients, so the
    # weights stay equal on every rank (their sum printed last).
    paddle.seed(0)
    model = paddle.DataParallel(paddle.nn.Linear(8, 1))
    optimizer = paddle.optimizer.SGD(learning_rate=0.05, parameters=model.parameters())
    paddle.seed(1000 + rank)
    x = paddle.randn([64, 8])
    y = x @ paddle.arange(1.0, 9.0).reshape([8, 1])
    for step in range(1, steps + 1):
        loss = paddle.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        print(f"{me}: step {step} loss {float(loss):.4f}", flush=True)
    weights = sum(float(p.sum()) for p in model.parameters())
    print(f"{me}: trained {steps} steps, weights sum = {weights:.6f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    main()
