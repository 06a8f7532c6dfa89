// warp_affine_pieces: OpenCV's warpAffine arithmetic (imgwarp.cpp, 4.x) applied to a piecewise canvas.
//
// OpenCV inverts M, then for each destination pixel forms the source position in 1/32 pixel fixed point
// (X = (X0(y) + adelta(x)) >> 5) and bilinearly blends the four neighbours with 15-bit integer weights.
// Reproducing the coordinates exactly and handing them to cv::remap (which is what warpAffine does
// internally, block by block) gives the same bytes. A block is remapped from a single piece when every
// footprint in it (the 2x2 neighbours) lies in one quadrant; a piece's surroundings inside its quadrant
// are grey, which remap's constant border supplies. Blocks that straddle quadrants are split until they
// do not, and the few pixels whose footprint crosses a split line are blended here with the same integer
// formula. An axis-aligned M (no rotation or shear) takes a separable path instead (AxisAlignedWarp),
// with the same integer sum.
#include "data/augment/warp_pieces.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <opencv2/imgproc.hpp>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kestrel {
namespace {

constexpr int kInterBits = 5;              // INTER_BITS: 1/32 pixel
constexpr int kAbBits = 10;                // AB_BITS in warpAffine
constexpr int kRoundDelta = (1 << kAbBits) / (1 << kInterBits) / 2;
constexpr int kBlockRows = 32, kBlockCols = 128;  // warpAffine's own block shape
constexpr int kLeafPixels = 64;            // below this, a mixed block is blended pixel by pixel
constexpr uint8_t kGrey = 114;

struct BlockMaps {
  short xy[kBlockRows * kBlockCols * 2];
  uint16_t alpha[kBlockRows * kBlockCols];
};

// cv::remap of rect r of the block maps (positions already in the piece's coordinates) into dst(r).
void remap_piece(const cv::Mat& piece, BlockMaps& maps, int stride, cv::Mat& dst, const cv::Rect& r) {
  cv::Mat out = dst(r);
  if (piece.empty()) {
    out.setTo(cv::Scalar::all(kGrey));
    return;
  }
  const size_t off = static_cast<size_t>(r.y) * stride + r.x;
  const cv::Mat map1(r.height, r.width, CV_16SC2, maps.xy + off * 2, stride * 2 * sizeof(short));
  const cv::Mat map2(r.height, r.width, CV_16UC1, maps.alpha + off, stride * sizeof(uint16_t));
  cv::remap(piece, out, map1, map2, cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(kGrey));
}

// Quadrant (0 or 1 along one axis) of footprints whose positions span [lo, hi], or -1 if they straddle.
int side(int lo, int hi, int split) { return hi + 1 < split ? 0 : (lo >= split ? 1 : -1); }

// Resamples a block whose footprints straddle quadrants. The maps hold canvas positions, which are
// monotone in x and y, so a rectangle's corners bound it: rectangles within one quadrant are remapped
// from that piece, the others are split until they are, or are small enough to blend pixel by pixel.
class MixedBlock {
 public:
  MixedBlock(const PieceCanvas& canvas, BlockMaps& maps, int stride) : c_(canvas), m_(maps), stride_(stride) {}

  void run(cv::Mat& dst, const cv::Rect& r) {
    const int q = quadrant(r);
    if (q >= 0) {
      remap_from_piece(dst, r, q);
      return;
    }
    if (r.area() <= kLeafPixels) {
      blend_pixels(dst, r);
      return;
    }
    // Split where the footprints change side (usually a one or two pixel wide band of true straddlers
    // between two single-quadrant parts); halve when the middle row and column show no change.
    const int mid_y = r.y + r.height / 2, mid_x = r.x + r.width / 2;
    int cut = change_along(r.x, r.x + r.width, [&](int x) { return side_at(x, mid_y, 0); });
    if (cut > r.x) {
      run(dst, cv::Rect(r.x, r.y, cut - r.x, r.height));
      run(dst, cv::Rect(cut, r.y, r.x + r.width - cut, r.height));
      return;
    }
    cut = change_along(r.y, r.y + r.height, [&](int y) { return side_at(mid_x, y, 1); });
    if (cut > r.y) {
      run(dst, cv::Rect(r.x, r.y, r.width, cut - r.y));
      run(dst, cv::Rect(r.x, cut, r.width, r.y + r.height - cut));
    } else if (r.width >= r.height) {
      const int half = r.width / 2;
      run(dst, cv::Rect(r.x, r.y, half, r.height));
      run(dst, cv::Rect(r.x + half, r.y, r.width - half, r.height));
    } else {
      const int half = r.height / 2;
      run(dst, cv::Rect(r.x, r.y, r.width, half));
      run(dst, cv::Rect(r.x, r.y + half, r.width, r.height - half));
    }
  }

