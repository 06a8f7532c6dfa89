// augment_hsv: gains, lookup tables and the three ways of applying them (whole image, cache-sized strips,
// the fused AVX2 kernel).
#include "data/augment/hsv.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <opencv2/imgproc.hpp>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define KESTREL_HSV_AVX2 1
#endif

namespace kestrel {
namespace {

void apply_luts(cv::Mat& hsv, const HsvLuts& luts) {
  for (int y = 0; y < hsv.rows; ++y) {
    uint8_t* p = hsv.ptr<uint8_t>(y);
    for (int x = 0; x < hsv.cols; ++x, p += 3) {
      p[0] = luts.hue[p[0]];
      p[1] = luts.sat[p[1]];
      p[2] = luts.val[p[2]];
    }
  }
}

}  // namespace

HsvGains hsv_gains_from_u(const double u[3], double hgain, double sgain, double vgain, bool shift_hue) {
  HsvGains g;
  g.active = hgain != 0 || sgain != 0 || vgain != 0;
  const double gain[3] = {hgain, sgain, vgain};
  for (int i = 0; i < 3; ++i) g.r[i] = u[i] * gain[i] + 1;
  g.shift_hue = shift_hue;
  if (shift_hue) g.hue_shift = u[0] * hgain * 180;  // numpy: (u * gains)[0] * 180
  return g;
}

HsvGains draw_hsv_gains(SampleRng& rng, const Hyp& hyp, bool shift_hue) {
  if (hyp.hsv_h == 0 && hyp.hsv_s == 0 && hyp.hsv_v == 0) return {};
  double u[3];
  for (double& v : u) v = rng.uniform(-1, 1);
  return hsv_gains_from_u(u, hyp.hsv_h, hyp.hsv_s, hyp.hsv_v, shift_hue);
}

HsvLuts hsv_luts(const HsvGains& g) {
  const double* r = g.r;
  HsvLuts t;
  for (int x = 0; x < 256; ++x) {
    if (g.shift_hue) {  // numpy's remainder: fmod, moved into [0, 180) when negative
      double hue = std::fmod(x + g.hue_shift, 180.0);
      if (hue < 0) hue += 180.0;
      t.hue[x] = static_cast<uint8_t>(hue);
    } else {
      t.hue[x] = static_cast<uint8_t>(std::fmod(x * r[0], 180.0));  // x*r0 >= 0: fmod is Python's %
    }
    t.sat[x] = static_cast<uint8_t>(std::clamp(x * r[1], 0.0, 255.0));
    t.val[x] = static_cast<uint8_t>(std::clamp(x * r[2], 0.0, 255.0));
  }
  return t;
}

void augment_hsv(cv::Mat& bgr, const HsvGains& gains) {
  if (!gains.active) return;
  const HsvLuts luts = hsv_luts(gains);
  cv::Mat hsv;
  cv::cvtColor(bgr, hsv, cv::COLOR_BGR2HSV);
  apply_luts(hsv, luts);
  cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
}

void augment_hsv_strips(cv::Mat& bgr, const HsvGains& gains) {
  if (!gains.active) return;
  const HsvLuts luts = hsv_luts(gains);
  constexpr int kStripRows = 8;
  thread_local cv::Mat strip_buffer;
  strip_buffer.create(kStripRows, bgr.cols, CV_8UC3);
  for (int y0 = 0; y0 < bgr.rows; y0 += kStripRows) {
    cv::Mat rows = bgr.rowRange(y0, std::min(y0 + kStripRows, bgr.rows));
    cv::Mat strip = strip_buffer.rowRange(0, rows.rows);  // a view of the right size: never reallocated
    cv::cvtColor(rows, strip, cv::COLOR_BGR2HSV);
    apply_luts(strip, luts);
    cv::cvtColor(strip, rows, cv::COLOR_HSV2BGR);
  }
}

namespace {

#if KESTREL_HSV_AVX2
struct FusedHsv {
  double r[3];               // the gains
  float rf[3];               // the same in float32
  bool float_tables = false;  // float32 products truncate to YOLOv5's float64 tables for every input
  bool shift_hue = false;     // Ultralytics' hue: looked up in hue_table (a gather), not computed
  alignas(32) int32_t hue_table[256];
  uint8_t grey[24];          // 8 pixels of YOLOv5's border grey (114), converted
};

// Byte shuffles that gather channel c (B, G, R) of 8 interleaved pixels: pixels 0-5 (B) or 0-4 (G, R)
// lie in the first 16 bytes, the rest in the next 8. -128 zeroes a byte.
alignas(16) constexpr int8_t kFromLo[3][16] = {
    {0, 3, 6, 9, 12, 15, -128, -128, -128, -128, -128, -128, -128, -128, -128, -128},
    {1, 4, 7, 10, 13, -128, -128, -128, -128, -128, -128, -128, -128, -128, -128, -128},
    {2, 5, 8, 11, 14, -128, -128, -128, -128, -128, -128, -128, -128, -128, -128, -128}};
alignas(16) constexpr int8_t kFromHi[3][16] = {
    {-128, -128, -128, -128, -128, -128, 2, 5, -128, -128, -128, -128, -128, -128, -128, -128},
    {-128, -128, -128, -128, -128, 0, 3, 6, -128, -128, -128, -128, -128, -128, -128, -128},
    {-128, -128, -128, -128, -128, 1, 4, 7, -128, -128, -128, -128, -128, -128, -128, -128}};

__attribute__((target("avx2,fma"))) inline __m256i channel(__m128i lo, __m128i hi, int c) {
  const __m128i bytes = _mm_or_si128(_mm_shuffle_epi8(lo, _mm_load_si128(reinterpret_cast<const __m128i*>(kFromLo[c]))),
                                     _mm_shuffle_epi8(hi, _mm_load_si128(reinterpret_cast<const __m128i*>(kFromHi[c]))));
  return _mm256_cvtepu8_epi32(bytes);
}

// round(n / d), OpenCV's reciprocal-table entry, for d in [1, 255] (0 where d == 0, as in its tables). The
// float quotient rounds to the same integer as the exact one for every such d and both numerators used
// here (checked exhaustively in tests/data/test_augment_hsv.cpp), so no lookup is needed.
__attribute__((target("avx2,fma"))) inline __m256i rounded_quotient(int n, __m256i d) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256 q = _mm256_div_ps(_mm256_set1_ps(static_cast<float>(n)), _mm256_cvtepi32_ps(_mm256_max_epi32(d, _mm256_set1_epi32(1))));
  return _mm256_andnot_si256(_mm256_cmpeq_epi32(d, zero), _mm256_cvtps_epi32(q));
}

// trunc(x * r) for 8 integers x in [0, 255], then wrapped once at `limit` (the hue: the product stays below
// 2 * 180) or clipped to [0, limit]. Truncating before the wrap gives the same integer as numpy's
// (x * r) % 180 followed by astype(uint8), with no second floating-point rounding. In float64 as numpy
// builds the tables, or in float32 when FusedHsv::float_tables found that gives the same integers.
__attribute__((target("avx2,fma"))) inline __m256i table_values(__m256i x, const FusedHsv& k, int c, int limit,
                                                                 bool wrap) {
  __m256i t;
  if (k.float_tables) {
    __m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(x), _mm256_set1_ps(k.rf[c]));
    if (!wrap) p = _mm256_min_ps(_mm256_max_ps(p, _mm256_setzero_ps()), _mm256_set1_ps(static_cast<float>(limit)));
    t = _mm256_cvttps_epi32(p);
  } else {
    const __m256d vr = _mm256_set1_pd(k.r[c]), zero = _mm256_setzero_pd();
    __m256d lo = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(x)), vr);
    __m256d hi = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(x, 1)), vr);
    if (!wrap) {
      const __m256d top = _mm256_set1_pd(limit);
      lo = _mm256_min_pd(_mm256_max_pd(lo, zero), top);
      hi = _mm256_min_pd(_mm256_max_pd(hi, zero), top);
    }
    t = _mm256_setr_m128i(_mm256_cvttpd_epi32(lo), _mm256_cvttpd_epi32(hi));
  }
  if (wrap) {
    const __m256i vlimit = _mm256_set1_epi32(limit);
    t = _mm256_sub_epi32(t, _mm256_and_si256(_mm256_cmpgt_epi32(t, _mm256_sub_epi32(vlimit, _mm256_set1_epi32(1))), vlimit));
  }
  return t;
}

