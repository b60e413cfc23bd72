"""Run as a PySpark application with dynamic allocation: a stage of TASKS tasks that each wait
SECONDS (a backlog: the driver asks for more executors, up to its maximum), then the driver idles
IDLE seconds (its executors idle past their timeout: it releases them, down to its minimum), then a
short last stage. Arguments: TASKS SECONDS IDLE [GO], default 16 4 45; with GO, a path, the first
stage starts only once that file exists (the driver holds its first executor meanwhile)."""

import os
import sys
import time

from pyspark.sql import SparkSession

tasks, seconds, idle = (int(a) for a in sys.argv[1:4]) if len(sys.argv) > 3 else (16, 4, 45)
go = sys.argv[4] if len(sys.argv) > 4 else None


def slow(x: int) -> int:
    time.sleep(seconds)
    return x


spark = SparkSession.builder.appName("elastic").getOrCreate()
sc = spark.sparkContext
if go:
    print("waiting for", go, flush=True)
    while not os.path.exists(go):
        time.sleep(1)
print("first stage:", sc.parallelize(range(tasks), tasks).map(slow).sum(), flush=True)
time.sleep(idle)
print("second stage:", sc.parallelize(range(4), 4).map(lambda x: x * 2).sum(), flush=True)
spark.stop()
