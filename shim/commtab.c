/* commtab.c — the communicator table: ncclComm_t handle -> trace index, with each
 * communicator's id, device, rank and sequence counters.
 *
 * Contract: lookups (ncs_comm_lookup, ncs_comm_info) are lock-free and may run on the hot
 * path; inserts (ncs_comm_add, at communicator creation) take a mutex. Indexes start at 1 and
 * are never reused within a process; a forked child starts empty (ncs_comm_atfork). */
#include <pthread.h>
#include <string.h>

#include "internal.h"

#define COMM_HASH 8192
static struct { _Atomic uint64_t key; _Atomic uint32_t index; } comm_hash[COMM_HASH];
static struct ncs_comm_info comm_tab[NCS_MAX_COMMS + 1];
static _Atomic uint32_t comm_next;
_Atomic uint32_t ncs_comm_gen = 1;
static pthread_mutex_t comm_mu = PTHREAD_MUTEX_INITIALIZER;

static inline uint32_t ptr_slot(uint64_t p) { return (uint32_t)((p * 0x9E3779B97F4A7C15ull) >> 51) & (COMM_HASH - 1); }

uint32_t ncs_comm_lookup(ncclComm_t comm) {
  uint64_t key = (uint64_t)(uintptr_t)comm;
  if (!key) return 0;
  for (uint32_t i = ptr_slot(key), n = 0; n < COMM_HASH; n++, i = (i + 1) & (COMM_HASH - 1)) {
    uint64_t k = atomic_load_explicit(&comm_hash[i].key, memory_order_acquire);
    if (k == key) return atomic_load_explicit(&comm_hash[i].index, memory_order_acquire);
    if (k == 0) return 0;
  }
  return 0;
}

uint32_t ncs_comm_remember(ncclComm_t comm, uint32_t gen) {
  uint32_t idx = ncs_comm_lookup(comm);
  struct ncs_tls *t = &ncs_tls;
  if (idx) {
    t->comm_handle = (uint64_t)(uintptr_t)comm;
    t->comm_index = idx;
    t->comm_info = &comm_tab[idx];
    t->comm_gen = gen;
  }
  return idx;
}

struct ncs_comm_info *ncs_comm_info(uint32_t index) {
  if (index == 0 || index > atomic_load_explicit(&comm_next, memory_order_acquire)) return NULL;
  return &comm_tab[index];
}

uint32_t ncs_comm_add(ncclComm_t handle, uint64_t comm_id, int32_t device, int32_t rank) {
  pthread_mutex_lock(&comm_mu);
  uint32_t idx = atomic_load(&comm_next) + 1;
  if (idx > NCS_MAX_COMMS) { pthread_mutex_unlock(&comm_mu); return 0; }
  struct ncs_comm_info *c = &comm_tab[idx];
  c->handle = (uint64_t)(uintptr_t)handle;
  c->comm_id = comm_id;
  c->device = device;
  c->rank = rank;
  atomic_store(&c->coll_seq, 0);
  atomic_store(&c->p2p_seq, 0);
  atomic_store(&c->split_count, 0);
  atomic_store_explicit(&comm_next, idx, memory_order_release);
  uint64_t key = c->handle;
  if (key) {
    for (uint32_t i = ptr_slot(key), n = 0; n < COMM_HASH; n++, i = (i + 1) & (COMM_HASH - 1)) {
      uint64_t k = atomic_load(&comm_hash[i].key);
      if (k == key) { atomic_store_explicit(&comm_hash[i].index, idx, memory_order_release); break; }
      if (k == 0) {
        atomic_store_explicit(&comm_hash[i].index, idx, memory_order_release);
        atomic_store_explicit(&comm_hash[i].key, key, memory_order_release);
        break;
      }
    }
  }
  atomic_fetch_add_explicit(&ncs_comm_gen, 1, memory_order_release); /* cached answers are stale */
  pthread_mutex_unlock(&comm_mu);
  return idx;
}

void ncs_comm_atfork(int phase) {
  if (phase == 0) {
    pthread_mutex_lock(&comm_mu);
  } else if (phase == 1) {
    pthread_mutex_unlock(&comm_mu);
  } else { /* the child: no communicator of the parent's is its own */
    memset(comm_hash, 0, sizeof comm_hash);
    atomic_store(&comm_next, 0);
    atomic_fetch_add(&ncs_comm_gen, 1);
    pthread_mutex_unlock(&comm_mu); /* the forking thread took it in phase 0 */
  }
}