 private:
  // Side (0, 1, or -1 straddling) of one footprint along axis k (0: x, 1: y).
  int side_at(int x, int y, int k) const {
    const int v = m_.xy[2 * (y * stride_ + x) + k];
    return side(v, v, k == 0 ? c_.split_x : c_.split_y);
  }

  // First position in (begin, end) whose side differs from begin's, or begin when there is none.
  template <class SideOf>
  static int change_along(int begin, int end, SideOf side_of) {
    const int first = side_of(begin);
    for (int i = begin + 1; i < end; ++i)
      if (side_of(i) != first) return i;
    return begin;
  }

  int quadrant(const cv::Rect& r) const {
    int lo[2] = {1 << 30, 1 << 30}, hi[2] = {-(1 << 30), -(1 << 30)};
    for (int y : {r.y, r.y + r.height - 1})
      for (int x : {r.x, r.x + r.width - 1})
        for (int k = 0; k < 2; ++k) {
          const int v = m_.xy[2 * (y * stride_ + x) + k];
          lo[k] = std::min(lo[k], v);
          hi[k] = std::max(hi[k], v);
        }
    const int qx = side(lo[0], hi[0], c_.split_x), qy = side(lo[1], hi[1], c_.split_y);
    return qx < 0 || qy < 0 ? -1 : qx + 2 * qy;
  }

  void remap_from_piece(cv::Mat& dst, const cv::Rect& r, int q) {
    for (int y = r.y; y < r.y + r.height; ++y) {  // canvas -> piece coordinates
      short* xy = m_.xy + (y * stride_ + r.x) * 2;
      for (int x = 0; x < r.width; ++x) {
        xy[2 * x] = cv::saturate_cast<short>(xy[2 * x] - c_.x0[q]);
        xy[2 * x + 1] = cv::saturate_cast<short>(xy[2 * x + 1] - c_.y0[q]);
      }
    }
    remap_piece(c_.piece[q], m_, stride_, dst, r);
  }

  // The canvas pixel at (x, y): a piece's pixel, or grey.
  const uint8_t* pixel(int x, int y) const {
    static const uint8_t grey[3] = {kGrey, kGrey, kGrey};
    const int q = (x >= c_.split_x) + 2 * (y >= c_.split_y);
    const cv::Mat& p = c_.piece[q];
    const int lx = x - c_.x0[q], ly = y - c_.y0[q];
    if (static_cast<unsigned>(lx) >= static_cast<unsigned>(p.cols) || static_cast<unsigned>(ly) >= static_cast<unsigned>(p.rows))
      return grey;
    return p.ptr<uint8_t>(ly) + lx * 3;
  }

  // remap's bilinear formula: weights (32-fx)(32-fy), fx(32-fy), (32-fx)fy, fx*fy scaled to 2^15, rounded.
  void blend_pixels(cv::Mat& dst, const cv::Rect& r) const {
    for (int y = r.y; y < r.y + r.height; ++y) {
      uint8_t* out = dst.ptr<uint8_t>(y) + r.x * 3;
      for (int x = r.x; x < r.x + r.width; ++x, out += 3) {
        const int i = y * stride_ + x;
        const int sx = m_.xy[2 * i], sy = m_.xy[2 * i + 1];
        const int fx = m_.alpha[i] & 31, fy = m_.alpha[i] >> 5;
        const int w00 = (32 - fx) * (32 - fy), w01 = fx * (32 - fy), w10 = (32 - fx) * fy, w11 = fx * fy;
        const uint8_t *p00 = pixel(sx, sy), *p01 = pixel(sx + 1, sy), *p10 = pixel(sx, sy + 1),
                      *p11 = pixel(sx + 1, sy + 1);
        for (int ch = 0; ch < 3; ++ch)
          out[ch] = static_cast<uint8_t>((p00[ch] * w00 + p01[ch] * w01 + p10[ch] * w10 + p11[ch] * w11 + 512) >> 10);
      }
    }
  }

