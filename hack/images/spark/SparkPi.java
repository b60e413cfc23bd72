// Estimates pi with Spark by throwing darts at the unit square: armada-bridge's own SparkPi, under the
// class name and in the jar the Spark operator's spark-pi sample runs
// (org.apache.spark.examples.SparkPi in local:///opt/spark/examples/jars/spark-examples.jar).
//
//   spark-submit --class org.apache.spark.examples.SparkPi spark-examples.jar [PARTITIONS]
//   prints "Pi is roughly 3.14..."
package org.apache.spark.examples;

import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

public final class SparkPi {
  private static final int DARTS_PER_PARTITION = 100_000;

  private SparkPi() {}

  public static void main(String[] args) {
    int partitions = args.length > 0 ? Integer.parseInt(args[0]) : 2;
    int darts = DARTS_PER_PARTITION * partitions;
    SparkConf conf = new SparkConf().setAppName("Spark Pi");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      long hits =
          sc.parallelize(IntStream.range(0, darts).boxed().collect(Collectors.toList()), partitions)
              .filter(
                  i -> {
                    double x = ThreadLocalRandom.current().nextDouble(-1, 1);
                    double y = ThreadLocalRandom.current().nextDouble(-1, 1);
                    return x * x + y * y <= 1;
                  })
              .count();
      System.out.println("Pi is roughly " + 4.0 * hits / darts);
    }
  }
}
