"""mpirun's options for an MPI job whose every byte crosses tita: Open MPI's
pml ucx over tita0's verbs transports (rc_verbs, with ud_verbs for UCP's
wireup), shared memory and TCP excluded; and the ring Allreduce, the data
movement nccl-tests' busbw assumes (Open MPI's own choice for some rank
counts, three ranks at 1 MiB, sends the whole buffer serially several times).
Used by tita-doctor accept --tool mpi and scripts/bench-mpi.py."""

MPIRUN_OPTIONS = ["--oversubscribe", "--mca", "pml", "ucx", "--mca", "btl", "^vader,tcp,openib,uct",
                  "-x", "UCX_TLS=rc_verbs,ud_verbs", "-x", "UCX_NET_DEVICES=tita0:1"]
RING_ALLREDUCE = ["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", "coll_tuned_allreduce_algorithm", "4"]