  const PieceCanvas& c_;
  BlockMaps& m_;
  int stride_;
};

// OpenCV's per-row source coordinates for a run of n pixels: X = (X0 + adelta) >> 5, position X >> 5
// saturated to int16, fraction (Y & 31) * 32 + (X & 31). `ox`/`oy` (whole pixels) shift the result into a
// piece's own coordinates; subtracting them before the shifts gives the same bits (a multiple of 1024),
// and only differs from OpenCV under int16 saturation, where both positions are far outside anyway.
void fill_maps(const int* adelta, const int* bdelta, int X0, int Y0, int ox, int oy, int n, short* xy,
               uint16_t* alpha) {
  X0 -= ox * (1 << kAbBits);
  Y0 -= oy * (1 << kAbBits);
  constexpr int shift = kAbBits - kInterBits;
  int x = 0;
#if defined(__SSE2__)
  const __m128i vx0 = _mm_set1_epi32(X0), vy0 = _mm_set1_epi32(Y0), mask = _mm_set1_epi32(31);
  for (; x + 8 <= n; x += 8) {
    const auto load = [](const int* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
    const __m128i xa = _mm_srai_epi32(_mm_add_epi32(vx0, load(adelta + x)), shift);
    const __m128i xb = _mm_srai_epi32(_mm_add_epi32(vx0, load(adelta + x + 4)), shift);
    const __m128i ya = _mm_srai_epi32(_mm_add_epi32(vy0, load(bdelta + x)), shift);
    const __m128i yb = _mm_srai_epi32(_mm_add_epi32(vy0, load(bdelta + x + 4)), shift);
    const __m128i sx = _mm_packs_epi32(_mm_srai_epi32(xa, kInterBits), _mm_srai_epi32(xb, kInterBits));
    const __m128i sy = _mm_packs_epi32(_mm_srai_epi32(ya, kInterBits), _mm_srai_epi32(yb, kInterBits));
    const __m128i fa = _mm_or_si128(_mm_slli_epi32(_mm_and_si128(ya, mask), kInterBits), _mm_and_si128(xa, mask));
    const __m128i fb = _mm_or_si128(_mm_slli_epi32(_mm_and_si128(yb, mask), kInterBits), _mm_and_si128(xb, mask));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(alpha + x), _mm_packs_epi32(fa, fb));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(xy + 2 * x), _mm_unpacklo_epi16(sx, sy));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(xy + 2 * x + 8), _mm_unpackhi_epi16(sx, sy));
  }
#endif
  for (; x < n; ++x) {
    const int X = (X0 + adelta[x]) >> shift, Y = (Y0 + bdelta[x]) >> shift;
    xy[2 * x] = cv::saturate_cast<short>(X >> kInterBits);
    xy[2 * x + 1] = cv::saturate_cast<short>(Y >> kInterBits);
    alpha[x] = static_cast<uint16_t>((Y & 31) * 32 + (X & 31));
  }
}