// The scalar twin of table_values' float32 branch for one x.
int float_table_value(int x, float r, int limit, bool wrap) {
  float p = static_cast<float>(x) * r;
  if (!wrap) p = std::min(std::max(p, 0.f), static_cast<float>(limit));
  const int t = static_cast<int>(p);
  return wrap && t >= limit ? t - limit : t;
}

FusedHsv fused_constants(const HsvGains& gains) {
  FusedHsv k;
  const HsvLuts luts = hsv_luts(gains);
  k.float_tables = true;
  k.shift_hue = gains.shift_hue;
  if (k.shift_hue) std::copy(luts.hue.begin(), luts.hue.end(), k.hue_table);
  for (int c = k.shift_hue ? 1 : 0; c < 3; ++c) {
    k.r[c] = gains.r[c];
    k.rf[c] = static_cast<float>(gains.r[c]);
    const std::array<uint8_t, 256>& want = c == 0 ? luts.hue : c == 1 ? luts.sat : luts.val;
    for (int x = 0; x < (c == 0 ? 180 : 256); ++x)  // hues run to 179
      k.float_tables &= float_table_value(x, k.rf[c], c == 0 ? 180 : 255, c == 0) == want[x];
  }
  return k;
}

// 8 pixels (24 bytes at p, already loaded as lo: the first 16 and hi: the last 8) in place.
__attribute__((target("avx2,fma"))) void fused_hsv_8(uint8_t* p, __m128i lo, __m128i hi, const FusedHsv& k) {
  const __m256i ib = channel(lo, hi, 0), ig = channel(lo, hi, 1), ir = channel(lo, hi, 2);

  // BGR -> HSV exactly as OpenCV's 8-bit RGB2HSV: s = (diff * sdiv[v] + 2^11) >> 12 and
  // h = (num * hdiv[diff] + 2^11) >> 12 with the reciprocal tables sdiv[v] = round(255 * 2^12 / v) and
  // hdiv[d] = round(30 * 2^12 / d), computed here instead of looked up (see rounded_quotient).
  const __m256i iv = _mm256_max_epi32(ib, _mm256_max_epi32(ig, ir));
  const __m256i idiff = _mm256_sub_epi32(iv, _mm256_min_epi32(ib, _mm256_min_epi32(ig, ir)));
  const __m256i half = _mm256_set1_epi32(1 << 11);
  const __m256i sdiv = rounded_quotient(255 << 12, iv);
  const __m256i hdiv = rounded_quotient(30 << 12, idiff);
  const __m256i is = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(idiff, sdiv), half), 12);
  const __m256i v_is_r = _mm256_cmpeq_epi32(iv, ir), v_is_g = _mm256_cmpeq_epi32(iv, ig);
  const __m256i two_d = _mm256_add_epi32(idiff, idiff);
  __m256i num = _mm256_add_epi32(_mm256_sub_epi32(ir, ig), _mm256_add_epi32(two_d, two_d));     // max is B
  num = _mm256_blendv_epi8(num, _mm256_add_epi32(_mm256_sub_epi32(ib, ir), two_d), v_is_g);  // max is G
  num = _mm256_blendv_epi8(num, _mm256_sub_epi32(ig, ib), v_is_r);                           // max is R
  __m256i ih = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(num, hdiv), half), 12);
  ih = _mm256_add_epi32(ih, _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), ih), _mm256_set1_epi32(180)));

  // YOLOv5's tables as arithmetic, in float64 as numpy builds them: (h*r0) mod 180, clip(s*r1, 0, 255),
  // clip(v*r2, 0, 255), each truncated; Ultralytics' shifted hue from its table.
  const __m256 c255 = _mm256_set1_ps(255.f);
  const __m256 h = _mm256_cvtepi32_ps(k.shift_hue ? _mm256_i32gather_epi32(k.hue_table, ih, 4) : table_values(ih, k, 0, 180, true));
  __m256 sat = _mm256_cvtepi32_ps(table_values(is, k, 1, 255, false));
  __m256 val = _mm256_cvtepi32_ps(table_values(iv, k, 2, 255, false));

  // HSV -> BGR as OpenCV's HSV2RGB: sector and fraction of h * 6/180, four candidate values.
  const __m256 one = _mm256_set1_ps(1.f), inv255 = _mm256_set1_ps(1.f / 255.f);
  sat = _mm256_mul_ps(sat, inv255);
  val = _mm256_mul_ps(val, inv255);
  const __m256 hh = _mm256_mul_ps(h, _mm256_set1_ps(6.f / 180.f));
  const __m256 sector = _mm256_floor_ps(hh);
  const __m256 f = _mm256_sub_ps(hh, sector);
  const __m256 tab0 = val;
  const __m256 tab1 = _mm256_mul_ps(val, _mm256_sub_ps(one, sat));
  const __m256 tab2 = _mm256_mul_ps(val, _mm256_sub_ps(one, _mm256_mul_ps(sat, f)));
  const __m256 tab3 = _mm256_mul_ps(val, _mm256_sub_ps(one, _mm256_mul_ps(sat, _mm256_sub_ps(one, f))));
  const __m256 s1 = _mm256_cmp_ps(sector, _mm256_set1_ps(1.f), _CMP_EQ_OQ);
  const __m256 s2 = _mm256_cmp_ps(sector, _mm256_set1_ps(2.f), _CMP_EQ_OQ);
  const __m256 s3 = _mm256_cmp_ps(sector, _mm256_set1_ps(3.f), _CMP_EQ_OQ);
  const __m256 s4 = _mm256_cmp_ps(sector, _mm256_set1_ps(4.f), _CMP_EQ_OQ);
  const __m256 s5 = _mm256_cmp_ps(sector, _mm256_set1_ps(5.f), _CMP_EQ_OQ);
  // Sectors 0..5 give (b, g, r) = (1,3,0) (1,0,2) (3,0,1) (0,2,1) (0,1,3) (2,1,0) of tab.
  __m256 ob = _mm256_blendv_ps(tab1, tab3, s2);
  ob = _mm256_blendv_ps(ob, tab0, _mm256_or_ps(s3, s4));
  ob = _mm256_blendv_ps(ob, tab2, s5);
  __m256 og = _mm256_blendv_ps(tab3, tab0, _mm256_or_ps(s1, s2));
  og = _mm256_blendv_ps(og, tab2, s3);
  og = _mm256_blendv_ps(og, tab1, _mm256_or_ps(s4, s5));
  __m256 orr = _mm256_blendv_ps(tab0, tab2, s1);
  orr = _mm256_blendv_ps(orr, tab1, _mm256_or_ps(s2, s3));
  orr = _mm256_blendv_ps(orr, tab3, s4);

  // Round to bytes and interleave back: each int32 lane becomes one pixel's B | G << 8 | R << 16.
  // OpenCV's vector loop truncates here (its scalar tail rounds; with our row widths it is never reached).
  const __m256i ob8 = _mm256_cvttps_epi32(_mm256_mul_ps(ob, c255));
  const __m256i og8 = _mm256_cvttps_epi32(_mm256_mul_ps(og, c255));
  const __m256i or8 = _mm256_cvttps_epi32(_mm256_mul_ps(orr, c255));
  const __m256i pix = _mm256_or_si256(ob8, _mm256_or_si256(_mm256_slli_epi32(og8, 8), _mm256_slli_epi32(or8, 16)));
  const __m256i packed = _mm256_shuffle_epi8(
      pix, _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -128, -128, -128, -128, 0, 1, 2, 4, 5, 6, 8, 9,
                            10, 12, 13, 14, -128, -128, -128, -128));
  const __m128i first = _mm256_castsi256_si128(packed), second = _mm256_extracti128_si256(packed, 1);
  alignas(16) uint8_t out[32];
  _mm_store_si128(reinterpret_cast<__m128i*>(out), first);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 12), second);
  std::memcpy(p, out, 24);
}

