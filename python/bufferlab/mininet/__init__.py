"""Mininet's Python API in simulated time: ``from mininet.X import Y`` becomes
``from bufferlab.mininet.X import Y`` (docs/mininet.md)."""
