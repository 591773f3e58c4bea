// Tests of dl/utils: the progress bar in its two modes (redrawn in place on a terminal, periodic
// plain lines otherwise), SVG charts, and StateDict composition for checkpoints.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include <dl/io/state_dict.hpp>
#include <dl/utils/plot.hpp>
#include <dl/utils/progress.hpp>

using dl::utils::ProgressBar;

namespace {
size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("progress bar on a terminal: one line redrawn in place, throttled, ended by finish") {
  std::ostringstream out;
  double t = 0;
  ProgressBar bar(10, {.description = "epoch 1/3", .unit = "img", .tty = true, .out = &out, .clock = [&] { return t; }});
  CHECK(bar.tty());
  for (int i = 0; i < 10; ++i) {
    t += 0.05;  // 20 updates per second, drawn at most every 0.1 s
    bar.update(1, {{"loss", 0.5 - 0.01 * i}, {"acc", 0.8}}, 128);
  }
  bar.finish();
  const std::string s = out.str();
  CHECK(count(s, "\r") >= 4);
  CHECK(count(s, "\r") <= 7);
  CHECK(count(s, "\n") == 1);
  CHECK(s.back() == '\n');
  CHECK(count(s, "\x1b[K") == count(s, "\r"));
  const std::string last = s.substr(s.rfind('\r') + 1);
  CHECK(last.find("epoch 1/3 [========================] 10/10") == 0);
  CHECK(last.find("loss 0.4100") != std::string::npos);
  CHECK(last.find("acc 80.00%") != std::string::npos);
  CHECK(last.find("2560 img/s") != std::string::npos);  // 1280 images in 0.5 s
  CHECK(last.find("00:00") != std::string::npos);
  CHECK(last.find("eta") == std::string::npos);  // done
}

TEST_CASE("progress bar in a log: plain lines every log_seconds, no carriage returns, an ETA") {
  std::ostringstream out;
  double t = 0;
  ProgressBar bar(100, {.description = "train", .tty = false, .log_seconds = 10, .out = &out, .clock = [&] { return t; }});
  for (int i = 0; i < 100; ++i) {
    t += 1;
    bar.update();
  }
  bar.finish();
  const std::string s = out.str();
  CHECK(count(s, "\r") == 0);
  CHECK(count(s, "[") == 0);
  CHECK(count(s, "\n") == 10);  // at 1 s, 11 s, ..., 91 s
  CHECK(s.find("train   1/100") == 0);
  CHECK(s.find("train  11/100  1 it/s  00:11 eta 01:29\n") != std::string::npos);
  CHECK(bar.eta() == 0);
  CHECK(dl::utils::format_duration(3725) == "1:02:05");
  CHECK(dl::utils::format_duration(NAN) == "--:--");
  CHECK_THROWS_WITH_AS(ProgressBar(-1), doctest::Contains("total must be non-negative"), dl::Error);
}

TEST_CASE("SVG charts: one polyline per series, labels escaped, bad data rejected") {
  dl::utils::Chart loss{.title = "loss <train & test>", .x_label = "epoch", .y_label = "cross entropy"};
  loss.series.push_back({"train", {1, 2, 3}, {0.9, 0.5, 0.4}});
  loss.series.push_back({"test", {1, 2, 3}, {0.8, 0.6, 0.5}});
  dl::utils::Chart acc{.title = "accuracy", .x_label = "epoch"};
  acc.series.push_back({"test", {1, 2, 3}, {0.8, 0.85, 0.9}});
  const std::string svg = dl::utils::to_svg({loss, acc}, 400, 300);
  CHECK(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"800\" height=\"300\"") == 0);
  CHECK(count(svg, "<polyline") == 3);
  CHECK(count(svg, "<circle") == 9);
  CHECK(svg.find("loss &lt;train &amp; test&gt;") != std::string::npos);
  CHECK(svg.find("</svg>") != std::string::npos);
  dl::utils::Chart flat{.title = "flat"};
  flat.series.push_back({"one point", {1}, {2}});
  CHECK_NOTHROW(dl::utils::to_svg({flat}));
  dl::utils::Chart bad{.title = "bad"};
  bad.series.push_back({"nan", {1, 2}, {0.5, NAN}});
  CHECK_THROWS_WITH_AS(dl::utils::to_svg({bad}), doctest::Contains("series 'nan' has a non-finite point at 1"), dl::Error);
  bad.series[0] = {"short", {1, 2}, {0.5}};
  CHECK_THROWS_WITH_AS(dl::utils::to_svg({bad}), doctest::Contains("has 2 x values but 1 y values"), dl::Error);
  CHECK_THROWS_WITH_AS(dl::utils::write_svg("/nonexistent/dir/x.svg", {loss}), doctest::Contains("cannot open"), dl::Error);
}

TEST_CASE("StateDict: update with a prefix and sub compose checkpoints") {
  dl::StateDict model{{"fc.weight", dl::ones({2, 2})}};
  model.metadata["note"] = "m";
  dl::StateDict opt{{"state.0.step", dl::scalar_tensor<double>(3)}};
  dl::StateDict ckpt;
  ckpt.update(model, "model.");
  ckpt.update(opt, "optimizer.");
  ckpt.insert("epoch", dl::scalar_tensor<int64_t>(4));
  CHECK(ckpt.keys() == std::vector<std::string>{"model.fc.weight", "optimizer.state.0.step", "epoch"});
  CHECK(ckpt.metadata.at("model.note") == "m");
  const dl::StateDict back = ckpt.sub("model.");
  CHECK(back.keys() == std::vector<std::string>{"fc.weight"});
  CHECK(back.metadata.at("note") == "m");
  CHECK(back.at("fc.weight").is_same(model.at("fc.weight")));
  CHECK(ckpt.sub("none.").empty());
}
