#!/bin/sh
# One MPI rank under its own tita-run: Open MPI's mpirun starts this script
# for every rank (`mpirun -np 2 tita_rank.sh PROGRAM ARGS`), and it execs
#   tita-run --vdev net_af_packet0,iface=<rank's interface> --ip 10.0.0.<rank + 1> -- PROGRAM ARGS
# Rank r takes the r-th interface of TITA_MPI_IFACES (one end of a veth pair
# each, the far ends joined to each other or to a bridge, so the ranks open
# their ports in any order: a memif or vhost pair would need its server side
# open before the client's).
#
#   TITA_RUN         tita-run's path (default: tita-run on PATH)
#   TITA_MPI_IFACES  the ranks' interfaces, space-separated (required)
#   TITA_MPI_ARGS    more tita-run flags for every rank (e.g. "--progress adaptive")
# Everything else (TITA_LOG, UCX_TLS, ...) passes through in the environment.
set -eu
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-}}
if [ -z "$rank" ]; then
  echo "tita_rank.sh: no rank (OMPI_COMM_WORLD_RANK): start it with Open MPI's mpirun" >&2
  exit 2
fi
ifaces=${TITA_MPI_IFACES:?tita_rank.sh: TITA_MPI_IFACES (one interface per rank) is not set}
iface=""
n=0
for x in $ifaces; do
  [ "$n" = "$rank" ] && iface=$x
  n=$((n + 1))
done
if [ -z "$iface" ]; then
  echo "tita_rank.sh: rank $rank: TITA_MPI_IFACES names $n interfaces" >&2
  exit 2
fi
run=${TITA_RUN:-tita-run}
# shellcheck disable=SC2086
exec "$run" --vdev "net_af_packet0,iface=$iface,qdisc_bypass=0" --ip "10.0.0.$((rank + 1))" ${TITA_MPI_ARGS:-} -- "$@"