// Axis-aligned M (no rotation or shear, as with YOLOv5's default hyp): the source column of an output
// pixel depends on its column only and the source row on its row only, so the bilinear sum separates.
// Each output row is a vertical blend of two canvas rows into 16-bit sums (contiguous, vectorized),
// then a horizontal blend at fixed per-column positions:
//   out = ((32-fx) * ((32-fy)*p00 + fy*p10) + fx * ((32-fy)*p01 + fy*p11) + 512) >> 10,
// the very sum remap forms with its 15-bit weights (which are these 10-bit ones times 32), so the bytes
// are identical. Canvas rows are assembled from the pieces only over the columns the output reads.
class AxisAlignedWarp {
 public:
  AxisAlignedWarp(const PieceCanvas& canvas, const int* col_fixed, const int* row_fixed, int out_w, int out_h)
      : c_(canvas), out_w_(out_w), out_h_(out_h) {
    // The pieces' extent; a position more than one pixel outside it reads only grey, so positions are
    // clamped to one just outside, which keeps both neighbours grey and the span short.
    int lo_x = 1 << 30, hi_x = -(1 << 30), lo_y = 1 << 30, hi_y = -(1 << 30);
    for (int q = 0; q < 4; ++q) {
      if (c_.piece[q].empty()) continue;
      lo_x = std::min(lo_x, c_.x0[q]), hi_x = std::max(hi_x, c_.x0[q] + c_.piece[q].cols);
      lo_y = std::min(lo_y, c_.y0[q]), hi_y = std::max(hi_y, c_.y0[q] + c_.piece[q].rows);
    }
    if (lo_x > hi_x) lo_x = hi_x = lo_y = hi_y = 0;  // no pieces: all grey
    const auto position = [](int fixed, int lo, int hi) {
      return std::clamp<int>(cv::saturate_cast<short>(fixed >> kInterBits), lo - 2, hi);
    };
    s_.col_off.resize(out_w);
    s_.col_w.resize(out_w);
    span0_ = 1 << 30;
    int span1 = -(1 << 30);
    for (int x = 0; x < out_w; ++x) {
      const int sx = position(col_fixed[x], lo_x, hi_x), fx = col_fixed[x] & 31;
      s_.col_off[x] = sx;
      s_.col_w[x] = (fx << 16) | (32 - fx);  // the 16-bit pair (32-fx, fx), as one madd operand
      span0_ = std::min(span0_, sx), span1 = std::max(span1, sx + 1);
    }
    span_w_ = span1 - span0_ + 1;
    for (int& off : s_.col_off) off = 3 * (off - span0_);
    s_.row_pos.resize(out_h);
    s_.row_w.resize(out_h);
    for (int y = 0; y < out_h; ++y) s_.row_pos[y] = position(row_fixed[y], lo_y, hi_y), s_.row_w[y] = row_fixed[y] & 31;
    for (auto& slot : s_.rows) slot.row = INT32_MIN, slot.used = 0, slot.pixels.resize(3 * span_w_ + 16);
    s_.vsum.resize(3 * span_w_ + 8);  // the horizontal pass reads 8 values from the last position
  }

  void run(cv::Mat& out) {
    for (int y = 0; y < out_h_; ++y) {
      const uint8_t* a = canvas_row(s_.row_pos[y]);
      const uint8_t* b = canvas_row(s_.row_pos[y] + 1);
      blend_rows(a, b, s_.row_w[y]);
      blend_columns(out.ptr<uint8_t>(y));
    }
  }

 private:
  struct RowSlot {
    int row = 0;
    uint64_t used = 0;
    std::vector<uint8_t> pixels;
  };

  // Canvas row r over the span, from a two-slot cache (consecutive output rows share source rows).
  const uint8_t* canvas_row(int r) {
    RowSlot* slot = &s_.rows[0];
    for (RowSlot& s : s_.rows) {
      if (s.row == r) {
        s.used = ++clock_;
        return s.pixels.data();
      }
      if (s.used < slot->used) slot = &s;
    }
    slot->row = r, slot->used = ++clock_;
    uint8_t* dst = slot->pixels.data();
    std::memset(dst, kGrey, 3 * span_w_);
    const int span1 = span0_ + span_w_;
    for (int q = r >= c_.split_y ? 2 : 0, end = q + 2; q < end; ++q) {
      const cv::Mat& p = c_.piece[q];
      const int ly = r - c_.y0[q];
      if (p.empty() || ly < 0 || ly >= p.rows) continue;
      const int x0 = std::max(span0_, c_.x0[q]), x1 = std::min(span1, c_.x0[q] + p.cols);
      if (x0 < x1) std::memcpy(dst + 3 * (x0 - span0_), p.ptr<uint8_t>(ly) + 3 * (x0 - c_.x0[q]), 3 * (x1 - x0));
    }
    return dst;
  }

