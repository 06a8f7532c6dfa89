// report.json and timeline.png.
#include "profile/report_json.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "core/cpu_cores.h"
#include "report/plot_canvas.h"

namespace kestrel {

namespace {

// Utilisation over time on one percent scale: the process's CPU as a share of the cores it may use
// (and its loader and compute threads apart), the GPU's utilisation as NVML reports it.
void draw_utilisation(cv::Mat& img, const cv::Rect& area, const std::vector<SystemSample>& samples) {
  const double cores = usable_cores();
  PlotFrame f;
  f.area = area;
  f.x.add(0), f.y.add(0), f.y.add(100);
  f.x.add(samples.empty() ? 1.0 : samples.back().t);
  f.x.settle();
  draw_frame(img, f, {"utilisation over the run", "time since the run started (s)",
                      cv::format("%% busy (CPU: of %.0f cores)", cores), nullptr});
  struct Series { const char* name; double SystemSample::*field; double scale; cv::Scalar colour; };
  const Series series[] = {{"process CPU", &SystemSample::process_cpu, 100 / cores, {60, 60, 220}},
                           {"loader threads", &SystemSample::loader_cpu, 100 / cores, {40, 140, 230}},
                           {"compute threads", &SystemSample::compute_cpu, 100 / cores, {80, 170, 80}},
                           {"GPU", &SystemSample::gpu_util, 100, {160, 80, 160}}};
  int legend_x = area.x;
  for (const auto& se : series) {
    if (se.field == &SystemSample::gpu_util && (samples.empty() || !samples.front().has_gpu)) continue;
    for (size_t i = 1; i < samples.size(); ++i)
      cv::line(img, {f.px(samples[i - 1].t), f.py(samples[i - 1].*se.field * se.scale)},
               {f.px(samples[i].t), f.py(samples[i].*se.field * se.scale)}, se.colour, 2, cv::LINE_AA);
    cv::line(img, {legend_x, img.rows - 14}, {legend_x + 18, img.rows - 14}, se.colour, 2, cv::LINE_AA);
    draw_text(img, se.name, {legend_x + 22, img.rows - 10}, 0.45);
    legend_x += 170;
  }
}

void draw_chart(const std::string& path, const StageTotals& steps, const std::vector<SystemSample>& samples) {
  const int W = 900, H = 480, left = 70, right = 20;
  cv::Mat img(H, W, CV_8UC3, cv::Scalar(255, 255, 255));
  const cv::Scalar colours[] = {{60, 60, 220}, {200, 160, 60}, {80, 170, 80}, {40, 140, 230},
                                {160, 80, 160}, {30, 90, 200}, {120, 120, 120}, {0, 200, 200}, {200, 200, 0}};
  // Stacked bar: share of step time per stage.
  cv::putText(img, "share of step time", {left, 22}, cv::FONT_HERSHEY_SIMPLEX, 0.5, {0, 0, 0}, 1, cv::LINE_AA);
  double x = left;
  const double bar_w = W - left - right;
  for (size_t s = 0; s < static_cast<size_t>(StepStage::validation); ++s) {
    const double share = steps.share(static_cast<StepStage>(s));
    const int x1 = static_cast<int>(x + share * bar_w);
    cv::rectangle(img, {static_cast<int>(x), 30}, {x1, 60}, colours[s], cv::FILLED);
    const char* name = stage_name(static_cast<StepStage>(s));
    const int text_w = cv::getTextSize(name, cv::FONT_HERSHEY_SIMPLEX, 0.4, 1, nullptr).width;
    if (text_w + 6 <= x1 - static_cast<int>(x))  // a label only where it fits its segment
      cv::putText(img, name, {static_cast<int>(x) + 3, 50}, cv::FONT_HERSHEY_SIMPLEX, 0.4, {255, 255, 255}, 1, cv::LINE_AA);
    x = x1;
  }
  // Legend of the bar: every stage that took time, with its share (small segments carry no label).
  int legend_x = left, legend_y = 78;
  for (size_t s = 0; s < static_cast<size_t>(StepStage::validation); ++s) {
    const double share = steps.share(static_cast<StepStage>(s));
    if (share < 0.0005) continue;
    const std::string text = cv::format("%s %.1f%%", stage_name(static_cast<StepStage>(s)), 100 * share);
    const int item_w = 14 + cv::getTextSize(text, cv::FONT_HERSHEY_SIMPLEX, 0.4, 1, nullptr).width + 14;
    if (legend_x + item_w > W - right) legend_x = left, legend_y += 18;  // next row
    cv::rectangle(img, {legend_x, legend_y - 10}, {legend_x + 10, legend_y}, colours[s], cv::FILLED);
    cv::putText(img, text, {legend_x + 14, legend_y}, cv::FONT_HERSHEY_SIMPLEX, 0.4, {0, 0, 0}, 1, cv::LINE_AA);
    legend_x += item_w;
  }
  draw_utilisation(img, {left, 150, W - left - right, H - 150 - 75}, samples);
  write_image(img, path);
}

}  // namespace

void write_run_report(const std::string& json_path, const StageTotals& steps, const std::vector<SystemSample>& samples,
                      const Verdict& verdict, const std::string& png_path) {
  nlohmann::json j;
  j["steps"] = steps.steps;
  for (size_t s = 0; s < kNumStages; ++s) {
    j["seconds"][stage_name(static_cast<StepStage>(s))] = steps.seconds[s];
    if (s != static_cast<size_t>(StepStage::validation)) j["share"][stage_name(static_cast<StepStage>(s))] = steps.share(static_cast<StepStage>(s));
  }
  j["ms_per_step"] = steps.steps ? 1000 * steps.step_seconds() / steps.steps : 0;
  j["verdict"] = {{"bound", bound_name(verdict.bound)}, {"summary", verdict.summary}, {"action", verdict.action}};
  auto& series = j["samples"] = nlohmann::json::array();
  for (const auto& s : samples)
    series.push_back({{"t", s.t}, {"process_cpu", s.process_cpu}, {"machine_cpu", s.machine_cpu}, {"loader_cpu", s.loader_cpu},
                      {"compute_cpu", s.compute_cpu}, {"rss_mb", s.rss_mb}, {"swap_used_mb", s.swap_used_mb},
                      {"disk_read_mb_s", s.disk_read_mb_s}, {"gpu_util", s.gpu_util}, {"gpu_power_w", s.gpu_power_w},
                      {"gpu_sm_clock_mhz", s.gpu_sm_clock_mhz}, {"gpu_temp_c", s.gpu_temp_c}});
  std::ofstream(json_path) << j.dump(1) << "\n";
  if (!png_path.empty()) draw_chart(png_path, steps, samples);
}

}  // namespace kestrel
