/* verbs_check: a libibverbs program like any rdma-core user's (C, <infiniband/verbs.h>,
 * -libverbs), which checks what a device does byte by byte. It knows nothing of
 * tita; tita-run puts tita underneath.
 *
 *   verbs_check --loopback              one process: QPs of one device connected to each
 *                                       other; every opcode, atomics under contention,
 *                                       and the error cases
 *   verbs_check --server [--port P]     two processes: the passive side, which checks what
 *   verbs_check --client HOST [--port P]   arrives (SENDs, immediates, the atomic counter)
 *
 * Options: --device NAME (default: the first), --gid N (default 0), --sizes-max BYTES,
 * --unreachable A.B.C.D (a GID nobody answers for: expect IBV_WC_RETRY_EXC_ERR).
 * Every failed check prints "FAIL: ..."; the exit status is 0 only if none did. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF_BYTES (16u << 20)
#define ATOMIC_QPS 4
#define ATOMIC_ADDS 500
#define TIMEOUT_MS 10000

static int failures;
static int checks;

static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  ++failures;
}

#define CHECK(cond, ...)          \
  do {                            \
    ++checks;                     \
    if (!(cond)) fail(__VA_ARGS__); \
  } while (0)

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ device and memory */

struct dev {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_port_attr port;
  union ibv_gid gid;
  int gid_index;
  enum ibv_mtu mtu;
  uint8_t *buf; /* BUF_BYTES, remote read/write/atomic */
  struct ibv_mr *mr;
  uint64_t *counter; /* the atomics' target, in its own region */
  struct ibv_mr *counter_mr;
};

static const char *opt_device;
static int opt_gid;
static uint32_t opt_sizes_max = 1u << 20;
static const char *opt_unreachable;

static void open_dev(struct dev *d) {
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (list == NULL || n == 0) {
    fprintf(stderr, "verbs_check: no RDMA device\n");
    exit(2);
  }
  struct ibv_device *pick = NULL;
  for (int i = 0; i < n; ++i) {
    if (opt_device == NULL || strcmp(ibv_get_device_name(list[i]), opt_device) == 0) {
      pick = list[i];
      break;
    }
  }
  if (pick == NULL) {
    fprintf(stderr, "verbs_check: no device %s\n", opt_device);
    exit(2);
  }
  d->ctx = ibv_open_device(pick);
  ibv_free_device_list(list);
  if (d->ctx == NULL || ibv_query_port(d->ctx, 1, &d->port) != 0 ||
      ibv_query_gid(d->ctx, 1, opt_gid, &d->gid) != 0) {
    fprintf(stderr, "verbs_check: cannot open or query the device\n");
    exit(2);
  }
  d->gid_index = opt_gid;
  d->mtu = d->port.active_mtu;
  d->pd = ibv_alloc_pd(d->ctx);
  d->buf = aligned_alloc(4096, BUF_BYTES);
  d->counter = aligned_alloc(4096, 4096);
  memset(d->buf, 0, BUF_BYTES);
  memset(d->counter, 0, 4096);
  const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  d->mr = ibv_reg_mr(d->pd, d->buf, BUF_BYTES, all);
  d->counter_mr = ibv_reg_mr(d->pd, d->counter, 4096, all);
  if (d->pd == NULL || d->mr == NULL || d->counter_mr == NULL) {
    fprintf(stderr, "verbs_check: cannot allocate a PD or register memory: %s\n", strerror(errno));
    exit(2);
  }
}

/* ------------------------------------------------------------------ QPs */

struct peer {
  uint32_t qpn, psn;
  union ibv_gid gid;
  uint64_t addr, counter;
  uint32_t rkey, counter_rkey;
};

struct qp {
  struct ibv_qp *qp;
  struct ibv_cq *cq;
  uint32_t psn;
};

static struct qp make_qp(struct dev *d, int depth, int cq_size, uint32_t inline_bytes) {
  struct qp q;
  q.cq = ibv_create_cq(d->ctx, cq_size, NULL, NULL, 0);
  struct ibv_qp_init_attr a = {
      .send_cq = q.cq,
      .recv_cq = q.cq,
      .cap = {.max_send_wr = (uint32_t)depth, .max_recv_wr = (uint32_t)depth, .max_send_sge = 4,
              .max_recv_sge = 4, .max_inline_data = inline_bytes},
      .qp_type = IBV_QPT_RC,
  };
  q.qp = q.cq ? ibv_create_qp(d->pd, &a) : NULL;
  if (q.qp == NULL) {
    fprintf(stderr, "verbs_check: cannot create a CQ or QP: %s\n", strerror(errno));
    exit(2);
  }
  q.psn = (uint32_t)lrand48() & 0xffffff;
  return q;
}

static struct peer describe(struct dev *d, struct qp *q) {
  struct peer p;
  memset(&p, 0, sizeof p);
  p.qpn = q->qp->qp_num;
  p.psn = q->psn;
  p.gid = d->gid;
  p.addr = (uintptr_t)d->buf;
  p.rkey = d->mr->rkey;
  p.counter = (uintptr_t)d->counter;
  p.counter_rkey = d->counter_mr->rkey;
  return p;
}

/* RESET -> INIT -> RTR -> RTS, as rdma-core's examples do it. */
static int connect_qp(struct dev *d, struct qp *q, const struct peer *p, uint8_t rnr_retry) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RESET;
  if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE)) return -1;
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) return -1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = d->mtu;
  a.dest_qp_num = p->qpn;
  a.rq_psn = p->psn;
  a.max_dest_rd_atomic = 16;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = p->gid;
  a.ah_attr.grh.sgid_index = (uint8_t)d->gid_index;
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  if (ibv_modify_qp(q->qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    return -1;
  }
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = rnr_retry;
  a.sq_psn = q->psn;
  a.max_rd_atomic = 16;
  return ibv_modify_qp(q->qp, &a,
                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                           IBV_QP_MAX_QP_RD_ATOMIC);
}

static int post(struct qp *q, enum ibv_wr_opcode op, void *local, uint32_t len, uint32_t lkey, uint64_t remote,
                uint32_t rkey, uint32_t imm, unsigned flags, uint64_t wr_id) {
  struct ibv_sge sge = {.addr = (uintptr_t)local, .length = len, .lkey = lkey};
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = flags | IBV_SEND_SIGNALED;
  wr.imm_data = htonl(imm);
  if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
    wr.wr.atomic.remote_addr = remote;
    wr.wr.atomic.rkey = rkey;
  } else {
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = rkey;
  }
  return ibv_post_send(q->qp, &wr, &bad);
}

static int post_atomic(struct qp *q, enum ibv_wr_opcode op, uint64_t *result, uint32_t lkey, uint64_t remote,
                       uint32_t rkey, uint64_t compare_add, uint64_t swap, uint64_t wr_id) {
  struct ibv_sge sge = {.addr = (uintptr_t)result, .length = 8, .lkey = lkey};
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.atomic.remote_addr = remote;
  wr.wr.atomic.rkey = rkey;
  wr.wr.atomic.compare_add = compare_add;
  wr.wr.atomic.swap = swap;
  return ibv_post_send(q->qp, &wr, &bad);
}

static int post_recv(struct qp *q, void *addr, uint32_t len, uint32_t lkey, uint64_t wr_id) {
  struct ibv_sge sge = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
  struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;
  return ibv_post_recv(q->qp, &wr, &bad);
}

/* Waits for n completions on cq; returns how many came. */
static int wait_wc(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
  int got = 0;
  const uint64_t until = now_ms() + TIMEOUT_MS;
  while (got < n && now_ms() < until) {
    const int r = ibv_poll_cq(cq, n - got, wc + got);
    if (r < 0) return got;
    got += r;
  }
  return got;
}

/* The data of message `seed`: a block of PATTERN_BLOCK bytes from a linear
 * congruential generator, repeated. The block's length is prime, so a byte
 * landing at the wrong offset (a packet placed one MTU off) shows; a peer in
 * another language (tests/interop/verbs_peer.py) builds it just as cheaply. */
#define PATTERN_BLOCK 4099u
static void fill(uint8_t *p, uint32_t len, uint32_t seed) {
  uint8_t block[PATTERN_BLOCK];
  uint32_t x = seed * 2654435761u + 1;
  for (uint32_t i = 0; i < PATTERN_BLOCK; ++i) {
    x = x * 1103515245u + 12345u;
    block[i] = (uint8_t)(x >> 16);
  }
  for (uint32_t off = 0; off < len; off += PATTERN_BLOCK) {
    memcpy(p + off, block, len - off < PATTERN_BLOCK ? len - off : PATTERN_BLOCK);
  }
}

static int same(const uint8_t *p, uint32_t len, uint32_t seed) {
  uint8_t *want = malloc(len ? len : 1);
  fill(want, len, seed);
  const int r = memcmp(p, want, len) == 0;
  free(want);
  return r;
}

/* ------------------------------------------------------------------ the message script */