  // vsum = (32-fy)*a + fy*b over the span, in 16 bits (at most 32*255).
  void blend_rows(const uint8_t* a, const uint8_t* b, int fy) {
    const int n = 3 * span_w_;
    uint16_t* v = s_.vsum.data();
    int i = 0;
#if defined(__SSE2__)
    const __m128i wa = _mm_set1_epi16(static_cast<short>(32 - fy)), wb = _mm_set1_epi16(static_cast<short>(fy));
    const __m128i zero = _mm_setzero_si128();
    for (; i + 16 <= n; i += 16) {
      const __m128i pa = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
      const __m128i pb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
      const __m128i lo = _mm_add_epi16(_mm_mullo_epi16(_mm_unpacklo_epi8(pa, zero), wa),
                                       _mm_mullo_epi16(_mm_unpacklo_epi8(pb, zero), wb));
      const __m128i hi = _mm_add_epi16(_mm_mullo_epi16(_mm_unpackhi_epi8(pa, zero), wa),
                                       _mm_mullo_epi16(_mm_unpackhi_epi8(pb, zero), wb));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(v + i), lo);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(v + i + 8), hi);
    }
#endif
    for (; i < n; ++i) v[i] = static_cast<uint16_t>((32 - fy) * a[i] + fy * b[i]);
  }

  // out[x] = ((32-fx)*vsum[sx] + fx*vsum[sx+1] + 512) >> 10 per channel.
  void blend_columns(uint8_t* out) const {
    const uint16_t* v = s_.vsum.data();
    int x = 0;
#if defined(__SSE2__)
    const __m128i round = _mm_set1_epi32(512);
    // One pixel per step: load (c0 c1 c2 | d0 d1 d2 ..) at the left neighbour, pair each channel with its
    // right neighbour, multiply-add with (32-fx, fx). Each step stores 4 bytes; the 4th is the next
    // pixel's first, rewritten by the next step, so the row's last pixel is done below instead.
    for (; x + 1 < out_w_; ++x) {
      const __m128i left = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + s_.col_off[x]));
      const __m128i pairs = _mm_unpacklo_epi16(left, _mm_srli_si128(left, 6));
      __m128i sum = _mm_madd_epi16(pairs, _mm_set1_epi32(s_.col_w[x]));
      sum = _mm_srai_epi32(_mm_add_epi32(sum, round), kAbBits);
      const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(sum, sum), sum);
      const int word = _mm_cvtsi128_si32(bytes);
      std::memcpy(out + 3 * x, &word, 4);
    }
#endif
    for (; x < out_w_; ++x) {
      const uint16_t* p = v + s_.col_off[x];
      const int w0 = s_.col_w[x] & 0xffff, w1 = s_.col_w[x] >> 16;
      for (int ch = 0; ch < 3; ++ch) out[3 * x + ch] = static_cast<uint8_t>((w0 * p[ch] + w1 * p[ch + 3] + 512) >> kAbBits);
    }
  }

  // Per-thread buffers, kept between calls so a warp allocates nothing once warm.
  struct Scratch {
    std::vector<int> col_off, col_w, row_pos, row_w;
    RowSlot rows[2];
    std::vector<uint16_t> vsum;
  };
  static Scratch& scratch() {
    thread_local Scratch s;
    return s;
  }

  const PieceCanvas& c_;
  int out_w_, out_h_;
  int span0_ = 0, span_w_ = 0;
  Scratch& s_ = scratch();
  uint64_t clock_ = 0;
};

}  // namespace

