// YOLOv5 letterbox geometry and pixels (resize into the centre of a 114-grey canvas).
#include "data/augment/letterbox.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

namespace kestrel {
namespace {

// Python's round() on a double: half to even (the default FE_TONEAREST mode of nearbyint).
int round_half_even(double v) { return static_cast<int>(std::nearbyint(v)); }

}  // namespace

LetterboxGeometry letterbox_geometry(int h, int w, int new_h, int new_w, bool auto_pad, bool scaleup, int stride) {
  LetterboxGeometry g{};
  double r = std::min(static_cast<double>(new_h) / h, static_cast<double>(new_w) / w);
  if (!scaleup) r = std::min(r, 1.0);
  g.ratio = r;
  g.new_unpad_w = round_half_even(w * r);
  g.new_unpad_h = round_half_even(h * r);
  int pad_w = new_w - g.new_unpad_w, pad_h = new_h - g.new_unpad_h;
  if (auto_pad) {  // np.mod: result takes the divisor's sign
    pad_w = ((pad_w % stride) + stride) % stride;
    pad_h = ((pad_h % stride) + stride) % stride;
  }
  g.dw = pad_w / 2.0;
  g.dh = pad_h / 2.0;
  g.top = round_half_even(g.dh - 0.1);
  g.bottom = round_half_even(g.dh + 0.1);
  g.left = round_half_even(g.dw - 0.1);
  g.right = round_half_even(g.dw + 0.1);
  return g;
}

void use_ultralytics_geometry(LetterboxInfo& info) {
  info.pad_w = round_half_even(info.pad_w - 0.1);
  info.pad_h = round_half_even(info.pad_h - 0.1);
  info.gain_per_axis = true;
}

void letterbox(const cv::Mat& image, int new_h, int new_w, bool auto_pad, bool scaleup, cv::Mat& out,
               LetterboxInfo* info, int stride) {
  const cv::Mat img = image;  // keeps the source alive if `out` is the same Mat object
  const LetterboxGeometry g = letterbox_geometry(img.rows, img.cols, new_h, new_w, auto_pad, scaleup, stride);
  const int out_h = g.top + g.new_unpad_h + g.bottom, out_w = g.left + g.new_unpad_w + g.right;
  out.create(out_h, out_w, img.type());
  // Writing the resized image straight into the canvas ROI gives the same pixels as resize + copyMakeBorder
  // without the intermediate image.
  const cv::Rect inner(g.left, g.top, g.new_unpad_w, g.new_unpad_h);
  cv::Mat roi = out(inner);
  if (img.size() == inner.size())
    img.copyTo(roi);
  else
    cv::resize(img, roi, inner.size(), 0, 0, cv::INTER_LINEAR);
  const cv::Scalar grey(114, 114, 114, 114);
  out.rowRange(0, g.top).setTo(grey);
  out.rowRange(g.top + g.new_unpad_h, out_h).setTo(grey);
  out(cv::Rect(0, g.top, g.left, g.new_unpad_h)).setTo(grey);
  out(cv::Rect(g.left + g.new_unpad_w, g.top, g.right, g.new_unpad_h)).setTo(grey);
  if (info) {
    info->orig_h = img.rows;
    info->orig_w = img.cols;
    info->ratio_h = info->ratio_w = g.ratio;
    info->pad_w = g.dw;
    info->pad_h = g.dh;
  }
}

}  // namespace kestrel
