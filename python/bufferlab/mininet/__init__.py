"""Mininet's Python API in simulated time: ``from mininet.net import Mininet`` becomes
``from bufferlab.mininet.net import Mininet`` (docs/mininet.md)."""
