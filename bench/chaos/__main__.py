"""`python -m bench.chaos`: the soak (bench.chaos.soak)."""

from bench.chaos.soak import main

main()
