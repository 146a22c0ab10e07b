/* tita-allreduce: MPI_Allreduce (sum) of 1 KiB to 64 MiB between the ranks,
 * every element of every result checked, with the time and the bus bandwidth
 * (nccl-tests' definition: algbw x 2(n-1)/n) of each size.
 *
 *   mpirun -np N tita-allreduce [--min BYTES] [--max BYTES] [--iters K]
 *
 * Rank r contributes element i = (r + 1) * (i % 65521 + 1) + iteration, as
 * 64-bit integers, so the sum is exact and a value placed at the wrong index,
 * in the wrong iteration or from a missing rank shows. Exit status 0 only if
 * every element of every size and iteration was right. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t contribution(int rank, size_t i, int iter) {
  return (int64_t)(rank + 1) * (int64_t)(i % 65521 + 1) + iter;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t min_bytes = 1024, max_bytes = 64u << 20;
  int iters = 5;
  for (int a = 1; a < argc; ++a) {
    if (strcmp(argv[a], "--min") == 0 && a + 1 < argc) {
      min_bytes = strtoull(argv[++a], NULL, 0);
    } else if (strcmp(argv[a], "--max") == 0 && a + 1 < argc) {
      max_bytes = strtoull(argv[++a], NULL, 0);
    } else if (strcmp(argv[a], "--iters") == 0 && a + 1 < argc) {
      iters = atoi(argv[++a]);
    } else {
      if (rank == 0) fprintf(stderr, "tita-allreduce: unknown argument %s\n", argv[a]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (min_bytes < sizeof(int64_t) || max_bytes < min_bytes || iters < 1) {
    if (rank == 0) fprintf(stderr, "tita-allreduce: need 8 <= --min <= --max and --iters >= 1\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int64_t *in = malloc(max_bytes), *out = malloc(max_bytes);
  if (in == NULL || out == NULL) {
    fprintf(stderr, "tita-allreduce: rank %d: no memory for %zu bytes\n", rank, max_bytes);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* The sum over ranks r of (r + 1) * k + iter = k * n(n+1)/2 + n * iter. */
  const int64_t ranks_sum = (int64_t)size * (size + 1) / 2;
  long bad_total = 0;
  if (rank == 0) printf("# ranks %d; bytes, iterations, time per allreduce [us], algbw [GB/s], busbw [GB/s], wrong\n", size);
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const size_t n = bytes / sizeof(int64_t);
    double spent = 0;
    long bad = 0;
    for (int it = 0; it < iters; ++it) {
      for (size_t i = 0; i < n; ++i) in[i] = contribution(rank, i, it);
      memset(out, 0xa5, n * sizeof(int64_t));
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      spent += MPI_Wtime() - t0;
      for (size_t i = 0; i < n; ++i) {
        const int64_t want = (int64_t)(i % 65521 + 1) * ranks_sum + (int64_t)size * it;
        if (out[i] != want) {
          if (bad < 3) {
            fprintf(stderr, "tita-allreduce: rank %d, %zu bytes, iteration %d: element %zu is %lld, want %lld\n",
                    rank, bytes, it, i, (long long)out[i], (long long)want);
          }
          ++bad;
        }
      }
    }
    long bad_all = 0;
    MPI_Allreduce(&bad, &bad_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    double worst = 0;  /* the slowest rank's time is the operation's */
    MPI_Allreduce(&spent, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const double t = worst / iters;
    const double algbw = (double)(n * sizeof(int64_t)) / t / 1e9;
    if (rank == 0) {
      printf("%10zu %4d %12.1f %8.3f %8.3f %ld\n", n * sizeof(int64_t), iters, t * 1e6, algbw,
             algbw * 2.0 * (size - 1) / size, bad_all);
      fflush(stdout);
    }
    bad_total += bad_all;
    if (bytes > max_bytes / 4) break;
  }
  free(in);
  free(out);
  if (rank == 0) printf("tita-allreduce: %s\n", bad_total == 0 ? "all results right" : "WRONG RESULTS");
  MPI_Finalize();
  return bad_total == 0 ? 0 : 1;
}
