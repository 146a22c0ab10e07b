#!/usr/bin/env bash
# Install the Debian 12 packages tita needs. Idempotent: asks apt only for what
# is missing; a machine with everything installed touches neither the network
# nor dpkg.
#
#   scripts/setup.sh demo   what the main job needs: the toolchain, the
#                           libraries tita-perf and tita-switch build on, and
#                           matplotlib for the plot (scripts/demo.sh)
#   scripts/setup.sh [all]  everything: the demo's packages, then ns-3, the
#                           verbs layer and rdma-core's programs, the rxe VM,
#                           the interop checkers, Prometheus, the fuzzers and
#                           valgrind (scripts/test.sh, benchmarks)
set -euo pipefail

profile=${1:-all}
case "$profile" in
  demo|all) ;;
  *) echo "setup: unknown profile '$profile' (demo or all)" >&2; exit 2 ;;
esac

demo_packages=(
  # toolchain
  build-essential pkg-config meson ninja-build
  # libraries (GoogleTest and Google Benchmark: the build's own suites need them)
  libdpdk-dev libisal-dev libpcap-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  # pkg-config --static libtita: DPDK's static dependencies end in -lsystemd
  libsystemd-dev
  # the demo's plot
  python3-matplotlib python3-numpy
)

test_packages=(
  # the fuzzers (libFuzzer) and the sanitizer runtime
  clang libclang-rt-14-dev
  # ns-3.37 (ns3-core needs gsl at link time)
  libns3-dev libgsl-dev
  # DPDK tools (dpdk-testpmd, dpdk-telemetry.py) and namespaces for AF_XDP tests
  dpdk dpdk-dev iproute2 libxdp1 libbpf1
  # the verbs layer: libibverbs' headers, and rdma-core's own programs run over tita
  libibverbs-dev ibverbs-utils perftest python3-pyverbs
  # middleware over tita (doc/verbs.md): UCX's tools, Open MPI, libfabric's tools, librdmacm
  ucx-utils libucx-dev openmpi-bin libopenmpi-dev libfabric-bin rdmacm-utils librdmacm-dev
  # Linux Soft-RoCE as a peer: a qemu VM built from Debian's packages (scripts/rxe-vm)
  qemu-system-x86 debootstrap e2fsprogs
  # interop checks
  tshark python3-scapy
  # operations: Prometheus (the server and promtool) and its Python client for tita-exporter
  prometheus python3-prometheus-client
  # measurement
  valgrind
)

packages=("${demo_packages[@]}")
if [ "$profile" = all ]; then
  packages+=("${test_packages[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages of the $profile profile present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# wireshark-common asks whether non-root users may capture; answer no.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
