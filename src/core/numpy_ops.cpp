// numpy 1.24 routines used by YOLOv5's metrics, reproduced step by step (see numpy_ops.h).
#include "core/numpy_ops.h"

#include <cmath>
#include <utility>

namespace kestrel::numpy {
namespace {

// numpy's float ordering for sorting: NaN is larger than everything else.
template <typename T>
inline bool less(T a, T b) { return a < b || (b != b && a == a); }

// numpy's aheapsort on the index range idx[lo, lo + n): the introsort's fallback.
template <typename T>
void heapsort_indices(const T* v, int64_t* idx, int64_t n) {
  int64_t* a = idx - 1;  // 1-based heap indexing, as numpy does it
  auto sift = [&](int64_t start, int64_t tmp, int64_t len) {
    int64_t i = start;
    for (int64_t j = start * 2; j <= len;) {
      if (j < len && less(v[a[j]], v[a[j + 1]])) ++j;
      if (!less(v[tmp], v[a[j]])) break;
      a[i] = a[j];
      i = j;
      j += j;
    }
    a[i] = tmp;
  };
  for (int64_t l = n >> 1; l > 0; --l) sift(l, a[l], n);
  while (n > 1) {
    const int64_t tmp = a[n];
    a[n] = a[1];
    --n;
    sift(1, tmp, n);
  }
}

int most_significant_bit(uint64_t n) {
  int msb = 0;
  while (n >>= 1) ++msb;
  return msb;
}

constexpr int64_t kSmallQuicksort = 15;  // numpy's SMALL_QUICKSORT

}  // namespace

template <typename T>
std::vector<int64_t> argsort_introsort(const std::vector<T>& values) {
  const int64_t num = static_cast<int64_t>(values.size());
  std::vector<int64_t> order(values.size());
  for (int64_t i = 0; i < num; ++i) order[i] = i;
  if (num < 2) return order;
  const T* v = values.data();
  int64_t* base = order.data();

  struct Range {
    int64_t lo, hi;
    int depth;
  };
  std::vector<Range> stack;  // the larger partition waits here, as in numpy
  int64_t lo = 0, hi = num - 1;
  int depth = most_significant_bit(static_cast<uint64_t>(num)) * 2;
  for (;;) {
    if (depth < 0) {
      heapsort_indices(v, base + lo, hi - lo + 1);
    } else {
      while (hi - lo > kSmallQuicksort) {
        // Median of three into order[mid], pivot parked at hi - 1.
        const int64_t mid = lo + ((hi - lo) >> 1);
        if (less(v[base[mid]], v[base[lo]])) std::swap(base[mid], base[lo]);
        if (less(v[base[hi]], v[base[mid]])) std::swap(base[hi], base[mid]);
        if (less(v[base[mid]], v[base[lo]])) std::swap(base[mid], base[lo]);
        const T pivot = v[base[mid]];
        int64_t i = lo, j = hi - 1;
        std::swap(base[mid], base[j]);
        for (;;) {
          do ++i; while (less(v[base[i]], pivot));
          do --j; while (less(pivot, v[base[j]]));
          if (i >= j) break;
          std::swap(base[i], base[j]);
        }
        std::swap(base[i], base[hi - 1]);
        --depth;
        if (i - lo < hi - i) {
          stack.push_back({i + 1, hi, depth});
          hi = i - 1;
        } else {
          stack.push_back({lo, i - 1, depth});
          lo = i + 1;
        }
      }
      for (int64_t i = lo + 1; i <= hi; ++i) {  // insertion sort of the small remainder
        const int64_t vi = base[i];
        const T vp = v[vi];
        int64_t j = i;
        while (j > lo && less(vp, v[base[j - 1]])) {
          base[j] = base[j - 1];
          --j;
        }
        base[j] = vi;
      }
    }
    if (stack.empty()) break;
    lo = stack.back().lo;
    hi = stack.back().hi;
    depth = stack.back().depth;
    stack.pop_back();
  }
  return order;
}

std::vector<int64_t> argsort_quick(const std::vector<float>& values) { return argsort_introsort(values); }
std::vector<int64_t> argsort_quick(const std::vector<double>& values) { return argsort_introsort(values); }

namespace {

double pairwise_sum(const double* a, size_t n, size_t stride) {
  constexpr size_t kBlock = 128;  // numpy's PW_BLOCKSIZE
  if (n < 8) {
    double res = 0.;
    for (size_t i = 0; i < n; ++i) res += a[i * stride];
    return res;
  }
  if (n <= kBlock) {
    double r[8];
    for (size_t k = 0; k < 8; ++k) r[k] = a[k * stride];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (size_t k = 0; k < 8; ++k) r[k] += a[(i + k) * stride];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i * stride];
    return res;
  }
  size_t half = n / 2;
  half -= half % 8;
  return pairwise_sum(a, half, stride) + pairwise_sum(a + half * stride, n - half, stride);
}

}  // namespace

