"""Run as a PySpark application with dynamic allocation: a stage of 16 tasks that each wait 4 s (a
backlog: the driver asks for more executors, up to its maximum), then the driver idles 45 s (its
executors idle past their timeout: it releases them, down to its minimum), then a short last stage."""

import time

from pyspark.sql import SparkSession


def slow(x: int) -> int:
    time.sleep(4)
    return x


spark = SparkSession.builder.appName("elastic").getOrCreate()
sc = spark.sparkContext
print("first stage:", sc.parallelize(range(16), 16).map(slow).sum(), flush=True)
time.sleep(45)
print("second stage:", sc.parallelize(range(4), 4).map(lambda x: x * 2).sum(), flush=True)
spark.stop()
