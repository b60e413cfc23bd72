"""The processes of a JAXJob meet with `jax.distributed.initialize` and all-reduce (psum) across
them on CPUs, over the gloo collectives jaxlib carries (armada-bridge's own, at
/opt/armada-bridge/psum.py in armada-bridge.local/jax).

The training operator sets in each pod COORDINATOR_ADDRESS (worker 0's Service), COORDINATOR_PORT
(its `jaxjob-port`), NUM_PROCESSES and PROCESS_ID, as its own sample (examples/jax/cpu-demo) reads them.

    python3 psum.py   # prints "process P/N: psum = S" on every process, S the sum over the
                      # processes of (P + 1), and the global device count
"""

import os

import jax
import jax.numpy as jnp
from jax.experimental import multihost_utils
from rendezvous import wait_for_names

jax.config.update("jax_cpu_collectives_implementation", "gloo")


def main() -> None:
    address = os.environ["COORDINATOR_ADDRESS"]
    port = int(os.environ["COORDINATOR_PORT"])
    processes, process = int(os.environ["NUM_PROCESSES"]), int(os.environ["PROCESS_ID"])
    wait_for_names(address)
    jax.distributed.initialize(
        coordinator_address=f"{address}:{port}", num_processes=processes, process_id=process
    )
    me = f"process {jax.process_index()}/{jax.process_count()}"
    print(f"{me}: {jax.device_count()} devices, {jax.local_device_count()} local", flush=True)
    # One value per local device; psum over every device of every process.
    xs = jnp.full(jax.local_device_count(), float(process + 1))
    total = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")(xs)
    print(f"{me}: psum = {float(total[0])}", flush=True)
    multihost_utils.sync_global_devices("done")
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
