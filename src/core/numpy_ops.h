// The few numpy 1.24 routines YOLOv5's metrics lean on, reproduced operation for operation so the
// C++ metrics agree with the Python ones to the last bit where that is feasible: argsort's default
// introsort (not stable: its tie order is part of the result), pairwise summation (np.sum/np.mean),
// np.interp, np.linspace and np.trapz; and utils/metrics.py smooth, which is np.convolve.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kestrel::numpy {

// np.argsort(values) with the default kind='quicksort' on a float32 or float64 array: numpy's introsort
// (median-of-3 quicksort, insertion sort below 16 elements, heapsort past 2*log2(n) depth), with
// NaN sorting last. Ties come out in whatever order that algorithm leaves them, as in numpy.
std::vector<int64_t> argsort_quick(const std::vector<float>& values);
std::vector<int64_t> argsort_quick(const std::vector<double>& values);

// np.add.reduce on a float64 array: 0.0 + numpy's pairwise sum (8 accumulators per 128 block).
double sum(const double* values, size_t n, size_t stride = 1);
inline double sum(const std::vector<double>& v) { return sum(v.data(), v.size()); }
inline double mean(const std::vector<double>& v) { return sum(v) / static_cast<double>(v.size()); }

// np.linspace(start, stop, num) (endpoint included, last value exactly stop).
std::vector<double> linspace(double start, double stop, size_t num);

// np.interp(x, xp, fp, left, right) for xp non-decreasing (numpy's defaults are left = fp[0],
// right = fp[-1]).
std::vector<double> interp(const std::vector<double>& x, const std::vector<double>& xp,
                           const std::vector<double>& fp, double left, double right);

// np.trapz(y, x).
double trapz(const std::vector<double>& y, const std::vector<double>& x);

// utils/metrics.py smooth(y, f): box filter of odd width round(len*f*2)//2 + 1, edges padded by
// repetition (np.convolve 'valid'). Used for argmax and plots only, so the dot product's summation
// order (BLAS-dependent in numpy) does not matter.
std::vector<double> box_smooth(const std::vector<double>& y, double f);

}  // namespace kestrel::numpy