double sum(const double* values, size_t n, size_t stride) {
  return 0.0 + pairwise_sum(values, n, stride);  // add's identity starts the reduction
}

std::vector<double> linspace(double start, double stop, size_t num) {
  std::vector<double> y(num);
  if (num == 0) return y;
  const size_t div = num - 1;
  const double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0.0;
  for (size_t i = 0; i < num; ++i) y[i] = static_cast<double>(i) * step + start;
  if (num > 1) y[num - 1] = stop;
  return y;
}

std::vector<double> interp(const std::vector<double>& x, const std::vector<double>& xp,
                           const std::vector<double>& fp, double left, double right) {
  std::vector<double> out(x.size());
  const size_t n = xp.size();
  for (size_t k = 0; k < x.size(); ++k) {
    const double xv = x[k];
    if (std::isnan(xv)) {
      out[k] = xv;
      continue;
    }
    if (xv > xp[n - 1]) {
      out[k] = right;
      continue;
    }
    if (xv < xp[0]) {
      out[k] = left;
      continue;
    }
    // j with xp[j] <= xv < xp[j+1] (the last of equal xp values), as numpy's binary search finds.
    size_t lo = 0, hi = n;
    while (lo < hi) {
      const size_t mid = lo + ((hi - lo) >> 1);
      if (xv >= xp[mid]) lo = mid + 1;
      else hi = mid;
    }
    const size_t j = lo - 1;
    if (j == n - 1 || xp[j] == xv) {
      out[k] = fp[j];
      continue;
    }
    const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
    double v = slope * (xv - xp[j]) + fp[j];
    if (std::isnan(v)) {  // numpy retries from the right end, then falls back to a flat segment
      v = slope * (xv - xp[j + 1]) + fp[j + 1];
      if (std::isnan(v) && fp[j] == fp[j + 1]) v = fp[j];
    }
    out[k] = v;
  }
  return out;
}

double trapz(const std::vector<double>& y, const std::vector<double>& x) {
  if (y.size() < 2) return 0.0;
  std::vector<double> terms(y.size() - 1);
  for (size_t i = 0; i + 1 < y.size(); ++i) terms[i] = (x[i + 1] - x[i]) * (y[i + 1] + y[i]) / 2.0;
  return sum(terms);
}

std::vector<double> box_smooth(const std::vector<double>& y, double f) {
  const size_t nf = static_cast<size_t>(std::nearbyint(static_cast<double>(y.size()) * f * 2)) / 2 + 1;
  const size_t pad = nf / 2;
  std::vector<double> padded(pad, y.front());
  padded.insert(padded.end(), y.begin(), y.end());
  padded.insert(padded.end(), pad, y.back());
  const double weight = 1.0 / static_cast<double>(nf);
  std::vector<double> out(padded.size() - nf + 1);
  for (size_t i = 0; i < out.size(); ++i) {
    double acc = 0.0;
    for (size_t k = 0; k < nf; ++k) acc += padded[i + k] * weight;
    out[i] = acc;
  }
  return out;
}

}  // namespace kestrel::numpy
