/* mix.h — the decoder's two hashes, written once: ncs_mix64, a bijective 64-bit mix
 * (splitmix64's finaliser: distinct keys give distinct hashes, every bit depending on every
 * bit), for sample identities and synthetic randomness; ncs_fnv64, FNV-1a 64 over bytes, for
 * names and records. Both pure, inline. */
#ifndef NCS_BASE_MIX_H
#define NCS_BASE_MIX_H
#include <stddef.h>
#include <stdint.h>

#define NCS_FNV64_OFFSET 0xcbf29ce484222325ull

static inline uint64_t ncs_mix64(uint64_t x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27; x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static inline uint64_t ncs_fnv64(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) { h ^= s[i]; h *= 0x100000001b3ull; }
  return h;
}
#endif