void warp_affine_pieces(const PieceCanvas& canvas, const cv::Matx23d& M, int out_w, int out_h, bool flip_lr,
                        bool flip_ud, cv::Mat& out) {
  out.create(out_h, out_w, CV_8UC3);
  // The inverse exactly as warpAffine forms it.
  double m[6] = {M(0, 0), M(0, 1), M(0, 2), M(1, 0), M(1, 1), M(1, 2)};
  double D = m[0] * m[4] - m[1] * m[3];
  D = D != 0 ? 1. / D : 0;
  const double a11 = m[4] * D, a22 = m[0] * D;
  m[0] = a11;
  m[1] *= -D;
  m[3] *= -D;
  m[4] = a22;
  const double b1 = -m[0] * m[2] - m[1] * m[5], b2 = -m[3] * m[2] - m[4] * m[5];
  m[2] = b1;
  m[5] = b2;

  // Column terms indexed by output column (the left-right flip folded in), row terms by output row.
  thread_local std::vector<int> adelta, bdelta, row_x0, row_y0;
  thread_local BlockMaps maps;
  adelta.resize(out_w);
  bdelta.resize(out_w);
  row_x0.resize(out_h);
  row_y0.resize(out_h);
  for (int x = 0; x < out_w; ++x) {
    const int ux = flip_lr ? out_w - 1 - x : x;
    adelta[x] = cv::saturate_cast<int>(m[0] * ux * (1 << kAbBits));
    bdelta[x] = cv::saturate_cast<int>(m[3] * ux * (1 << kAbBits));
  }
  for (int y = 0; y < out_h; ++y) {
    const int uy = flip_ud ? out_h - 1 - y : y;
    row_x0[y] = cv::saturate_cast<int>((m[1] * uy + m[2]) * (1 << kAbBits)) + kRoundDelta;
    row_y0[y] = cv::saturate_cast<int>((m[4] * uy + m[5]) * (1 << kAbBits)) + kRoundDelta;
  }
  if (out_w == 0 || out_h == 0) return;
  if (m[1] == 0 && m[3] == 0) {  // rows and columns map independently
    thread_local std::vector<int> col_fixed, row_fixed;  // 1/32-pixel source positions
    col_fixed.resize(out_w);
    row_fixed.resize(out_h);
    constexpr int shift = kAbBits - kInterBits;
    for (int x = 0; x < out_w; ++x) col_fixed[x] = (row_x0[0] + adelta[x]) >> shift;
    for (int y = 0; y < out_h; ++y) row_fixed[y] = (row_y0[y] + bdelta[0]) >> shift;
    AxisAlignedWarp(canvas, col_fixed.data(), row_fixed.data(), out_w, out_h).run(out);
    return;
  }
  // Whole-pixel source position of output pixel (x, y): (v >> 5) >> 5 == v >> 10.
  const auto src_x = [&](int x, int y) { return cv::saturate_cast<short>((row_x0[y] + adelta[x]) >> kAbBits); };
  const auto src_y = [&](int x, int y) { return cv::saturate_cast<short>((row_y0[y] + bdelta[x]) >> kAbBits); };

  for (int by = 0; by < out_h; by += kBlockRows) {
    const int bh = std::min(kBlockRows, out_h - by);
    for (int bx = 0; bx < out_w; bx += kBlockCols) {
      const int bw = std::min(kBlockCols, out_w - bx);
      // Source positions are monotone in x and in y (sums of monotone terms, floored), so the corners
      // bound the whole block.
      const int xr = bx + bw - 1, yb = by + bh - 1;
      const int sx[4] = {src_x(bx, by), src_x(xr, by), src_x(bx, yb), src_x(xr, yb)};
      const int sy[4] = {src_y(bx, by), src_y(xr, by), src_y(bx, yb), src_y(xr, yb)};
      const int qx = side(*std::min_element(sx, sx + 4), *std::max_element(sx, sx + 4), canvas.split_x);
      const int qy = side(*std::min_element(sy, sy + 4), *std::max_element(sy, sy + 4), canvas.split_y);
      const bool uniform = qx >= 0 && qy >= 0;
      const int q = uniform ? qx + 2 * qy : 0;
      const int ox = uniform ? canvas.x0[q] : 0, oy = uniform ? canvas.y0[q] : 0;
      for (int y1 = 0; y1 < bh; ++y1)
        fill_maps(adelta.data() + bx, bdelta.data() + bx, row_x0[by + y1], row_y0[by + y1], ox, oy, bw,
                  maps.xy + y1 * bw * 2, maps.alpha + y1 * bw);
      cv::Mat block = out(cv::Rect(bx, by, bw, bh));
      if (uniform) {
        remap_piece(canvas.piece[q], maps, bw, block, cv::Rect(0, 0, bw, bh));
        continue;
      }
      MixedBlock(canvas, maps, bw).run(block, cv::Rect(0, 0, bw, bh));
    }
  }
}

}  // namespace kestrel
