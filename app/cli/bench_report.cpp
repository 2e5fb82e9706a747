#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <pcl/pcl_config.h>

#include "args.h"
#include "bench.h"
#include "core/device.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include "json.h"
#include "peers/open3d_peer.h"

namespace cumulus::cli {

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s)
    q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"')
        cur += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        cur += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

std::string fixed_text(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

void write_bench_csv(const std::string& path, const std::vector<BenchRow>& rows) {
  AtomicOstream f(path);
  f << "sweep,case,x,points,tolerance,method,median_ms,min_ms,max_ms,clusters,agreement,stages_"
       "ms,floor_ms\n";
  for (const auto& r : rows) {
    std::string stages;
    for (const auto& [name, ms] : r.stages)
      stages += (stages.empty() ? "" : ";") + name + "=" + fixed_text(ms, 4);
    f << csv_field(r.sweep) << ',' << csv_field(r.label) << ',' << r.x << ',' << r.points << ','
      << r.tolerance << ',' << csv_field(r.method) << ',' << fixed_text(r.median_ms, 4) << ','
      << fixed_text(r.min_ms, 4) << ',' << fixed_text(r.max_ms, 4) << ',' << r.clusters << ','
      << csv_field(r.agreement) << ',' << csv_field(stages) << ',' << fixed_text(r.floor_ms, 4)
      << '\n';
  }
  f.commit();
}

std::vector<BenchRow> read_bench_csv(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw IoError(path, "cannot open for reading");
  std::string line;
  std::getline(f, line);
  if (line.rfind("sweep,case,x,points", 0) != 0) throw IoError(path, "not a cumulus benchmark CSV");
  std::vector<BenchRow> rows;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    const auto c = split_csv_line(line);
    if (c.size() < 12) throw IoError(path, "short row: " + line.substr(0, 60));
    BenchRow r;
    r.sweep = c[0];
    r.label = c[1];
    r.x = std::stod(c[2]);
    r.points = std::stoull(c[3]);
    r.tolerance = std::stod(c[4]);
    r.method = c[5];
    r.median_ms = std::stod(c[6]);
    r.min_ms = std::stod(c[7]);
    r.max_ms = std::stod(c[8]);
    r.clusters = std::stoull(c[9]);
    r.agreement = c[10];
    std::istringstream st(c[11]);
    for (std::string kv; std::getline(st, kv, ';');) {
      const auto eq = kv.find('=');
      if (eq != std::string::npos)
        r.stages.emplace_back(kv.substr(0, eq), std::stod(kv.substr(eq + 1)));
    }
    if (c.size() > 12 && !c[12].empty()) r.floor_ms = std::stod(c[12]);  // older files: none
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string bench_markdown(const std::vector<BenchRow>& rows, const std::string& title,
                           const std::string& host, const std::string& command) {
  std::ostringstream md;
  md << "# " << title << "\n\n- Host: " << host << "\n- Command: `" << command << "`\n"
     << "- Times: median wall time of the whole call in ms (upload and download included for GPU "
        "methods); "
        "speed-up = cpu median / method median; agreement = results identical to the cpu "
        "reference (cluster labels for every point, cut rows for every column).\n";
  const std::vector<std::string> sweeps = distinct(rows, &BenchRow::sweep),
                                 methods = distinct(rows, &BenchRow::method);
  for (const auto& sweep : sweeps) {
    md << "\n## " << sweep << "\n\n| case | points |";
    for (const auto& m : methods)
      md << ' ' << m << " |";
    md << "\n|---|---:|";
    for (std::size_t i = 0; i < methods.size(); ++i)
      md << "---:|";
    md << '\n';
    std::vector<std::string> cases;
    for (const auto& r : rows)
      if (r.sweep == sweep && std::find(cases.begin(), cases.end(), r.label) == cases.end())
        cases.push_back(r.label);
    for (const auto& c : cases) {
      const BenchRow* cpu = nullptr;
      std::size_t points = 0;
      for (const auto& r : rows)
        if (r.sweep == sweep && r.label == c) {
          points = r.points;
          if (r.method == "cpu") cpu = &r;
        }
      md << "| " << c << " | " << points << " |";
      for (const auto& m : methods) {
        const BenchRow* row = nullptr;
        for (const auto& r : rows)
          if (r.sweep == sweep && r.label == c && r.method == m) row = &r;
        if (!row) {
          md << " – |";
        } else if (row->agreement.rfind("error", 0) == 0) {
          md << " failed |";
        } else if (row->agreement.rfind("skipped", 0) == 0) {
          md << " skipped |";
        } else {
          md << ' ' << fixed_text(row->median_ms, row->median_ms < 10 ? 3 : 1);
          if (cpu && row != cpu && row->median_ms > 0 && cpu->agreement.rfind("skipped", 0) != 0)
            md << " (" << fixed_text(cpu->median_ms / row->median_ms, 0) << "x)";
          if (row->agreement.rfind("DIFFERENT", 0) == 0) md << " **differs**";
          md << " |";
        }
      }
      md << '\n';
    }
  }
  std::size_t identical = 0, compared = 0;
  md << "\n## Agreement with the cpu reference\n\n";
  for (const auto& r : rows) {
    if (r.agreement.rfind("reference", 0) == 0 || r.agreement.empty()) continue;
    if (r.agreement.rfind("skipped", 0) == 0 || r.agreement.rfind("no reference", 0) == 0) {
      md << "- " << r.sweep << " / " << r.label << " / " << r.method << ": " << r.agreement << '\n';
      continue;
    }
    ++compared;
    // Features report two comparisons; end to end is the one that counts here.
    if (r.agreement == "identical" || r.agreement.rfind("end to end: identical", 0) == 0)
      ++identical;
    else
      md << "- " << r.sweep << " / " << r.label << " / " << r.method << ": " << r.agreement << '\n';
  }
  md << "- " << identical << " of " << compared
     << " runs gave results identical to the cpu reference.\n";
  bool floors = false;
  for (const auto& r : rows)
    floors = floors || (r.floor_ms > 0 && r.median_ms > 0);
  if (floors) {
    md << "\n## Distance from the floor\n\nFloor: the row's bytes up and down at this host's "
          "page-locked bandwidths plus one launch waited for (bench limits); for an image of a "
          "streamed batch, the slower direction plus its share of the launch; for ICP and GICP, "
          "also one wait for the whole GPU (the cheaper of a dependent kernel and a grid barrier) "
          "for each iteration and cost evaluation.\n\n"
          "| sweep | case | method | ms | floor ms | times the floor |\n"
          "|---|---|---|---:|---:|---:|\n";
    for (const auto& r : rows)
      if (r.floor_ms > 0 && r.median_ms > 0)
        md << "| " << r.sweep << " | " << r.label << " | " << r.method << " | "
           << fixed_text(r.median_ms, r.median_ms < 10 ? 3 : 1) << " | "
           << fixed_text(r.floor_ms, 4) << " | "
           << fixed_text(r.median_ms / r.floor_ms, r.median_ms / r.floor_ms < 10 ? 1 : 0) << " |\n";
  }
  return md.str();
}

const DeviceLimits* bench_limits() {
  // Measured once, the first time a row asks: about a second of the GPU's time.
  static const std::optional<DeviceLimits> limits = []() -> std::optional<DeviceLimits> {
    if (!query_device().available) return std::nullopt;
    try {
      return measure_device_limits();
    } catch (const Error&) {
      return std::nullopt;
    }
  }();
  return limits ? &*limits : nullptr;
}

void set_floor(BenchRow& row, double bytes_up, double bytes_down, std::size_t batch,
               int grid_steps) {
  if (const DeviceLimits* l = bench_limits())
    row.floor_ms = floor_ms(*l, bytes_up, bytes_down, batch, grid_steps);
}

std::string limits_markdown(const DeviceLimits& l) {
  std::ostringstream md;
  md << "\n## Limits of this host (" << l.device << ")\n\n| quantity | measured |\n|---|---:|\n"
     << "| upload, page-locked | " << fixed_text(l.h2d_pinned_gbps, 1) << " GB/s |\n"
     << "| download, page-locked | " << fixed_text(l.d2h_pinned_gbps, 1) << " GB/s |\n"
     << "| upload, pageable | " << fixed_text(l.h2d_pageable_gbps, 1) << " GB/s |\n"
     << "| download, pageable | " << fixed_text(l.d2h_pageable_gbps, 1) << " GB/s |\n"
     << "| device memory (copy: read + write) | " << fixed_text(l.device_copy_gbps, 0)
     << " GB/s |\n"
     << "| launch and wait (empty kernel) | " << fixed_text(l.launch_sync_us, 2) << " us |\n"
     << "| launch queued behind others | " << fixed_text(l.launch_queued_us, 2) << " us |\n"
     << "| one-kernel graph, launch and wait | " << fixed_text(l.graph_launch_us, 2) << " us |\n"
     << "| a loop's step as a kernel launched dependent on the last (cheapest shape) | "
     << fixed_text(l.dependent_step_us, 2) << " us |\n"
     << "| a loop's step as a barrier across one resident grid (cheapest shape) | "
     << (l.grid_barrier_us > 0 ? fixed_text(l.grid_barrier_us, 2) + " us" : std::string("none"))
     << " |\n"
     << "\nCopies of " << (l.copy_bytes >> 20)
     << " MiB, the best of 10 (pageable: of 5); latencies the median of 2,000 (queued: the mean "
        "of 20,000); a dependent kernel the median of 5 chains of 256 queued before they start, "
        "a grid barrier the mean over 4,000 in one cooperative kernel. A loop whose steps each "
        "wait for the whole GPU (ICP's iterations) has the cheaper of the two a step in its "
        "floor.\n";
  if (!l.loop_steps.empty()) {
    md << "\nA loop's step by shape:\n\n| step | threads a block | blocks | us "
          "|\n|---|---:|---:|---:|\n";
    for (const LoopStepWait& w : l.loop_steps)
      md << "| " << w.how << " | " << w.block_threads << " | " << w.blocks << " | "
         << (w.us > 0 ? fixed_text(w.us, 2) : std::string("not measured")) << " |\n";
  }
  return md.str();
}

int run_bench_limits(const Args& a, std::ostream& out, const std::string& command_line) {
  const DeviceLimits l = measure_device_limits();
  const std::string dir = a.get("out", "bench-limits");
  std::filesystem::create_directories(dir);
  AtomicOstream md(dir + "/limits.md");
  md << "# Limits\n\n- Host: " << describe_host() << "\n- Command: `" << command_line << "`\n"
     << limits_markdown(l);
  md.commit();
  if (a.flag("json")) {
    QJsonArray steps;
    for (const LoopStepWait& w : l.loop_steps)
      steps.append(QJsonObject{{"how", QString::fromStdString(w.how)},
                               {"block_threads", w.block_threads},
                               {"blocks", w.blocks},
                               {"us", w.us}});
    print_json(out, QJsonObject{{"device", QString::fromStdString(l.device)},
                                {"h2d_pinned_gbps", l.h2d_pinned_gbps},
                                {"d2h_pinned_gbps", l.d2h_pinned_gbps},
                                {"h2d_pageable_gbps", l.h2d_pageable_gbps},
                                {"d2h_pageable_gbps", l.d2h_pageable_gbps},
                                {"device_copy_gbps", l.device_copy_gbps},
                                {"launch_sync_us", l.launch_sync_us},
                                {"launch_queued_us", l.launch_queued_us},
                                {"graph_launch_us", l.graph_launch_us},
                                {"dependent_step_us", l.dependent_step_us},
                                {"grid_barrier_us", l.grid_barrier_us},
                                {"loop_steps", steps},
                                {"copy_bytes", double(l.copy_bytes)}});
    return 0;
  }
  out << limits_markdown(l) << "wrote " << dir << "/limits.md\n";
  return 0;
}

int write_bench_report(const std::vector<BenchRow>& rows, const std::string& dir,
                       const std::string& name, const std::string& title, const std::string& notes,
                       const std::string& command_line, std::ostream& out) {
  write_bench_csv(dir + "/" + name + ".csv", rows);
  AtomicOstream md(dir + "/" + name + ".md");
  md << bench_markdown(
            rows, title,
            describe_host() + "; peers: PCL " + PCL_VERSION_PRETTY + ", " + open3d_peer::version(),
            command_line)
     << notes;
  if (const DeviceLimits* l = bench_limits()) md << limits_markdown(*l);
  md.commit();
  std::string why;
  const auto pngs = plot_bench(dir + "/" + name + ".csv", dir, name, &why);
  out << "wrote " << dir << "/" << name << ".csv, " << dir << "/" << name << ".md";
  for (const auto& png : pngs)
    out << ", " << png;
  out << '\n';
  if (pngs.empty()) out << "plots: " << why << '\n';
  return 0;
}

}  // namespace cumulus::cli
