# Flow sizes of a short, web-like workload for scenarios/fct-aqm.toml: one
# "SIZE CDF" pair per line (docs/tables.md "fct"), linear between points.
# Heavy-tailed like the published web-search workloads but scaled to a
# 100 Mbit/s bottleneck: half the flows fit in 10 KB (one initial window),
# 90 % in 100 KB, the largest are 3 MB; mean about 58 KB.
1k    0
2k    0.15
5k    0.35
10k   0.5
20k   0.65
50k   0.8
100k  0.9
200k  0.95
500k  0.98
1m    0.995
3m    1