__attribute__((target("avx2,fma"))) void fused_hsv_8(uint8_t* p, const FusedHsv& k) {
  fused_hsv_8(p, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)),
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16)), k);
}

// A row of n pixels. Blocks of 8 grey border pixels (114, 114, 114; 13% of a coco128 mosaic) get the
// precomputed result instead of the arithmetic.
__attribute__((target("avx2,fma"))) void fused_hsv_row(uint8_t* p, int n, const FusedHsv& k) {
  const __m128i grey = _mm_set1_epi8(114);
  int x = 0;
  for (; x + 8 <= n; x += 8) {
    uint8_t* q = p + 3 * x;
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 16));
    const int same = _mm_movemask_epi8(_mm_cmpeq_epi8(lo, grey)) | (_mm_movemask_epi8(_mm_cmpeq_epi8(hi, grey)) << 16);
    if ((same & 0xFFFFFF) == 0xFFFFFF)
      std::memcpy(q, k.grey, 24);
    else
      fused_hsv_8(q, lo, hi, k);
  }
  if (x < n) {  // the last few pixels through a padded copy, so every pixel gets the same arithmetic
    uint8_t tail[24] = {};
    std::memcpy(tail, p + 3 * x, 3 * (n - x));
    fused_hsv_8(tail, k);
    std::memcpy(p + 3 * x, tail, 3 * (n - x));
  }
}
#endif

}  // namespace

bool hsv_fast_kernel_available() {
#if KESTREL_HSV_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return avx2;
#else
  return false;
#endif
}

void augment_hsv_fast(cv::Mat& bgr, const HsvGains& gains) {
  if (!gains.active) return;
#if KESTREL_HSV_AVX2
  // A scaled hue with hsv_h <= 1 wraps once (table_values); a shifted one is looked up.
  if (hsv_fast_kernel_available() && (gains.shift_hue || (gains.r[0] >= 0 && gains.r[0] < 2))) {
    FusedHsv k = fused_constants(gains);
    std::memset(k.grey, 114, sizeof k.grey);
    fused_hsv_8(k.grey, k);
    const int rows = bgr.isContinuous() ? 1 : bgr.rows, cols = bgr.isContinuous() ? bgr.rows * bgr.cols : bgr.cols;
    for (int y = 0; y < rows; ++y) fused_hsv_row(bgr.ptr<uint8_t>(y), cols, k);
    return;
  }
#endif
  augment_hsv_strips(bgr, gains);
}

}  // namespace kestrel
