#!/usr/bin/env bash
# Build the portable wheel (manylinux2014, abi3: one wheel for CPython 3.11+ on
# x86_64 Linux), install it into a fresh venv with no cargo on PATH, and run
# the shipped UDP scenario from it. Prints the wheel's size and install time.
#
#   tools/build_wheel.sh            build + smoke test (wheel in target/wheels/)
#   tools/build_wheel.sh --no-build smoke-test the newest wheel already built
#
# Needs maturin and ziglang (`pip install maturin ziglang`): zig links against
# glibc 2.17's symbols, so no manylinux container is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

if [ "${1:-}" != "--no-build" ]; then
  rm -f target/wheels/bufferlab-*.whl
  nice maturin build --release --zig --compatibility manylinux2014 --out target/wheels
fi
wheel=$(ls -t target/wheels/bufferlab-*manylinux*.whl | head -1)
echo "wheel: $wheel ($(du -k "$wheel" | cut -f1) KiB)"
# bufferlab serve's page and its vendored uPlot ship in the wheel (maturin takes every file of
# python/bufferlab that git does not ignore): the page works offline
for f in index.html bench.js bench.css uPlot.iife.min.js uPlot.min.css LICENSE.uPlot.txt VENDORED.md; do
  python3 -c "import sys, zipfile; sys.exit('bufferlab/serve/static/$f' not in zipfile.ZipFile('$wheel').namelist())" \
    || { echo "error: the wheel lacks bufferlab/serve/static/$f" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
# A PATH without cargo/rustc proves the wheel needs no Rust toolchain.
clean_path="$work/venv/bin:/usr/bin:/bin"
start=$EPOCHREALTIME
env -i HOME="$HOME" PATH="$clean_path" "$work/venv/bin/pip" install -q --disable-pip-version-check "$wheel"
end=$EPOCHREALTIME
python3 -c "print(f'install time from the wheel: {$end - $start:.1f} s')"
if env -i PATH="$clean_path" sh -c 'command -v cargo || command -v rustc' >/dev/null; then
  echo "error: cargo or rustc is on the clean PATH" >&2
  exit 1
fi
# Run from a scratch folder so the package comes from the venv, not ./python.
cp "$repo/scenarios/udp-tbf-netem.toml" "$work/"
(cd "$work" && env -i HOME="$HOME" PATH="$clean_path" MPLBACKEND=Agg \
  bufferlab run -q udp-tbf-netem.toml && test -s results/udp-tbf-netem/summary.json)
echo "wheel smoke test passed"
