#!/bin/bash
# The entrypoint of armada-bridge's Spark image (devenv/images/spark.py), written for it.
# Spark on Kubernetes gives its containers no command, only arguments, and expects the image to know:
#   driver ARGS...   the driver pod: run spark-submit in client mode on this pod's address
#                    ($SPARK_DRIVER_BIND_ADDRESS) with the ARGS the cluster-mode submit wrote
#                    (--properties-file /opt/spark/conf/spark.properties --class MAIN APP [APP-ARGS]).
#   executor         an executor pod: run KubernetesExecutorBackend from the SPARK_* variables the
#                    driver put on the pod (driver URL, executor id, cores, memory, application id,
#                    pod IP and name, resource profile) with the JVM options SPARK_JAVA_OPT_0, _1, ...
#   anything else    run as given.
# The process runs under tini (signals forwarded, children reaped).
set -euo pipefail

SPARK_HOME=${SPARK_HOME:-/opt/spark}
export SPARK_HOME

usage() {
  cat >&2 <<'EOF'
usage: /opt/entrypoint.sh driver SPARK-SUBMIT-ARGS...   (a Spark on Kubernetes driver pod)
       /opt/entrypoint.sh executor                      (an executor pod; reads SPARK_* variables)
       /opt/entrypoint.sh COMMAND [ARGS...]             (anything else, run as given)
EOF
}

# Java (and Hadoop's user lookup in it) needs a name for the process's uid: a pod may run the image
# as a uid it does not know.
name_this_uid() {
  local uid gid
  uid=$(id -u)
  gid=$(id -g)
  getent passwd "$uid" >/dev/null && return
  if [ -w /etc/passwd ]; then
    echo "$uid:x:$uid:$gid:${SPARK_USER_NAME:-anonymous uid}:$SPARK_HOME:/bin/false" >>/etc/passwd
  else
    echo "entrypoint: uid $uid has no passwd entry and /etc/passwd is read-only" >&2
  fi
}

# need MODE NAME...: fails, naming them, when any of the variables NAME is unset or empty.
need() {
  local mode=$1 missing=() name
  shift
  for name in "$@"; do
    [ -n "${!name:-}" ] || missing+=("$name")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "entrypoint: $mode needs ${missing[*]} in the environment (Spark sets them on its pods)" >&2
    exit 2
  fi
}

# The classpath of an executor: the configuration directories first, then the extra classpath the
# driver passed (SPARK_CLASSPATH), Spark's jars, and any further classpath of the pod's own.
executor_classpath() {
  local cp="${SPARK_CLASSPATH:+$SPARK_CLASSPATH:}$SPARK_HOME/jars/*"
  cp+="${SPARK_EXTRA_CLASSPATH:+:$SPARK_EXTRA_CLASSPATH}${SPARK_DIST_CLASSPATH:+:$SPARK_DIST_CLASSPATH}"
  cp="${SPARK_CONF_DIR:-$SPARK_HOME/conf}:$cp"
  [ -z "${HADOOP_CONF_DIR:-}" ] || cp="$HADOOP_CONF_DIR:$cp"
  printf '%s' "$cp"
}

# SPARK_JAVA_OPT_<n>, one JVM option each, in the order of n.
java_opts=()
collect_java_opts() {
  local name
  while read -r name; do
    java_opts+=("${!name}")
  done < <(compgen -e | grep -E '^SPARK_JAVA_OPT_[0-9]+$' | sort -t_ -k4,4n || true)
}

if [ $# -eq 0 ]; then
  usage
  exit 2
fi

name_this_uid
# Spark's Python runs the driver program and the executors' workers: pass the choices on.
[ -z "${PYSPARK_PYTHON:-}" ] || export PYSPARK_PYTHON
[ -z "${PYSPARK_DRIVER_PYTHON:-}" ] || export PYSPARK_DRIVER_PYTHON

case "$1" in
  driver)
    shift
    need driver SPARK_DRIVER_BIND_ADDRESS
    cmd=("$SPARK_HOME/bin/spark-submit" --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS"
      --deploy-mode client "$@")
    ;;
  executor)
    shift
    need executor SPARK_DRIVER_URL SPARK_EXECUTOR_ID SPARK_EXECUTOR_CORES SPARK_EXECUTOR_MEMORY \
      SPARK_APPLICATION_ID SPARK_EXECUTOR_POD_IP SPARK_RESOURCE_PROFILE_ID SPARK_EXECUTOR_POD_NAME
    collect_java_opts
    cmd=("${JAVA_HOME:-/usr}/bin/java" "${java_opts[@]}"
      "-Xms$SPARK_EXECUTOR_MEMORY" "-Xmx$SPARK_EXECUTOR_MEMORY"
      -cp "$(executor_classpath)"
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend
      --driver-url "$SPARK_DRIVER_URL"
      --executor-id "$SPARK_EXECUTOR_ID"
      --cores "$SPARK_EXECUTOR_CORES"
      --app-id "$SPARK_APPLICATION_ID"
      --hostname "$SPARK_EXECUTOR_POD_IP"
      --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID"
      --podName "$SPARK_EXECUTOR_POD_NAME")
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  *)
    cmd=("$@")
    ;;
esac

exec /usr/bin/tini -s -- "${cmd[@]}"
