"""Chaos soak: three queues submit continuously while bridge and cluster processes are killed,
restarted and paused at random; the bridge's invariants are checked all along and at the end.

    .venv/bin/python -m bench.chaos [--minutes 30] [--seed N] [--json]

Uses the running `armada-bridge dev up` environment; with `dev up --extender-replicas 2` the
extender runs highly available and the faults kill one replica or both. Workload: singles and gangs
of 2-16 pods (preemptible), Jobs, and the released operators' objects where they run (PyTorchJob,
RayCluster: Volcano PodGroups), sized to ask for more than the remotes hold (`--load`), so that fair
share decides and preempts. Faults (seeded, each one logged):
- SIGKILL of an extender replica (or of every one) or of the vkubelet, restarted a few seconds later
  (a Deployment's restart);
- SIGSTOP of the front kube-scheduler for 5-20 s (a hung scheduler), then SIGCONT;
- SIGSTOP of a remote cluster's kube-apiserver past its virtual node's lease (45 s), then SIGCONT;
  a control-plane process that exits meanwhile (kube-controller-manager and kube-scheduler do when
  they lose their leader lease) is started again as its supervisor would.

Invariants, each violation printed with the objects involved:
- one remote pod at most per front pod (across all remote clusters);
- a gang (Armada annotations or a Volcano PodGroup) is in one remote cluster, and never partly
  placed for longer than a round's worth of time (`--split-seconds`);
- no remote pod outlives its front pod by more than the GC window (`--gc-seconds`);
- the front never shows a pod Running whose remote pod is gone (its cluster answering) for longer
  than the outage bound (`--outage-seconds`);
- after the faults stop, each queue tops its work up to `--load`/3 of the remotes' CPU again, then
  everything converges within `--converge-seconds`: every live front pod
  placed in a remote cluster is Running there, every other waits with a reason (an ArmadaWaiting
  Event), every Failed one says why; no queue stays below its fair share (its demand-capped share
  of the remotes' CPU) by a waiting unit that could run: one that fits whole in one cluster, on
  free room or on what fair-share preemption would give it in Armada's order (`fair_shares`);
  every control-plane process is alive (`dev status` healthy).
Each invariant's runs (judged on a full look at the clusters) and errors (an API answer lost to a
fault, a remote cluster that did not answer, a check that broke) are counted and printed (in
`--json`: `invariants`); an invariant that never ran is a violation: a check that never ran proves
nothing. Exit status 1 when any invariant was violated.

Modules: `report` (the invariants, their tally, the report), `context` (the clusters the soak works
on), `workload` (what the queues submit), `faults`, `invariants` (the checks), `shares` (the
fair-share judge), `soak` (the run and its command line).
"""
