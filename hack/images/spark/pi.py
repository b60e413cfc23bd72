"""Estimates pi with Spark by throwing darts at the unit square (armada-bridge's own, at the path the
Spark operator's spark-pi-python sample runs: local:///opt/spark/examples/src/main/python/pi.py).

    spark-submit pi.py [PARTITIONS]     # prints "Pi is roughly 3.14..."
"""

import random
import sys
from operator import add

from pyspark.sql import SparkSession

DARTS_PER_PARTITION = 100_000


def inside(_: int) -> int:
    x, y = random.uniform(-1, 1), random.uniform(-1, 1)
    return 1 if x * x + y * y <= 1 else 0


def main() -> None:
    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    darts = DARTS_PER_PARTITION * partitions
    spark = SparkSession.builder.appName("PythonPi").getOrCreate()
    try:
        hits = spark.sparkContext.parallelize(range(darts), partitions).map(inside).reduce(add)
        print(f"Pi is roughly {4.0 * hits / darts:f}")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