/* Sizes around the MTU boundaries and beyond; each message has its own region. */
static const uint32_t kSizes[] = {0, 1, 63, 64, 1023, 1024, 1025, 4095, 4096, 4097, 65536, 262144, 1048576};
#define NSIZES (sizeof kSizes / sizeof kSizes[0])
/* Regions: the requester's sources at 0, WRITE/READ targets at 2 MiB, READ-backs at
 * 4 MiB (one message at a time each), a region per receive from 8 MiB (RECV_OFF, the
 * WRITE_WITH_IMM targets too), atomic results at 13 MiB, the error cases' at 14 MiB. */
#define SRC_OFF 0
#define DST_OFF (2u << 20)
#define BACK_OFF (4u << 20)
#define RECV_OFF (8u << 20)
#define RESULTS_OFF (13u << 20)
#define ERRORS_OFF (14u << 20)
#define IOVA_OFF (15u << 20)

enum kind { K_WRITE, K_READ, K_SEND, K_SEND_IMM, K_WRITE_IMM, K_KINDS };
static const char *kind_name[] = {"WRITE", "READ", "SEND", "SEND_WITH_IMM", "WRITE_WITH_IMM"};

static uint32_t seed_of(int kind, unsigned size_index) { return 1000u * (uint32_t)kind + size_index; }
static int consumes_recv(int kind) { return kind == K_SEND || kind == K_SEND_IMM || kind == K_WRITE_IMM; }
static unsigned sizes_used(void) {
  unsigned n = 0;
  while (n < NSIZES && kSizes[n] <= opt_sizes_max) ++n;
  return n;
}
/* Where the receive (or the WRITE_WITH_IMM target) of message (kind, size) lies,
 * from RECV_OFF: each its own 4 KiB-aligned region, the same on both sides. */
static uint32_t slot_off(int kind, unsigned size_index) {
  uint32_t off = RECV_OFF;
  for (int k = 0; k < K_KINDS; ++k) {
    if (!consumes_recv(k)) continue;
    for (unsigned i = 0; i < sizes_used(); ++i) {
      if (k == kind && i == size_index) return off;
      off += (kSizes[i] + 4095) & ~4095u;
      if (kSizes[i] == 0) off += 4096;
    }
  }
  return off;
}

/* The requester's side of every opcode at every size to a peer; WRITEs are read
 * back (their bytes landed), READs compared. Receives are the responder's to check. */
static void run_script(struct dev *d, struct qp *q, const struct peer *p) {
  struct ibv_wc wc;
  const unsigned used = sizes_used();
  for (int k = 0; k < K_KINDS; ++k) {
    for (unsigned i = 0; i < used; ++i) {
      const uint32_t len = kSizes[i];
      const uint32_t seed = seed_of(k, i);
      uint8_t *src = d->buf + SRC_OFF;
      const uint64_t dst = p->addr + (k == K_WRITE_IMM ? slot_off(k, i) : DST_OFF);
      fill(src, len, seed);
      int rc;
      switch (k) {
        case K_WRITE: rc = post(q, IBV_WR_RDMA_WRITE, src, len, d->mr->lkey, dst, p->rkey, 0, 0, 1); break;
        case K_READ:
          /* The target region holds what the last WRITE put there (the largest size):
           * every prefix of that pattern is the pattern of its length. */
          memset(d->buf + BACK_OFF, 0xee, len);
          rc = post(q, IBV_WR_RDMA_READ, d->buf + BACK_OFF, len, d->mr->lkey, dst, p->rkey, 0, 0, 1);
          break;
        case K_SEND: rc = post(q, IBV_WR_SEND, src, len, d->mr->lkey, 0, 0, 0, 0, 1); break;
        case K_SEND_IMM: rc = post(q, IBV_WR_SEND_WITH_IMM, src, len, d->mr->lkey, 0, 0, seed, 0, 1); break;
        default: rc = post(q, IBV_WR_RDMA_WRITE_WITH_IMM, src, len, d->mr->lkey, dst, p->rkey, seed, 0, 1); break;
      }
      CHECK(rc == 0, "%s %u: ibv_post_send: %s", kind_name[k], len, strerror(rc));
      const int n = wait_wc(q->cq, 1, &wc);
      CHECK(n == 1 && wc.status == IBV_WC_SUCCESS, "%s %u: completion %s", kind_name[k], len,
            n == 1 ? ibv_wc_status_str(wc.status) : "missing");
      if (n != 1 || wc.status != IBV_WC_SUCCESS) return;
      if (k == K_READ) {
        CHECK(same(d->buf + BACK_OFF, len, seed_of(K_WRITE, used - 1)), "READ %u: bytes differ from what WRITE put",
              len);
        CHECK(wc.opcode == IBV_WC_RDMA_READ, "READ %u: opcode %d", len, wc.opcode);
      }
      if (k == K_WRITE) {
        /* Read it back into another region and compare. */
        memset(d->buf + BACK_OFF, 0xee, len);
        rc = post(q, IBV_WR_RDMA_READ, d->buf + BACK_OFF, len, d->mr->lkey, dst, p->rkey, 0, 0, 2);
        const int m = rc == 0 ? wait_wc(q->cq, 1, &wc) : 0;
        CHECK(m == 1 && wc.status == IBV_WC_SUCCESS && same(d->buf + BACK_OFF, len, seed),
              "WRITE %u: the bytes read back differ", len);
      }
    }
  }
}

/* The responder's side: a receive per SEND, SEND_WITH_IMM and WRITE_WITH_IMM of the
 * script, each into its own region, checked as the completions come. */
struct receiver {
  struct dev *d;
  struct qp *q;
  int expected, received;
};

static void post_script_receives(struct receiver *r) {
  for (int k = 0; k < K_KINDS; ++k) {
    if (!consumes_recv(k)) continue;
    for (unsigned i = 0; i < sizes_used(); ++i) {
      /* Room for more than the message: a SEND reports its own length. */
      const uint32_t room = k == K_WRITE_IMM ? 0 : (kSizes[i] + 4095) & ~4095u;
      const int rc = post_recv(r->q, r->d->buf + slot_off(k, i), room, r->d->mr->lkey, ((uint64_t)k << 32) | i);
      CHECK(rc == 0, "ibv_post_recv: %s", strerror(rc));
      ++r->expected;
    }
  }
}

/* Checks the receive completions as they come; each message has its own region. */
static void check_receives(struct receiver *r, int wait_all) {
  struct ibv_wc wc;
  const uint64_t until = now_ms() + TIMEOUT_MS;
  while (r->received < r->expected && (!wait_all ? 1 : now_ms() < until)) {
    const int n = ibv_poll_cq(r->q->cq, 1, &wc);
    if (n == 0) {
      if (!wait_all) return;
      continue;
    }
    if (n < 0) break;
    const int k = (int)(wc.wr_id >> 32);
    const unsigned i = (unsigned)(wc.wr_id & 0xffffffff);
    const uint32_t len = kSizes[i];
    const uint32_t seed = seed_of(k, i);
    ++r->received;
    CHECK(wc.status == IBV_WC_SUCCESS, "receive for %s %u: %s", kind_name[k], len, ibv_wc_status_str(wc.status));
    CHECK(wc.byte_len == len, "receive for %s %u: byte_len %u", kind_name[k], len, wc.byte_len);
    const int imm = k != K_SEND;
    CHECK(!!(wc.wc_flags & IBV_WC_WITH_IMM) == imm, "receive for %s %u: IBV_WC_WITH_IMM %s", kind_name[k], len,
          imm ? "missing" : "set");
    if (imm) CHECK(ntohl(wc.imm_data) == seed, "receive for %s %u: imm 0x%x", kind_name[k], len, ntohl(wc.imm_data));
    CHECK(wc.opcode == (k == K_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV), "receive for %s %u: opcode %d",
          kind_name[k], len, wc.opcode);
    CHECK(same(r->d->buf + slot_off(k, i), len, seed), "%s %u: the bytes that arrived differ", kind_name[k], len);
  }
}

/* ------------------------------------------------------------------ atomics under contention */

