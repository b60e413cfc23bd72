"""The workers of a TFJob train one small linear model together with TensorFlow's
MultiWorkerMirroredStrategy (collective all-reduce over gRPC) on CPUs, and print their weights
(armada-bridge's own, at /opt/armada-bridge/mwms.py in armada-bridge.local/tensorflow).

The training operator sets TF_CONFIG in each pod: the cluster (each replica type's
`<job>-<type>-<i>.<namespace>.svc:<port>` addresses) and the pod's own task (type, index), which
the strategy reads to meet the others.

    python3 mwms.py [STEPS]   # prints "worker I/N: all-reduce sum = S" (the sum of the workers'
                              # indices), a loss per step and the trained weights' sum, the same on
                              # every worker though each trained on its own data
"""

import json
import os
import sys

import tensorflow as tf
from rendezvous import wait_for_names

LEARNING_RATE = 0.05


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    config = json.loads(os.environ["TF_CONFIG"])
    task = config["task"]
    wait_for_names(*(a for addresses in config["cluster"].values() for a in addresses))
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    workers = strategy.num_replicas_in_sync
    me = f"{task['type']} {task['index']}/{workers}"

    with strategy.scope():
        # Updated once, with gradients already averaged over the workers (all-reduced below).
        each = tf.VariableAggregation.ONLY_FIRST_REPLICA
        w = tf.Variable(tf.zeros([8, 1]), aggregation=each)
        b = tf.Variable(tf.zeros([1]), aggregation=each)

    # Each worker its own random data, one model: the gradients are averaged, so the weights stay
    # equal on every worker although no two saw the same samples.
    x = tf.random.stateless_normal([64, 8], seed=[1000 + task["index"], 0])
    y = x @ tf.reshape(tf.range(1.0, 9.0), [8, 1])

    def step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x @ w + b - y))
        grads = tape.gradient(loss, [w, b])
        grads = tf.distribute.get_replica_context().all_reduce("mean", grads)
        for variable, grad in zip((w, b), grads, strict=True):
            variable.assign_sub(LEARNING_RATE * grad)
        return loss

    @tf.function
    def index_sum() -> tf.Tensor:
        return strategy.reduce("sum", strategy.run(lambda: tf.constant(float(task["index"]))), axis=None)

    @tf.function
    def train(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        return strategy.reduce("mean", strategy.run(step, args=(x, y)), axis=None)

    print(f"{me}: all-reduce sum = {float(index_sum())}", flush=True)
    for i in range(1, steps + 1):
        print(f"{me}: step {i} loss {float(train(x, y)):.4f}", flush=True)
    weights = float(tf.reduce_sum(w) + tf.reduce_sum(b))
    print(f"{me}: trained {steps} steps, weights sum = {weights:.6f}", flush=True)


if __name__ == "__main__":
    main()
