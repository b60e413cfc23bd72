#!/bin/bash
# Spark's graceful decommissioning hook (spark.kubernetes.decommission.script, /opt/decom.sh): the
# executor pod's preStop runs it when spark.decommission.enabled is set. It asks the executor JVM to
# decommission (SIGPWR, which Spark's executor handles by migrating its blocks away) and waits for
# the JVM to exit, so the pod ends only once its work has moved.
set -u
pid=$(pgrep -f org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend | head -n 1)
if [ -z "$pid" ]; then
  echo "decom: no executor running" >&2
  exit 0
fi
echo "decom: asking executor $pid to decommission" >&2
kill -PWR "$pid"
while kill -0 "$pid" 2>/dev/null; do
  sleep 1
done
echo "decom: executor $pid exited" >&2
