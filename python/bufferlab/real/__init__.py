"""``bufferlab run --real``: the scenario's lines on the Linux kernel, in network namespaces
(netns.py builds the topology, preflight.py checks what the kernel lacks first,
delayline.py stands in for ``netem delay`` where netem is not built, runner.py runs the
parts in real time and writes the simulated run's layout). docs/real.md."""
