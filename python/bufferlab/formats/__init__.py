"""Byte-exact tool output built from the engine's structured results.

``cjson``  iperf3's cJSON printer;  ``iperf3``  client/server JSON and text;
``ping``  iputils ping text;  ``queue``  plot_q.sh's ``q_<iface>.dat``;
``plot_iperf``  plot_iperf.sh's files. (``tc -s qdisc show`` text: commands/tc/show.py
and each kind's module.) See docs/internals.md for the
result schemas and docs/semantics/formats.md (from the repository root) for the layouts.
"""
