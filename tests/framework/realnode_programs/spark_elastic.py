"""Run as a PySpark application with dynamic allocation: a stage of TASKS tasks that each wait
SECONDS (a backlog: the driver asks for more executors, up to its maximum), then the driver idles
IDLE seconds (its executors idle past their timeout: it releases them, down to its minimum), then a
short last stage. Arguments: TASKS SECONDS IDLE [--go PATH] [--peak N], default 16 4 45. With
--go, the first stage starts only once that file exists (the driver holds its first executor
meanwhile). With --peak, the first stage runs again while fewer than N executors have joined (for at
most 300 s): the backlog lasts until they come, however long they take to start."""

import argparse
import os
import time

from pyspark.sql import SparkSession

parser = argparse.ArgumentParser()
parser.add_argument("numbers", type=int, nargs="*", default=[16, 4, 45])
parser.add_argument("--go")
parser.add_argument("--peak", type=int, default=0)
args = parser.parse_args()
tasks, seconds, idle = args.numbers


def slow(x: int) -> int:
    time.sleep(seconds)
    return x


spark = SparkSession.builder.appName("elastic").getOrCreate()
sc = spark.sparkContext


def executors() -> int:
    """Executors that have joined and not left (the driver's own block manager is listed too)."""
    return int(sc._jsc.sc().getExecutorMemoryStatus().size()) - 1


if args.go:
    print("waiting for", args.go, flush=True)
    while not os.path.exists(args.go):
        time.sleep(1)
deadline = time.monotonic() + 300
while True:
    first = sc.parallelize(range(tasks), tasks).map(slow).sum()
    if executors() >= args.peak or time.monotonic() >= deadline:
        break
print("first stage:", first, "with", executors(), "executors", flush=True)
time.sleep(idle)
print("second stage:", sc.parallelize(range(4), 4).map(lambda x: x * 2).sum(), flush=True)
spark.stop()
