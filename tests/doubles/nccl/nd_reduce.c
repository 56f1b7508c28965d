/* nd_reduce.c — element-wise reductions for every NCCL datatype and reduction operation.
 *
 * Contract: nd_reduce_first/acc/fini compute, for ranks' inputs x0..xn-1 taken in rank order,
 * op(pre(x0), pre(x1), ...) where pre multiplies by the PreMulSum scalar (identity otherwise),
 * and Avg divides the sum by n at the end. Integers wrap as in C; fp16, bf16 and the two fp8
 * formats are widened to float, combined, and rounded back to nearest-even after every step
 * (so every rank computes bit-identical results). No libm. */
#include "nd_internal.h"

#include <string.h>

static float bits_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t f_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* A small IEEE-like float format: mbits mantissa bits, exponent bias, and whether the top
 * exponent encodes inf/NaN (fp16, e5m2) or only the all-ones pattern is NaN (e4m3). */
struct mini { int mbits, ebits, bias, ieee; };
static const struct mini k_half = {10, 5, 15, 1}, k_e5m2 = {2, 5, 15, 1}, k_e4m3 = {3, 4, 7, 0};

static float mini_decode(uint32_t v, const struct mini *m) {
  uint32_t sign = (v >> (m->mbits + m->ebits)) & 1;
  uint32_t e = (v >> m->mbits) & ((1u << m->ebits) - 1), man = v & ((1u << m->mbits) - 1);
  uint32_t emax = (1u << m->ebits) - 1;
  float r;
  if (m->ieee && e == emax) r = bits_f(man ? 0x7fc00000u : 0x7f800000u);
  else if (!m->ieee && e == emax && man == (1u << m->mbits) - 1) r = bits_f(0x7fc00000u);
  else if (e == 0) r = (float)man * bits_f((uint32_t)(127 + 1 - m->bias - m->mbits) << 23);
  else r = bits_f(((e - m->bias + 127) << 23) | (man << (23 - m->mbits)));
  return sign ? -r : r;
}

static uint32_t rne_shift(uint32_t x, int s) {
  if (s <= 0) return x;
  if (s > 25) return 0;
  uint32_t q = x >> s, rem = x & ((1u << s) - 1), half = 1u << (s - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  return q;
}

static uint32_t mini_encode(float f, const struct mini *m) {
  uint32_t u = f_bits(f), sign = u >> 31, ax = u & 0x7fffffffu;
  uint32_t sbit = sign << (m->mbits + m->ebits), emax = (1u << m->ebits) - 1;
  uint32_t mmask = (1u << m->mbits) - 1;
  if (ax > 0x7f800000u) return sbit | (emax << m->mbits) | mmask; /* NaN */
  uint32_t maxfin = m->ieee ? ((emax - 1) << m->mbits) | mmask : (emax << m->mbits) | (mmask - 1);
  uint32_t inf = m->ieee ? emax << m->mbits : maxfin; /* e4m3 saturates */
  if (ax == 0x7f800000u) return sbit | inf;
  if (ax < 0x00800000u) return sbit; /* float subnormals are below every small format */
  int E = (int)(ax >> 23) - 127, emin = 1 - m->bias;
  uint32_t man24 = (ax & 0x7fffffu) | 0x800000u, field, man;
  if (E >= emin) {
    uint32_t q = rne_shift(man24, 23 - m->mbits);
    if (q >> (m->mbits + 1)) { q >>= 1; E++; }
    field = (uint32_t)(E + m->bias);
    man = q & mmask;
  } else {
    uint32_t q = rne_shift(man24, 23 - m->mbits + (emin - E));
    if (q >> m->mbits) { field = 1; man = 0; } else { field = 0; man = q; }
  }
  uint32_t v = (field << m->mbits) | man;
  if (field > emax || v > maxfin) v = inf;
  return sbit | v;
}

float nd_half_to_float(uint16_t h) { return mini_decode(h, &k_half); }
uint16_t nd_float_to_half(float f) { return (uint16_t)mini_encode(f, &k_half); }

static float bf16_to_float(uint16_t b) { return bits_f((uint32_t)b << 16); }
static uint16_t float_to_bf16(float f) {
  uint32_t u = f_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

static float load_small(const void *p, size_t i, int dt) {
  switch (dt) {
  case ncclFloat16: return nd_half_to_float(((const uint16_t *)p)[i]);
  case ncclBfloat16: return bf16_to_float(((const uint16_t *)p)[i]);
  case ncclFloat8e4m3: return mini_decode(((const uint8_t *)p)[i], &k_e4m3);
  default: return mini_decode(((const uint8_t *)p)[i], &k_e5m2);
  }
}
static void store_small(void *p, size_t i, int dt, float v) {
  switch (dt) {
  case ncclFloat16: ((uint16_t *)p)[i] = nd_float_to_half(v); break;
  case ncclBfloat16: ((uint16_t *)p)[i] = float_to_bf16(v); break;
  case ncclFloat8e4m3: ((uint8_t *)p)[i] = (uint8_t)mini_encode(v, &k_e4m3); break;
  default: ((uint8_t *)p)[i] = (uint8_t)mini_encode(v, &k_e5m2); break;
  }
}

#define COMBINE(a, b, base) \
  ((base) == ncclProd ? (a) * (b) : (base) == ncclMax ? ((a) > (b) ? (a) : (b)) \
   : (base) == ncclMin ? ((a) < (b) ? (a) : (b)) : (a) + (b))

/* T: element type; U: the type arithmetic is done in (unsigned for integers, so sums and
 * products wrap as two's complement without undefined behaviour). */
#define NATIVE_LOOPS(T, U, SCALE) \
  static void first_##T(T *d, const T *s, size_t n, const struct nd_redop *op) { \
    if (op->base == ND_PREMULSUM) { U k = (U)(SCALE); for (size_t i = 0; i < n; i++) d[i] = (T)((U)s[i] * k); } \
    else memcpy(d, s, n * sizeof(T)); \
  } \
  static void acc_##T(T *d, const T *s, size_t n, const struct nd_redop *op) { \
    switch (op->base) { \
    case ncclProd: for (size_t i = 0; i < n; i++) d[i] = (T)((U)d[i] * (U)s[i]); break; \
    case ncclMax: for (size_t i = 0; i < n; i++) d[i] = s[i] > d[i] ? s[i] : d[i]; break; \
    case ncclMin: for (size_t i = 0; i < n; i++) d[i] = s[i] < d[i] ? s[i] : d[i]; break; \
    case ND_PREMULSUM: { U k = (U)(SCALE); for (size_t i = 0; i < n; i++) d[i] = (T)((U)d[i] + (U)s[i] * k); break; } \
    default: for (size_t i = 0; i < n; i++) d[i] = (T)((U)d[i] + (U)s[i]); break; \
    } \
  }

