#include "objects/objects_export.h"

#include <cmath>
#include <iomanip>

#include "io/atomic_file.h"

namespace cumulus {

namespace {

void csv_number(std::ostream& out, double v) {
  if (std::isfinite(v)) out << v;  // NaN and infinities: an empty cell
}

void json_number(std::ostream& out, double v) {
  if (std::isfinite(v))
    out << v;
  else
    out << "null";
}

void json_vec(std::ostream& out, const std::array<double, 3>& v) {
  out << '[';
  for (std::size_t k = 0; k < 3; ++k) {
    if (k) out << ", ";
    json_number(out, v[k]);
  }
  out << ']';
}

}  // namespace

void save_objects_csv(const std::string& path, const std::vector<DetectedObject>& objects) {
  AtomicOstream csv(path);
  csv << "id,points,cx,cy,cz,min_x,min_y,min_z,max_x,max_y,max_z,box_cx,box_cy,box_cz,"
         "length,width,height,heading_x,heading_y,heading_z,above_ground\n"
      << std::setprecision(10);
  for (const auto& o : objects) {
    csv << o.id << ',' << o.points;
    for (const auto* v : {&o.centroid, &o.min, &o.max, &o.box.centre, &o.box.size, &o.box.heading})
      for (std::size_t k = 0; k < 3; ++k) {
        csv << ',';
        csv_number(csv, (*v)[k]);
      }
    csv << ',';
    csv_number(csv, o.above_ground);
    csv << '\n';
  }
  csv.commit();
}

void save_objects_json(const std::string& path, const std::vector<DetectedObject>& objects) {
  AtomicOstream json(path);
  json << std::setprecision(10) << "[";
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const DetectedObject& o = objects[i];
    json << (i ? ",\n" : "\n") << "  {\"id\": " << o.id << ", \"points\": " << o.points;
    const std::pair<const char*, const std::array<double, 3>*> vecs[] = {
        {"centroid", &o.centroid},     {"min", &o.min},           {"max", &o.max},
        {"box_centre", &o.box.centre}, {"box_size", &o.box.size}, {"box_heading", &o.box.heading}};
    for (const auto& [key, v] : vecs) {
      json << ",\n   \"" << key << "\": ";
      json_vec(json, *v);
    }
    json << ",\n   \"box_corners\": [";
    const auto corners = o.box.corners();
    for (std::size_t k = 0; k < corners.size(); ++k) {
      if (k) json << ", ";
      json_vec(json, corners[k]);
    }
    json << "],\n   \"above_ground\": ";
    json_number(json, o.above_ground);
    json << '}';
  }
  json << "\n]\n";
  json.commit();
}

}  // namespace cumulus