static void run_atomics(struct dev *d, struct qp *qs, int nqp, const struct peer *p) {
  /* ATOMIC_ADDS fetch-and-adds of 1 from each QP, interleaved, into one counter. */
  uint64_t *results = (uint64_t *)(d->buf + RESULTS_OFF);
  memset(results, 0xff, (size_t)nqp * ATOMIC_ADDS * 8);
  int outstanding[ATOMIC_QPS] = {0}, posted[ATOMIC_QPS] = {0}, done = 0;
  const int total = nqp * ATOMIC_ADDS;
  const uint64_t until = now_ms() + 4 * TIMEOUT_MS;
  while (done < total && now_ms() < until) {
    for (int j = 0; j < nqp; ++j) {
      while (posted[j] < ATOMIC_ADDS && outstanding[j] < 16) {
        const int idx = j * ATOMIC_ADDS + posted[j];
        const int rc = post_atomic(&qs[j], IBV_WR_ATOMIC_FETCH_AND_ADD, &results[idx], d->mr->lkey, p[j].counter,
                                   p[j].counter_rkey, 1, 0, (uint64_t)idx);
        if (rc != 0) {
          fail("FETCH_AND_ADD post: %s", strerror(rc));
          return;
        }
        ++posted[j];
        ++outstanding[j];
      }
      struct ibv_wc wc[16];
      const int n = ibv_poll_cq(qs[j].cq, 16, wc);
      for (int i = 0; i < n; ++i) {
        CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_FETCH_ADD, "FETCH_AND_ADD: %s",
              ibv_wc_status_str(wc[i].status));
        --outstanding[j];
        ++done;
      }
    }
  }
  CHECK(done == total, "atomics: %d of %d completed", done, total);
  /* Every value the counter held was handed out exactly once. */
  char *seen = calloc((size_t)total, 1);
  int dup = 0, wild = 0;
  for (int i = 0; i < total; ++i) {
    if (results[i] >= (uint64_t)total) {
      ++wild;
    } else if (seen[results[i]]++) {
      ++dup;
    }
  }
  free(seen);
  CHECK(wild == 0 && dup == 0, "atomics: %d values out of range, %d handed out twice", wild, dup);
  /* Compare-and-swap: a match swaps, a mismatch returns the value and leaves it. */
  uint64_t *r = results;
  struct ibv_wc wc;
  post_atomic(&qs[0], IBV_WR_ATOMIC_CMP_AND_SWP, r, d->mr->lkey, p[0].counter, p[0].counter_rkey, (uint64_t)total,
              777, 1);
  CHECK(wait_wc(qs[0].cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS && *r == (uint64_t)total,
        "CMP_AND_SWP (match): original %llu, want %d", (unsigned long long)*r, total);
  post_atomic(&qs[0], IBV_WR_ATOMIC_CMP_AND_SWP, r, d->mr->lkey, p[0].counter, p[0].counter_rkey, 1, 5, 2);
  CHECK(wait_wc(qs[0].cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS && *r == 777,
        "CMP_AND_SWP (mismatch): original %llu, want 777", (unsigned long long)*r);
}

/* ------------------------------------------------------------------ one process: everything, errors too */

static void expect_status(struct qp *q, enum ibv_wc_status want, const char *what) {
  struct ibv_wc wc;
  const int n = wait_wc(q->cq, 1, &wc);
  CHECK(n == 1 && wc.status == want, "%s: %s, want %s", what, n == 1 ? ibv_wc_status_str(wc.status) : "no completion",
        ibv_wc_status_str(want));
}

static void drain(struct qp *q) {
  struct ibv_wc wc[16];
  const uint64_t until = now_ms() + 200;
  while (now_ms() < until) {
    if (ibv_poll_cq(q->cq, 16, wc) < 0) break;
  }
}

/* Waits (up to TIMEOUT_MS) for an asynchronous event of `type`. */
static int wait_async(struct dev *d, enum ibv_event_type type) {
  const uint64_t until = now_ms() + TIMEOUT_MS;
  while (now_ms() < until) {
    struct pollfd pfd = {.fd = d->ctx->async_fd, .events = POLLIN};
    if (poll(&pfd, 1, 100) != 1) continue;
    struct ibv_async_event e;
    if (ibv_get_async_event(d->ctx, &e) != 0) return 0;
    const int hit = e.event_type == type;
    ibv_ack_async_event(&e);
    if (hit) return 1;
  }
  return 0;
}

/* ------------------------------------------------------------------ more IBA rules */

/* A receive whose second SGE names no MR: the SEND is refused, and not one byte
 * lands in the first SGE either (every SGE is checked before any is written). */
static void bad_receive_sge(struct dev *d, struct qp *a, struct qp *b, const struct peer *pa, const struct peer *pb) {
  connect_qp(d, a, pb, 7);
  connect_qp(d, b, pa, 7);
  uint8_t *dst = d->buf + ERRORS_OFF;
  memset(dst, 0x22, 8192);
  struct ibv_sge sge[2] = {{(uintptr_t)dst, 1024, d->mr->lkey}, {(uintptr_t)dst + 4096, 1024, d->mr->lkey ^ 0x770000}};
  struct ibv_recv_wr rw = {.wr_id = 21, .sg_list = sge, .num_sge = 2}, *rbad;
  CHECK(ibv_post_recv(b->qp, &rw, &rbad) == 0, "bad receive SGE: ibv_post_recv");
  fill(d->buf + SRC_OFF, 2000, 21);
  post(a, IBV_WR_SEND, d->buf + SRC_OFF, 2000, d->mr->lkey, 0, 0, 0, 0, 1);
  expect_status(b, IBV_WC_LOC_PROT_ERR, "SEND into a receive with a bad second SGE (receiver)");
  expect_status(a, IBV_WC_REM_OP_ERR, "SEND into a receive with a bad second SGE (sender)");
  for (int i = 0; i < 8192; ++i) {
    if (dst[i] != 0x22) {
      fail("a SEND refused for a bad receive SGE wrote byte %d of the first SGE", i);
      break;
    }
  }
  drain(a);
  drain(b);
}

/* rnr_retry 7 means forever: a SEND with no receive waits (RNR NAK after RNR NAK,
 * far more than 7) and completes once a receive is posted. */
static void rnr_forever(struct dev *d, struct qp *a, struct qp *b, const struct peer *pa, const struct peer *pb) {
  connect_qp(d, a, pb, 7);
  connect_qp(d, b, pa, 7);
  post(a, IBV_WR_SEND, d->buf + SRC_OFF, 10, d->mr->lkey, 0, 0, 0, 0, 1);
  struct ibv_wc wc;
  int early = 0;
  const uint64_t until = now_ms() + 500;
  while (!early && now_ms() < until) early = ibv_poll_cq(a->cq, 1, &wc) != 0;
  CHECK(!early, "rnr_retry 7: the SEND completed (%s) before any receive was posted",
        early ? ibv_wc_status_str(wc.status) : "");
  post_recv(b, d->buf + DST_OFF, 64, d->mr->lkey, 5);
  expect_status(a, IBV_WC_SUCCESS, "rnr_retry 7: the SEND, once a receive is posted 500 ms later");
  expect_status(b, IBV_WC_SUCCESS, "rnr_retry 7: the receive");
}

/* A send CQ that overflows: IBV_EVENT_CQ_ERR, and the QP that completes into it
 * is in the error state. */
static void cq_overflow_errors_qp(struct dev *d) {
  struct ibv_cq *tiny = ibv_create_cq(d->ctx, 2, NULL, NULL, 0);
  struct ibv_cq *rcq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
  struct ibv_qp_init_attr xa = {.send_cq = tiny, .recv_cq = rcq, .cap = {8, 8, 1, 1, 0}, .qp_type = IBV_QPT_RC};
  struct qp x = {.qp = tiny && rcq ? ibv_create_qp(d->pd, &xa) : NULL, .cq = tiny, .psn = 7};
  CHECK(x.qp != NULL, "CQ overflow: a QP on a 2-entry send CQ");
  if (x.qp == NULL) return;
  struct qp y = make_qp(d, 8, 16, 0);
  struct peer px = describe(d, &x), py = describe(d, &y);
  connect_qp(d, &x, &py, 7);
  connect_qp(d, &y, &px, 7);
  for (int i = 0; i < 6; ++i) post(&x, IBV_WR_RDMA_WRITE, d->buf, 64, d->mr->lkey, py.addr + DST_OFF, py.rkey, 0, 0, i);
  CHECK(wait_async(d, IBV_EVENT_CQ_ERR), "CQ overflow: no IBV_EVENT_CQ_ERR");
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qi;
  CHECK(ibv_query_qp(x.qp, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_ERR,
        "CQ overflow: the QP completing into it is in state %d, want IBV_QPS_ERR", (int)qa.qp_state);
  ibv_destroy_qp(x.qp);
  ibv_destroy_qp(y.qp);
  ibv_destroy_cq(y.cq);
  ibv_destroy_cq(tiny);
  ibv_destroy_cq(rcq);
}

/* A path MTU above what the port's frames carry is refused at RTR (EINVAL), and
 * the QP stays in INIT. Runs where the port's active MTU is below 4096. */
static void path_mtu_too_large(struct dev *d) {
  if (d->port.active_mtu >= IBV_MTU_4096) return;
  struct qp m = make_qp(d, 8, 16, 0);
  struct peer pm = describe(d, &m);
  const enum ibv_mtu keep = d->mtu;
  d->mtu = (enum ibv_mtu)(d->port.active_mtu + 1);
  errno = 0;
  const int rc = connect_qp(d, &m, &pm, 7);
  d->mtu = keep;
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qi;
  CHECK(rc != 0 && ibv_query_qp(m.qp, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_INIT,
        "path MTU %d above the port's %d: connect rc %d, state %d", 128 << (keep + 1), 128 << keep, rc,
        (int)qa.qp_state);
  printf("verbs_check: path MTU %d refused on a port whose active MTU is %d\n", 128 << (keep + 1), 128 << keep);
  ibv_destroy_qp(m.qp);
  ibv_destroy_cq(m.cq);
}

/* ibv_reg_mr_iova2: the peer addresses the region by the IOVA it was given, not by
 * the virtual address; the virtual address under that rkey is out of bounds. */
static void iova_region(struct dev *d, struct qp *a, struct qp *b, const struct peer *pa, const struct peer *pb) {
  const uint64_t iova = 0x100000000ull;
  uint8_t *win = d->buf + IOVA_OFF;
  memset(win, 0, 65536);
  struct ibv_mr *im = ibv_reg_mr_iova2(d->pd, win, 65536, iova,
                                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  CHECK(im != NULL, "ibv_reg_mr_iova2: %s", strerror(errno));
  if (im == NULL) return;
  connect_qp(d, a, pb, 7);
  connect_qp(d, b, pa, 7);
  fill(d->buf + SRC_OFF, 5000, 31);
  post(a, IBV_WR_RDMA_WRITE, d->buf + SRC_OFF, 5000, d->mr->lkey, iova + 1000, im->rkey, 0, 0, 1);
  expect_status(a, IBV_WC_SUCCESS, "WRITE to an IOVA-addressed region");
  CHECK(same(win + 1000, 5000, 31), "WRITE to IOVA 0x%llx + 1000: the bytes are not at the region's offset 1000",
        (unsigned long long)iova);
  memset(d->buf + BACK_OFF, 0, 5000);
  post(a, IBV_WR_RDMA_READ, d->buf + BACK_OFF, 5000, d->mr->lkey, iova + 1000, im->rkey, 0, 0, 2);
  expect_status(a, IBV_WC_SUCCESS, "READ from an IOVA-addressed region");
  CHECK(same(d->buf + BACK_OFF, 5000, 31), "READ from IOVA + 1000: bytes differ");
  post(a, IBV_WR_RDMA_WRITE, d->buf + SRC_OFF, 64, d->mr->lkey, (uintptr_t)win, im->rkey, 0, 0, 3);
  expect_status(a, IBV_WC_REM_ACCESS_ERR, "WRITE to the virtual address of an IOVA-addressed region");
  drain(a);
  drain(b);
  ibv_dereg_mr(im);
}

/* Several application threads on one device: two poll one CQ while a third posts
 * (every completion handed out exactly once), and one blocks in ibv_get_cq_event
 * until a completion arrives. */
#define MT_WRS 2000
struct poller {
  struct ibv_cq *cq;
  atomic_int *done;
  atomic_uchar *seen;
  int bad;
};

static void *poll_thread(void *arg) {
  struct poller *p = arg;
  const uint64_t until = now_ms() + 4 * TIMEOUT_MS;
  struct ibv_wc wc[8];
  while (atomic_load(p->done) < MT_WRS && now_ms() < until) {
    const int n = ibv_poll_cq(p->cq, 8, wc);
    if (n < 0) {
      ++p->bad;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id >= MT_WRS) {
        ++p->bad;
      } else {
        atomic_fetch_add(&p->seen[wc[i].wr_id], 1);
      }
      atomic_fetch_add(p->done, 1);
    }
  }
  return NULL;
}

struct waiter {
  struct ibv_comp_channel *ch;
  struct ibv_cq *cq;
  int got;
};

static void *event_thread(void *arg) {
  struct waiter *w = arg;
  struct ibv_cq *cq = NULL;
  void *ctx = NULL;
  w->got = ibv_get_cq_event(w->ch, &cq, &ctx) == 0 && cq == w->cq; /* blocks */
  if (w->got) ibv_ack_cq_events(cq, 1);
  return NULL;
}

static void threads(struct dev *d) {
  struct qp s = make_qp(d, 64, 256, 0), t = make_qp(d, 64, 256, 0);
  struct peer ps = describe(d, &s), pt = describe(d, &t);
  connect_qp(d, &s, &pt, 7);
  connect_qp(d, &t, &ps, 7);
  atomic_int done = 0;
  static atomic_uchar seen[MT_WRS];
  for (int i = 0; i < MT_WRS; ++i) atomic_store(&seen[i], 0);
  struct poller p[2] = {{s.cq, &done, seen, 0}, {s.cq, &done, seen, 0}};
  pthread_t th[2];
  for (int i = 0; i < 2; ++i) pthread_create(&th[i], NULL, poll_thread, &p[i]);
  const uint64_t until = now_ms() + 4 * TIMEOUT_MS;
  for (int i = 0; i < MT_WRS && now_ms() < until;) {
    if (i - atomic_load(&done) >= 64) continue; /* the send queue is full */
    if (post(&s, IBV_WR_RDMA_WRITE, d->buf + SRC_OFF, 256, d->mr->lkey, pt.addr + DST_OFF, pt.rkey, 0, 0,
             (uint64_t)i) == 0) {
      ++i;
    }
  }
  for (int i = 0; i < 2; ++i) pthread_join(th[i], NULL);
  int once = 0;
  for (int i = 0; i < MT_WRS; ++i) once += atomic_load(&seen[i]) == 1;
  CHECK(p[0].bad == 0 && p[1].bad == 0 && once == MT_WRS && atomic_load(&done) == MT_WRS,
        "two threads polling one CQ: %d of %d completions seen exactly once, %d bad", once, MT_WRS, p[0].bad + p[1].bad);

  struct ibv_comp_channel *ch = ibv_create_comp_channel(d->ctx);
  struct ibv_cq *ecq = ch ? ibv_create_cq(d->ctx, 16, NULL, ch, 0) : NULL;
  struct ibv_qp_init_attr ea = {.send_cq = ecq, .recv_cq = ecq, .cap = {8, 8, 1, 1, 0}, .qp_type = IBV_QPT_RC};
  struct qp e = {.qp = ecq ? ibv_create_qp(d->pd, &ea) : NULL, .cq = ecq, .psn = 99};
  CHECK(e.qp != NULL, "a QP on a CQ with a completion channel");
  if (e.qp != NULL) {
    struct peer pe = describe(d, &e);
    connect_qp(d, &e, &pt, 7);
    connect_qp(d, &t, &pe, 7);
    ibv_req_notify_cq(ecq, 0);
    struct waiter w = {ch, ecq, 0};
    pthread_t wt;
    pthread_create(&wt, NULL, event_thread, &w);
    usleep(100000); /* the waiter is blocked in ibv_get_cq_event */
    post(&e, IBV_WR_RDMA_WRITE, d->buf + SRC_OFF, 64, d->mr->lkey, pt.addr + DST_OFF, pt.rkey, 0, 0, 1);
    pthread_join(wt, NULL);
    struct ibv_wc wc;
    CHECK(w.got && wait_wc(ecq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS,
          "a thread blocked in ibv_get_cq_event is woken by a completion another thread caused");
    ibv_destroy_qp(e.qp);
    ibv_destroy_cq(ecq);
    ibv_destroy_comp_channel(ch);
  }
  connect_qp(d, &t, &ps, 7);
}

/* ------------------------------------------------------------------ extended verbs */

/* Up to n completions of an extended CQ, read one at a time
 * (ibv_start_poll / ibv_next_poll / ibv_end_poll and the accessors). */
struct xwc {
  uint64_t wr_id;
  enum ibv_wc_status status;
  enum ibv_wc_opcode opcode;
  uint32_t qp_num, byte_len, flags;
};
static int poll_ex(struct ibv_cq_ex *cq, int n, struct xwc *out) {
  int got = 0;
  const uint64_t until = now_ms() + TIMEOUT_MS;
  struct ibv_poll_cq_attr attr = {.comp_mask = 0};
  while (got < n && now_ms() < until) {
    int rc = ibv_start_poll(cq, &attr);
    if (rc == ENOENT) continue;
    if (rc != 0) return got;
    do {
      out[got].wr_id = cq->wr_id;
      out[got].status = cq->status;
      out[got].opcode = ibv_wc_read_opcode(cq);
      out[got].qp_num = ibv_wc_read_qp_num(cq);
      out[got].byte_len = ibv_wc_read_byte_len(cq);
      out[got].flags = ibv_wc_read_wc_flags(cq);
      ++got;
    } while (got < n && ibv_next_poll(cq) == 0);
    ibv_end_poll(cq);
  }
  return got;
}

/* A QP made with send-ops flags, driven by the ibv_wr_* API; its completions
 * read from an extended CQ; the refusals of what tita lacks (EOPNOTSUPP). */
static void extended_verbs(struct dev *d) {
  const uint32_t off = ERRORS_OFF + (512u << 10);
  uint8_t *src = d->buf + off, *dst = src + 8192, *back = src + 16384, *rbuf = src + 24576;
  uint64_t *word = (uint64_t *)(src + 32768), *result = (uint64_t *)(src + 32768 + 64);
  struct ibv_cq_init_attr_ex ca = {.cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS};
  struct ibv_cq_ex *xcq = ibv_create_cq_ex(d->ctx, &ca);
  CHECK(xcq != NULL, "ibv_create_cq_ex with IBV_WC_STANDARD_FLAGS: %s", strerror(errno));
  if (xcq == NULL) return;
  struct ibv_qp_init_attr_ex xa = {
      .send_cq = ibv_cq_ex_to_cq(xcq), .recv_cq = ibv_cq_ex_to_cq(xcq),
      .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 4, .max_recv_sge = 4, .max_inline_data = 64},
      .qp_type = IBV_QPT_RC, .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, .pd = d->pd,
      .send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
                        IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD};
  struct qp x = {.qp = ibv_create_qp_ex(d->ctx, &xa), .cq = ibv_cq_ex_to_cq(xcq), .psn = 77};
  struct ibv_qp_ex *qx = x.qp != NULL ? ibv_qp_to_qp_ex(x.qp) : NULL;
  CHECK(qx != NULL, "ibv_create_qp_ex with send-ops flags and ibv_qp_to_qp_ex: %s", strerror(errno));
  if (qx == NULL) return;
  struct qp y = make_qp(d, 16, 64, 0);
  CHECK(ibv_qp_to_qp_ex(y.qp) == NULL, "a QP made without send-ops flags has no extended API");
  struct peer px = describe(d, &x), py = describe(d, &y);
  CHECK(connect_qp(d, &x, &py, 7) == 0 && connect_qp(d, &y, &px, 7) == 0, "connect the extended QP");
  const uint64_t yb = py.addr + off;  /* the same buffer, seen through y's peer description */
  fill(src, 3000, 4242);
  memset(dst, 0, 8192);
  memset(rbuf, 0, 256);
  *word = 1000;
  *result = 0;
  post_recv(&y, rbuf, 64, d->mr->lkey, 21);
  post_recv(&y, rbuf + 128, 64, d->mr->lkey, 22);

  /* One batch of four WRs: a WRITE of two SGEs, an inline SEND, a WRITE with
   * immediate, a fetch-and-add. */
  ibv_wr_start(qx);
  qx->wr_id = 1;
  qx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(qx, py.rkey, yb + 8192);
  struct ibv_sge two[2] = {{(uintptr_t)src, 1000, d->mr->lkey}, {(uintptr_t)(src + 1000), 2000, d->mr->lkey}};
  ibv_wr_set_sge_list(qx, 2, two);
  qx->wr_id = 2;
  ibv_wr_send(qx);
  ibv_wr_set_inline_data(qx, src + 100, 40);
  qx->wr_id = 3;
  ibv_wr_rdma_write_imm(qx, py.rkey, yb + 8192 + 4000, htonl(0xabc));
  ibv_wr_set_sge(qx, d->mr->lkey, (uintptr_t)src, 100);
  qx->wr_id = 4;
  ibv_wr_atomic_fetch_add(qx, py.rkey, yb + 32768, 5);
  ibv_wr_set_sge(qx, d->mr->lkey, (uintptr_t)result, 8);
  CHECK(ibv_wr_complete(qx) == 0, "ibv_wr_complete of four WRs");
  struct xwc w[4];
  memset(w, 0, sizeof w);
  const int got = poll_ex(xcq, 4, w);
  CHECK(got == 4, "extended CQ: %d of 4 completions", got);
  const enum ibv_wc_opcode want_op[4] = {IBV_WC_RDMA_WRITE, IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_FETCH_ADD};
  for (int i = 0; i < got; ++i) {
    CHECK(w[i].wr_id == (uint64_t)(i + 1) && w[i].status == IBV_WC_SUCCESS && w[i].opcode == want_op[i] &&
              w[i].qp_num == x.qp->qp_num,
          "extended completion %d: wr_id %llu status %d opcode %d qp %#x", i, (unsigned long long)w[i].wr_id,
          w[i].status, w[i].opcode, w[i].qp_num);
  }
  struct ibv_wc rw[2];
  CHECK(wait_wc(y.cq, 2, rw) == 2, "the receiver's two completions");
  CHECK(rw[0].wr_id == 21 && rw[0].opcode == IBV_WC_RECV && rw[0].byte_len == 40 && memcmp(rbuf, src + 100, 40) == 0,
        "the inline SEND's 40 bytes");
  CHECK(rw[1].wr_id == 22 && rw[1].opcode == IBV_WC_RECV_RDMA_WITH_IMM && (rw[1].wc_flags & IBV_WC_WITH_IMM) &&
            ntohl(rw[1].imm_data) == 0xabc,
        "the WRITE with immediate's completion and immediate");
  CHECK(same(dst, 3000, 4242), "the two-SGE WRITE's bytes");
  CHECK(same(dst + 4000, 100, 4242), "the WRITE with immediate's bytes");
  CHECK(*word == 1005 && *result == 1000, "fetch-and-add: %llu (want 1005), returned %llu (want 1000)",
        (unsigned long long)*word, (unsigned long long)*result);

  /* A READ back, then its completion through ibv_poll_cq on the same CQ. */
  memset(back, 0, 4096);
  ibv_wr_start(qx);
  qx->wr_id = 5;
  qx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_read(qx, py.rkey, yb + 8192);
  ibv_wr_set_sge(qx, d->mr->lkey, (uintptr_t)back, 3000);
  CHECK(ibv_wr_complete(qx) == 0, "ibv_wr_complete of a READ");
  struct ibv_wc one;
  CHECK(wait_wc(x.cq, 1, &one) == 1 && one.wr_id == 5 && one.status == IBV_WC_SUCCESS &&
            one.opcode == IBV_WC_RDMA_READ && same(back, 3000, 4242),
        "the READ through ibv_wr_*, polled with ibv_poll_cq");

  /* A batch's first error is ibv_wr_complete's answer, and nothing of it is
   * posted; an aborted batch posts nothing. */
  ibv_wr_start(qx);
  ibv_wr_set_sge(qx, d->mr->lkey, (uintptr_t)src, 8);
  CHECK(ibv_wr_complete(qx) == EINVAL, "an SGE with no WR before it: want EINVAL");
  struct ibv_sge five[5];
  for (int i = 0; i < 5; ++i) five[i] = (struct ibv_sge){(uintptr_t)(src + 8 * i), 8, d->mr->lkey};
  ibv_wr_start(qx);
  qx->wr_id = 6;
  ibv_wr_rdma_write(qx, py.rkey, yb + 8192);
  ibv_wr_set_sge(qx, d->mr->lkey, (uintptr_t)src, 8);
  qx->wr_id = 7;
  ibv_wr_rdma_write(qx, py.rkey, yb + 8192);
  ibv_wr_set_sge_list(qx, 5, five);
  CHECK(ibv_wr_complete(qx) == EINVAL, "five SGEs on a QP of four: want EINVAL");
  ibv_wr_start(qx);
  qx->wr_id = 8;
  ibv_wr_send(qx);
  ibv_wr_set_sge(qx, d->mr->lkey, (uintptr_t)src, 8);
  ibv_wr_abort(qx);
  ibv_wr_start(qx);
  qx->wr_id = 9;
  ibv_wr_rdma_write(qx, py.rkey, yb + 8192);
  ibv_wr_set_sge(qx, d->mr->lkey, (uintptr_t)src, 8);
  CHECK(ibv_wr_complete(qx) == 0, "a batch after the refused and aborted ones");
  CHECK(poll_ex(xcq, 1, w) == 1 && w[0].wr_id == 9 && w[0].status == IBV_WC_SUCCESS,
        "only the last batch's WR completed (wr_id %llu)", (unsigned long long)w[0].wr_id);

  /* What tita lacks: EOPNOTSUPP, as rdma-core's providers answer. */
  errno = 0;
  CHECK(ibv_reg_mr(d->pd, src, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND) == NULL && errno == EOPNOTSUPP,
        "ibv_reg_mr with IBV_ACCESS_MW_BIND: want EOPNOTSUPP (errno %d)", errno);
  errno = 0;
  CHECK(ibv_alloc_mw(d->pd, IBV_MW_TYPE_2) == NULL && errno == EOPNOTSUPP, "ibv_alloc_mw: want EOPNOTSUPP");
  struct ibv_cq_init_attr_ex ts = {.cqe = 8, .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP};
  errno = 0;
  CHECK(ibv_create_cq_ex(d->ctx, &ts) == NULL && errno == EOPNOTSUPP, "a CQ with timestamps: want EOPNOTSUPP");
  struct ibv_qp_init_attr_ex fa = xa;
  fa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
  fa.create_flags = 0;
  struct ibv_qp *plain = ibv_create_qp_ex(d->ctx, &fa);
  CHECK(plain != NULL, "ibv_create_qp_ex with create flags of none: %s", strerror(errno));
  if (plain) ibv_destroy_qp(plain);
  fa.create_flags = IBV_QP_CREATE_SCATTER_FCS;
  errno = 0;
  CHECK(ibv_create_qp_ex(d->ctx, &fa) == NULL && errno == EOPNOTSUPP, "a create flag: want EOPNOTSUPP");
  fa = xa;
  fa.send_ops_flags |= IBV_QP_EX_WITH_BIND_MW;
  errno = 0;
  CHECK(ibv_create_qp_ex(d->ctx, &fa) == NULL && errno == EOPNOTSUPP, "send-ops flag BIND_MW: want EOPNOTSUPP");
  ibv_destroy_qp(x.qp);
  ibv_destroy_qp(y.qp);
  ibv_destroy_cq(y.cq);
  CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(xcq)) == 0, "destroy the extended CQ");
}

/* ------------------------------------------------------------------ loopback */

/* ------------------------------------------------------------------ shared receive queues */

/* Two QPs share one SRQ: SENDs from two peers take its receives in the order
 * they arrive, the limit event comes once when fewer than the armed limit
 * remain, an empty SRQ holds a SEND back (RNR) until a receive is posted, and
 * the SRQ cannot go while its QPs exist. */
static void shared_receive_queue(struct dev *d) {
  struct ibv_device_attr da;
  CHECK(ibv_query_device(d->ctx, &da) == 0 && da.max_srq > 0 && da.max_srq_wr >= 1024 && da.max_srq_sge >= 1,
        "SRQ: ibv_query_device max_srq %d max_srq_wr %d max_srq_sge %d", da.max_srq, da.max_srq_wr, da.max_srq_sge);
  struct ibv_srq_init_attr sa = {.srq_context = (void *)0x5157, .attr = {.max_wr = 16, .max_sge = 2}};
  struct ibv_srq *srq = ibv_create_srq(d->pd, &sa);
  CHECK(srq != NULL, "ibv_create_srq: %s", strerror(errno));
  if (srq == NULL) return;
  CHECK(sa.attr.max_wr >= 16 && srq->srq_context == (void *)0x5157 && srq->pd == d->pd, "SRQ: attributes back");
  uint32_t srqn = 0;
  CHECK(ibv_get_srq_num(srq, &srqn) == 0, "ibv_get_srq_num");
  struct qp s[2], r[2];
  for (int i = 0; i < 2; ++i) {
    s[i] = make_qp(d, 16, 64, 0);
    r[i].cq = ibv_create_cq(d->ctx, 64, NULL, NULL, 0);
    struct ibv_qp_init_attr a = {.send_cq = r[i].cq, .recv_cq = r[i].cq, .srq = srq,
                                 .cap = {.max_send_wr = 16, .max_send_sge = 1}, .qp_type = IBV_QPT_RC};
    r[i].qp = ibv_create_qp(d->pd, &a);
    r[i].psn = (uint32_t)lrand48() & 0xffffff;
    CHECK(r[i].qp != NULL && r[i].qp->srq == srq, "ibv_create_qp with an SRQ: %s", strerror(errno));
    if (r[i].qp == NULL) return;
    struct peer ps = describe(d, &s[i]), pr = describe(d, &r[i]);
    CHECK(connect_qp(d, &s[i], &pr, 7) == 0 && connect_qp(d, &r[i], &ps, 7) == 0, "SRQ: connect");
  }
  uint8_t *dst = d->buf + ERRORS_OFF, *src = d->buf + SRC_OFF;
  const uint32_t slot = 8192;
  struct ibv_recv_wr *bad;
  for (uint64_t k = 0; k < 4; ++k) {
    struct ibv_sge sge = {(uintptr_t)(dst + k * slot), slot, d->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = 100 + k, .sg_list = &sge, .num_sge = 1};
    CHECK(ibv_post_srq_recv(srq, &wr, &bad) == 0, "ibv_post_srq_recv %d", (int)k);
  }
  {
    struct ibv_sge sge = {(uintptr_t)dst, 64, d->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
    CHECK(ibv_post_recv(r[0].qp, &wr, &bad) != 0, "ibv_post_recv on a QP of an SRQ: want an error");
  }
  struct ibv_srq_attr qa = {.srq_limit = 3};
  CHECK(ibv_modify_srq(srq, &qa, IBV_SRQ_LIMIT) == 0, "ibv_modify_srq: arm the limit");
  qa.max_wr = 2;
  CHECK(ibv_modify_srq(srq, &qa, IBV_SRQ_MAX_WR) == EINVAL, "ibv_modify_srq: max_wr below the queued: want EINVAL");
  memset(&qa, 0, sizeof qa);
  CHECK(ibv_query_srq(srq, &qa) == 0 && qa.srq_limit == 3 && qa.max_wr >= 16, "ibv_query_srq: limit %u", qa.srq_limit);
  /* Four SENDs, the peers taking turns, of 1 to 3 packets each. */
  const uint32_t lens[4] = {100, 5000, 1, 4097};
  for (int k = 0; k < 4; ++k) {
    fill(src, lens[k], 500 + (uint32_t)k);
    post(&s[k % 2], IBV_WR_SEND, src, lens[k], d->mr->lkey, 0, 0, 0, 0, (uint64_t)k);
    struct ibv_wc wc;
    expect_status(&s[k % 2], IBV_WC_SUCCESS, "SRQ: SEND");
    const int n = wait_wc(r[k % 2].cq, 1, &wc);
    CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 100 + (uint64_t)k && wc.byte_len == lens[k] &&
              wc.qp_num == r[k % 2].qp->qp_num,
          "SRQ: message %d: receive %s wr_id %lu (want %d) byte_len %u", k, n ? ibv_wc_status_str(wc.status) : "none",
          n ? (unsigned long)wc.wr_id : 0ul, 100 + k, n ? wc.byte_len : 0);
    CHECK(same(dst + (size_t)k * slot, lens[k], 500 + (uint32_t)k), "SRQ: message %d's bytes", k);
  }
  CHECK(wait_async(d, IBV_EVENT_SRQ_LIMIT_REACHED), "SRQ: no IBV_EVENT_SRQ_LIMIT_REACHED");
  CHECK(ibv_query_srq(srq, &qa) == 0 && qa.srq_limit == 0, "SRQ: the limit disarmed after its event: %u", qa.srq_limit);
  /* Empty: the SEND waits (RNR NAKs, rnr_retry 7) until a receive is posted. */
  post(&s[0], IBV_WR_SEND, src, 10, d->mr->lkey, 0, 0, 0, 0, 9);
  struct ibv_wc wc;
  int early = 0;
  const uint64_t until = now_ms() + 300;
  while (!early && now_ms() < until) early = ibv_poll_cq(s[0].cq, 1, &wc) != 0;
  CHECK(!early, "SRQ empty: the SEND completed before a receive was posted");
  {
    struct ibv_sge sge = {(uintptr_t)dst, slot, d->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = 200, .sg_list = &sge, .num_sge = 1};
    CHECK(ibv_post_srq_recv(srq, &wr, &bad) == 0, "ibv_post_srq_recv after RNR");
  }
  expect_status(&s[0], IBV_WC_SUCCESS, "SRQ: the SEND after RNR");
  CHECK(wait_wc(r[0].cq, 1, &wc) == 1 && wc.wr_id == 200 && wc.status == IBV_WC_SUCCESS, "SRQ: the receive after RNR");
  CHECK(ibv_destroy_srq(srq) == EBUSY, "ibv_destroy_srq with QPs: want EBUSY");
  for (int i = 0; i < 2; ++i) {
    CHECK(ibv_destroy_qp(r[i].qp) == 0 && ibv_destroy_qp(s[i].qp) == 0, "SRQ: destroy QPs");
    ibv_destroy_cq(r[i].cq);
    ibv_destroy_cq(s[i].cq);
  }
  CHECK(ibv_destroy_srq(srq) == 0, "ibv_destroy_srq");
}

static void loopback(void) {
  struct dev d;
  open_dev(&d);
  srand48(getpid());
  /* The data path: every opcode, every size, both ways checked. */
  struct qp a = make_qp(&d, 64, 256, 0), b = make_qp(&d, 64, 256, 0);
  struct peer pa = describe(&d, &a), pb = describe(&d, &b);
  CHECK(connect_qp(&d, &a, &pb, 7) == 0, "connect: %s", strerror(errno));
  CHECK(connect_qp(&d, &b, &pa, 7) == 0, "connect: %s", strerror(errno));
  struct receiver r = {.d = &d, .q = &b};
  post_script_receives(&r);
  /* In one process the receiver is checked after each message: run the script with
   * receive checks in between by giving the loop its own turns. */
  run_script(&d, &a, &pb);
  check_receives(&r, 1);
  CHECK(r.received == r.expected, "receives: %d of %d", r.received, r.expected);

  /* Scatter/gather: three SGEs out, four in, across their boundaries. */
  {
    uint8_t *src = d.buf, *dst = d.buf + BACK_OFF;
    fill(src, 7100, 77);
    memset(dst, 0, 8192);
    struct ibv_sge out[3] = {{(uintptr_t)src, 100, d.mr->lkey}, {(uintptr_t)(src + 100), 2000, d.mr->lkey},
                             {(uintptr_t)(src + 2100), 5000, d.mr->lkey}};
    struct ibv_sge in[4] = {{(uintptr_t)dst, 3000, d.mr->lkey}, {(uintptr_t)(dst + 4000), 3000, d.mr->lkey},
                            {(uintptr_t)(dst + 7000), 1000, d.mr->lkey}, {(uintptr_t)(dst + 8000), 192, d.mr->lkey}};
    struct ibv_recv_wr rw = {.wr_id = 5, .sg_list = in, .num_sge = 4}, *rbad;
    struct ibv_send_wr sw, *sbad;
    memset(&sw, 0, sizeof sw);
    sw.wr_id = 6;
    sw.sg_list = out;
    sw.num_sge = 3;
    sw.opcode = IBV_WR_SEND;
    sw.send_flags = IBV_SEND_SIGNALED;
    CHECK(ibv_post_recv(b.qp, &rw, &rbad) == 0 && ibv_post_send(a.qp, &sw, &sbad) == 0, "SGE lists: post");
    struct ibv_wc wc[2];
    const int n = wait_wc(a.cq, 1, wc) + wait_wc(b.cq, 1, wc + 1);
    CHECK(n == 2 && wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS && wc[1].byte_len == 7100,
          "SGE lists: completions");
    CHECK(memcmp(dst, src, 3000) == 0 && memcmp(dst + 4000, src + 3000, 3000) == 0 &&
              memcmp(dst + 7000, src + 6000, 1000) == 0 && memcmp(dst + 8000, src + 7000, 100) == 0,
          "SGE lists: bytes landed in the wrong places");
  }

  /* Inline data: the source may change right after ibv_post_send. */
  {
    struct qp ia = make_qp(&d, 16, 64, 128), ib = make_qp(&d, 16, 64, 0);
    struct peer pia = describe(&d, &ia), pib = describe(&d, &ib);
    connect_qp(&d, &ia, &pib, 7);
    connect_qp(&d, &ib, &pia, 7);
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qi;
    ibv_query_qp(ia.qp, &qa, IBV_QP_CAP, &qi);
    CHECK(qi.cap.max_inline_data >= 128, "inline: max_inline_data %u", qi.cap.max_inline_data);
    uint8_t *src = d.buf + 100;  /* not even aligned */
    fill(src, 100, 5);
    memset(d.buf + DST_OFF, 0, 128);
    CHECK(post(&ia, IBV_WR_RDMA_WRITE, src, 100, 0, pib.addr + DST_OFF, pib.rkey, 0, IBV_SEND_INLINE, 1) == 0,
          "inline: post");
    memset(src, 0, 100);
    expect_status(&ia, IBV_WC_SUCCESS, "inline WRITE");
    CHECK(same(d.buf + DST_OFF, 100, 5), "inline: the bytes delivered are not those at post time");
    CHECK(post(&ia, IBV_WR_RDMA_WRITE, src, 4096, 0, pib.addr, pib.rkey, 0, IBV_SEND_INLINE, 2) == EINVAL,
          "inline beyond max_inline_data: not EINVAL");
    ibv_destroy_qp(ia.qp);
    ibv_destroy_qp(ib.qp);
    ibv_destroy_cq(ia.cq);
    ibv_destroy_cq(ib.cq);
  }

  /* Atomics from several QPs at once. */
  {
    struct qp q[ATOMIC_QPS], t[ATOMIC_QPS];
    struct peer pt[ATOMIC_QPS];
    *d.counter = 0;
    for (int j = 0; j < ATOMIC_QPS; ++j) {
      q[j] = make_qp(&d, 64, 128, 0);
      t[j] = make_qp(&d, 64, 128, 0);
      struct peer pq = describe(&d, &q[j]);
      pt[j] = describe(&d, &t[j]);
      connect_qp(&d, &q[j], &pt[j], 7);
      connect_qp(&d, &t[j], &pq, 7);
    }
    run_atomics(&d, q, ATOMIC_QPS, pt);
    CHECK(*d.counter == 777, "atomics: the counter holds %llu, want 777", (unsigned long long)*d.counter);
  }

  /* ---- errors: each leaves the requester's QP in error; RESET and reconnect reuse it. */
  struct ibv_mr *half = ibv_reg_mr(d.pd, d.buf + ERRORS_OFF, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  CHECK(half != NULL, "reg_mr of a write-only region");
  memset(d.buf + ERRORS_OFF, 0x11, 8192);
  struct {
    const char *what;
    enum ibv_wr_opcode op;
    uint64_t remote;
    uint32_t rkey, len;
    enum ibv_wc_status want;
  } bad[] = {
      {"WRITE with a wrong rkey", IBV_WR_RDMA_WRITE, pb.addr, pb.rkey ^ 0x5500, 64, IBV_WC_REM_ACCESS_ERR},
      {"WRITE across the end of its region", IBV_WR_RDMA_WRITE, (uintptr_t)d.buf + ERRORS_OFF + 4000,
       half ? half->rkey : 0, 200, IBV_WC_REM_ACCESS_ERR},
      {"READ of a region without remote read", IBV_WR_RDMA_READ, (uintptr_t)d.buf + ERRORS_OFF,
       half ? half->rkey : 0, 64, IBV_WC_REM_ACCESS_ERR},
      {"WRITE past 2^64", IBV_WR_RDMA_WRITE, ~(uint64_t)0 - 16, pb.rkey, 64, IBV_WC_REM_ACCESS_ERR},
  };
  for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    connect_qp(&d, &a, &pb, 7);
    connect_qp(&d, &b, &pa, 7);
    uint8_t *l = d.buf + SRC_OFF;
    fill(l, bad[i].len, 9);
    CHECK(post(&a, bad[i].op, l, bad[i].len, d.mr->lkey, bad[i].remote, bad[i].rkey, 0, 0, 1) == 0, "%s: post",
          bad[i].what);
    expect_status(&a, bad[i].want, bad[i].what);
    drain(&a);
    drain(&b);
  }
  for (int i = 0; i < 8192; ++i) {
    if (d.buf[ERRORS_OFF + i] != 0x11) {
      fail("a refused WRITE changed byte %d", i);
      break;
    }
  }
  CHECK(wait_async(&d, IBV_EVENT_QP_ACCESS_ERR), "no IBV_EVENT_QP_ACCESS_ERR for the responder");

  /* A misaligned atomic is an invalid request. */
  connect_qp(&d, &a, &pb, 7);
  connect_qp(&d, &b, &pa, 7);
  uint64_t *res = (uint64_t *)(d.buf + SRC_OFF);
  post_atomic(&a, IBV_WR_ATOMIC_FETCH_AND_ADD, res, d.mr->lkey, pb.counter + 4, pb.counter_rkey, 1, 0, 1);
  expect_status(&a, IBV_WC_REM_INV_REQ_ERR, "misaligned FETCH_AND_ADD");
  drain(&b);

  /* A SEND longer than the receive buffer: LOC_LEN_ERR there, REM_INV_REQ_ERR here. */
  connect_qp(&d, &a, &pb, 7);
  connect_qp(&d, &b, &pa, 7);
  post_recv(&b, d.buf + DST_OFF, 100, d.mr->lkey, 9);
  post(&a, IBV_WR_SEND, d.buf, 4000, d.mr->lkey, 0, 0, 0, 0, 1);
  expect_status(&b, IBV_WC_LOC_LEN_ERR, "SEND into a short buffer (receiver)");
  expect_status(&a, IBV_WC_REM_INV_REQ_ERR, "SEND into a short buffer (sender)");

  /* No receive posted and rnr_retry 0: RNR_RETRY_EXC_ERR. */
  connect_qp(&d, &a, &pb, 0);
  connect_qp(&d, &b, &pa, 7);
  post(&a, IBV_WR_SEND, d.buf, 10, d.mr->lkey, 0, 0, 0, 0, 1);
  expect_status(&a, IBV_WC_RNR_RETRY_EXC_ERR, "SEND without a receive, rnr_retry 0");

  rnr_forever(&d, &a, &b, &pa, &pb);
  bad_receive_sge(&d, &a, &b, &pa, &pb);
  iova_region(&d, &a, &b, &pa, &pb);
  cq_overflow_errors_qp(&d);
  path_mtu_too_large(&d);
  threads(&d);

  /* Transitions as the IBA table has them. */
  connect_qp(&d, &a, &pb, 7);
  struct ibv_qp_attr at;
  memset(&at, 0, sizeof at);
  at.qp_state = IBV_QPS_RTS;
  at.path_mtu = IBV_MTU_256;
  CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_PATH_MTU) == EINVAL, "RTS->RTS changed the path MTU");
  at.sq_psn = 5;
  CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN) == EINVAL, "RTS->RTS changed the SQ PSN");
  at.qp_state = IBV_QPS_RESET;
  ibv_modify_qp(a.qp, &at, IBV_QP_STATE);
  at.qp_state = IBV_QPS_INIT;
  at.port_num = 1;
  CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_PORT) == EINVAL, "RESET->INIT without its attributes");
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qi;
  CHECK(ibv_query_qp(a.qp, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_RESET,
        "a refused transition changed the state");

  /* A full send queue: ENOMEM, not a lost WR. */
  {
    struct qp s = make_qp(&d, 4, 64, 0), t = make_qp(&d, 4, 64, 0);
    struct peer ps = describe(&d, &s), pt2 = describe(&d, &t);
    connect_qp(&d, &s, &pt2, 7);
    connect_qp(&d, &t, &ps, 7);
    struct ibv_qp_init_attr si;
    ibv_query_qp(s.qp, &qa, IBV_QP_CAP, &si);
    int rc = 0, n = 0;
    struct ibv_sge sge = {(uintptr_t)d.buf, 1 << 20, d.mr->lkey};
    struct ibv_send_wr wr, *wbad;
    memset(&wr, 0, sizeof wr);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = pt2.addr;
    wr.wr.rdma.rkey = pt2.rkey;
    while ((rc = ibv_post_send(s.qp, &wr, &wbad)) == 0 && n < 10000) ++n;
    CHECK(rc == ENOMEM && n >= (int)si.cap.max_send_wr, "full send queue: rc %d after %d WRs (cap %u)", rc, n,
          si.cap.max_send_wr);
  }

  /* A CQ too small for what completes: IBV_EVENT_CQ_ERR, never a silently lost completion. */
  {
    struct ibv_cq *tiny = ibv_create_cq(d.ctx, 2, NULL, NULL, 0);
    struct ibv_qp_init_attr ta = {.send_cq = tiny, .recv_cq = tiny, .cap = {8, 8, 1, 1, 0}, .qp_type = IBV_QPT_RC};
    struct ibv_qp *tq = tiny ? ibv_create_qp(d.pd, &ta) : NULL;
    CHECK(tq != NULL, "tiny CQ and its QP");
    if (tq) {
      at.qp_state = IBV_QPS_INIT;
      at.pkey_index = 0;
      at.port_num = 1;
      at.qp_access_flags = 0;
      ibv_modify_qp(tq, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
      for (int i = 0; i < 6; ++i) {
        struct ibv_sge sge = {(uintptr_t)d.buf, 64, d.mr->lkey};
        struct ibv_recv_wr rw = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1}, *rbad;
        ibv_post_recv(tq, &rw, &rbad);
      }
      at.qp_state = IBV_QPS_ERR;  /* six flushes into two slots */
      ibv_modify_qp(tq, &at, IBV_QP_STATE);
      CHECK(wait_async(&d, IBV_EVENT_CQ_ERR), "no IBV_EVENT_CQ_ERR for an overflowing CQ");
      struct ibv_wc wc[8];
      CHECK(ibv_poll_cq(tiny, 8, wc) == 2, "an overflowed CQ keeps what it held");
      CHECK(ibv_poll_cq(tiny, 8, wc) < 0, "an overflowed CQ reports the error");
      ibv_destroy_qp(tq);
      ibv_destroy_cq(tiny);
    }
  }

  /* Completion events through a channel. */
  {
    struct ibv_comp_channel *ch = ibv_create_comp_channel(d.ctx);
    struct ibv_cq *ecq = ch ? ibv_create_cq(d.ctx, 16, (void *)0x1234, ch, 0) : NULL;
    CHECK(ecq != NULL, "completion channel and its CQ");
    if (ecq) {
      struct ibv_qp_init_attr ea = {.send_cq = ecq, .recv_cq = ecq, .cap = {8, 8, 1, 1, 0}, .qp_type = IBV_QPT_RC};
      struct qp e = {.qp = ibv_create_qp(d.pd, &ea), .cq = ecq, .psn = 42};
      struct qp f = make_qp(&d, 8, 16, 0);
      struct peer pe = describe(&d, &e), pf = describe(&d, &f);
      connect_qp(&d, &e, &pf, 7);
      connect_qp(&d, &f, &pe, 7);
      CHECK(ibv_req_notify_cq(ecq, 0) == 0, "ibv_req_notify_cq");
      post(&e, IBV_WR_RDMA_WRITE, d.buf, 64, d.mr->lkey, pf.addr + DST_OFF, pf.rkey, 0, 0, 1);
      struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
      CHECK(poll(&pfd, 1, TIMEOUT_MS) == 1, "no completion event within %d ms", TIMEOUT_MS);
      struct ibv_cq *evcq = NULL;
      void *evctx = NULL;
      CHECK(ibv_get_cq_event(ch, &evcq, &evctx) == 0 && evcq == ecq && evctx == (void *)0x1234,
            "ibv_get_cq_event names the CQ and its context");
      ibv_ack_cq_events(ecq, 1);
      struct ibv_wc wc;
      CHECK(ibv_poll_cq(ecq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS, "the completion behind the event");
      CHECK(ibv_destroy_comp_channel(ch) == EBUSY, "a channel with a CQ destroyed");
      ibv_destroy_qp(e.qp);
      ibv_destroy_cq(ecq);
      CHECK(ibv_destroy_comp_channel(ch) == 0, "destroy the channel");
    }
  }

  extended_verbs(&d);
  shared_receive_queue(&d);

  /* What tita does not have fails cleanly. */
  {
    struct ibv_qp_init_attr ua = {.send_cq = a.cq, .recv_cq = a.cq, .cap = {8, 8, 1, 1, 0}, .qp_type = IBV_QPT_UC};
    errno = 0;
    CHECK(ibv_create_qp(d.pd, &ua) == NULL && errno == EOPNOTSUPP, "UC QP: want NULL with EOPNOTSUPP");
    CHECK(ibv_dealloc_pd(d.pd) == EBUSY, "a PD with MRs and QPs deallocated");
  }

  /* A peer nobody answers for: its work fails with RETRY_EXC_ERR, no hang. */
  if (opt_unreachable != NULL) {
    struct qp u = make_qp(&d, 8, 16, 0);
    struct peer pu = pb;
    memset(&pu.gid, 0, sizeof pu.gid);
    pu.gid.raw[10] = pu.gid.raw[11] = 0xff;
    inet_pton(AF_INET, opt_unreachable, pu.gid.raw + 12);
    CHECK(connect_qp(&d, &u, &pu, 7) == 0, "connect to an unreachable GID");
    post(&u, IBV_WR_RDMA_WRITE, d.buf, 64, d.mr->lkey, pu.addr, pu.rkey, 0, 0, 1);
    expect_status(&u, IBV_WC_RETRY_EXC_ERR, "WRITE to an unreachable peer");
  }
  printf("verbs_check --loopback: %d checks, %d failed\n", checks, failures);
}

/* ------------------------------------------------------------------ two processes */

static int tcp_connect(const char *host, int port) {
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
  char ps[16];
  snprintf(ps, sizeof ps, "%d", port);
  if (getaddrinfo(host, ps, &hints, &res) != 0) return -1;
  int fd = -1;
  for (int tries = 0; tries < 100 && fd < 0; ++tries) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
      usleep(100000);
    }
  }
  freeaddrinfo(res);
  return fd;
}