typedef float f32;
typedef double f64;
NATIVE_LOOPS(int8_t, uint32_t, op->iscale)
NATIVE_LOOPS(uint8_t, uint32_t, op->iscale)
NATIVE_LOOPS(int32_t, uint32_t, op->iscale)
NATIVE_LOOPS(uint32_t, uint32_t, op->iscale)
NATIVE_LOOPS(int64_t, uint64_t, op->iscale)
NATIVE_LOOPS(uint64_t, uint64_t, op->iscale)
NATIVE_LOOPS(f32, f32, op->fscale)
NATIVE_LOOPS(f64, f64, op->fscale)

#define DISPATCH(fn, d, s, n, dt, op) \
  switch (dt) { \
  case ncclInt8: fn##_int8_t(d, s, n, op); return; \
  case ncclUint8: fn##_uint8_t(d, s, n, op); return; \
  case ncclInt32: fn##_int32_t(d, s, n, op); return; \
  case ncclUint32: fn##_uint32_t(d, s, n, op); return; \
  case ncclInt64: fn##_int64_t(d, s, n, op); return; \
  case ncclUint64: fn##_uint64_t(d, s, n, op); return; \
  case ncclFloat32: fn##_f32(d, s, n, op); return; \
  case ncclFloat64: fn##_f64(d, s, n, op); return; \
  default: break; \
  }

void nd_reduce_first(void *dst, const void *src, size_t n, int dt, const struct nd_redop *op) {
  DISPATCH(first, dst, src, n, dt, op)
  if (op->base != ND_PREMULSUM) { memcpy(dst, src, n * ncclscope_datatype_size(dt)); return; }
  for (size_t i = 0; i < n; i++) store_small(dst, i, dt, load_small(src, i, dt) * (float)op->fscale);
}

void nd_reduce_acc(void *dst, const void *src, size_t n, int dt, const struct nd_redop *op) {
  DISPATCH(acc, dst, src, n, dt, op)
  for (size_t i = 0; i < n; i++) {
    float a = load_small(dst, i, dt), b = load_small(src, i, dt);
    if (op->base == ND_PREMULSUM) b *= (float)op->fscale;
    store_small(dst, i, dt, op->base == ND_PREMULSUM ? a + b : COMBINE(a, b, op->base));
  }
}

void nd_reduce_fini(void *dst, size_t n, int dt, const struct nd_redop *op, int nranks) {
  if (op->base != ncclAvg || nranks <= 1) return;
  switch (dt) {
#define DIV(T) for (size_t i = 0; i < n; i++) ((T *)dst)[i] = (T)(((T *)dst)[i] / (T)nranks); return;
  case ncclInt8: DIV(int8_t)
  case ncclUint8: DIV(uint8_t)
  case ncclInt32: DIV(int32_t)
  case ncclUint32: DIV(uint32_t)
  case ncclInt64: DIV(int64_t)
  case ncclUint64: DIV(uint64_t)
  case ncclFloat32: DIV(f32)
  case ncclFloat64: DIV(f64)
#undef DIV
  default:
    for (size_t i = 0; i < n; i++) store_small(dst, i, dt, load_small(dst, i, dt) / (float)nranks);
  }
}