static int tcp_accept(int port) {
  int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr = {htonl(INADDR_ANY)}};
  if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1) != 0) return -1;
  const int fd = accept(ls, NULL, NULL);
  close(ls);
  return fd;
}

static int xfer(int fd, void *out, void *in, size_t n) {
  if (write(fd, out, n) != (ssize_t)n) return -1;
  size_t got = 0;
  while (got < n) {
    const ssize_t r = read(fd, (char *)in + got, n - got);
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

#define NQP (1 + ATOMIC_QPS)

static void two_process(int server, const char *host, int port) {
  struct dev d;
  open_dev(&d);
  srand48(getpid() * 31 + server);
  struct qp q[NQP];
  struct peer mine[NQP], theirs[NQP];
  for (int i = 0; i < NQP; ++i) {
    q[i] = make_qp(&d, 64, 256, 0);
    mine[i] = describe(&d, &q[i]);
  }
  const int fd = server ? tcp_accept(port) : tcp_connect(host, port);
  if (fd < 0 || xfer(fd, mine, theirs, sizeof mine) != 0) {
    fprintf(stderr, "verbs_check: no connection to the peer\n");
    exit(2);
  }
  for (int i = 0; i < NQP; ++i) CHECK(connect_qp(&d, &q[i], &theirs[i], 7) == 0, "connect QP %d", i);
  struct receiver r = {.d = &d, .q = &q[0]};
  if (server) post_script_receives(&r);
  char ready = 1, go;
  xfer(fd, &ready, &go, 1);  /* receives are posted before the first SEND */
  if (!server) {
    run_script(&d, &q[0], &theirs[0]);
    run_atomics(&d, q + 1, ATOMIC_QPS, theirs + 1);
  }
  char done = 1, peer_done;
  if (server) {
    check_receives(&r, 1);
    CHECK(r.received == r.expected, "receives: %d of %d", r.received, r.expected);
  }
  xfer(fd, &done, &peer_done, 1);
  if (server) CHECK(*d.counter == 777, "the atomic counter holds %llu, want 777", (unsigned long long)*d.counter);
  int32_t mine_failures = failures, their_failures = 0;
  xfer(fd, &mine_failures, &their_failures, sizeof mine_failures);
  close(fd);
  printf("verbs_check --%s: %d checks, %d failed here, %d on the peer\n", server ? "server" : "client", checks,
         failures, their_failures);
  failures += their_failures;
}

int main(int argc, char **argv) {
  static const struct option opts[] = {{"loopback", no_argument, 0, 'l'},  {"server", no_argument, 0, 's'},
                                       {"client", required_argument, 0, 'c'}, {"port", required_argument, 0, 'p'},
                                       {"device", required_argument, 0, 'd'}, {"gid", required_argument, 0, 'g'},
                                       {"sizes-max", required_argument, 0, 'm'},
                                       {"unreachable", required_argument, 0, 'u'}, {0, 0, 0, 0}};
  int mode = 0, port = 18650;
  const char *host = NULL;
  for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
    switch (c) {
      case 'l': mode = 'l'; break;
      case 's': mode = 's'; break;
      case 'c': mode = 'c'; host = optarg; break;
      case 'p': port = atoi(optarg); break;
      case 'd': opt_device = optarg; break;
      case 'g': opt_gid = atoi(optarg); break;
      case 'm': opt_sizes_max = (uint32_t)strtoul(optarg, NULL, 0); break;
      case 'u': opt_unreachable = optarg; break;
      default: return 2;
    }
  }
  if (mode == 0) {
    fprintf(stderr, "usage: verbs_check --loopback | --server | --client HOST [--port P] [--device D]\n");
    return 2;
  }
  if (mode == 'l') {
    loopback();
  } else {
    two_process(mode == 's', host, port);
  }
  return failures == 0 ? 0 : 1;
}
