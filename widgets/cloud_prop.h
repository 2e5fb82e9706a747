#pragma once
// The 3D view's points, drawn by our own VTK prop: one GL buffer of positions and one of RGBA
// colours, filled straight from the cloud (no VTK points, cells or packed copies), in a shuffled
// order whose every prefix is a uniform subsample of the cloud. Drawing a prefix is the level of
// detail: a budget of points while the camera moves, more (all where the frame time allows) when
// it rests. Buffers fill progressively: a worker gathers the next chunk into the draw order while
// frames draw what is there, so opening a huge cloud never stalls the UI thread.
#include <vtkNew.h>
#include <vtkProp.h>
#include <vtkSmartPointer.h>

#include <QFutureWatcher>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "colormap.h"
#include "core/point_cloud.h"

class vtkOpenGLBufferObject;
class vtkOpenGLVertexArrayObject;

namespace cumulus::ui {

// A cloud's colours: one a point (the cloud's order), or a rule, else grey. Never changed once
// made: a new colouring replaces the old, so workers gathering from one need no lock.
struct CloudColouring {
  std::vector<Rgb8> colours;
  std::optional<ScalarColouring> rule;
  ColorMode mode = ColorMode::Height;  // what the colours show, unless given one a point

  Rgb8 of(const PointCloud& cloud, std::size_t i) const {
    return colours.size() == cloud.size() ? colours[i]
           : rule                         ? (*rule)(cloud, i)
                                          : Rgb8{200, 200, 200};
  }
};

// What every prop drawing one cloud shares (the on-screen view and off-screen exports): the
// cloud, its colouring and the draw order. Only the UI thread replaces `colouring`; workers get
// the one they gather from passed to them.
struct CloudDrawData {
  std::shared_ptr<const PointCloud> cloud;
  std::shared_ptr<const CloudColouring> colouring;
  std::uint64_t colours_version = 0;
  std::uint64_t stride = 1;  // draw position j shows point (j * stride) mod n
  std::array<double, 6> bounds{0, -1, 0, -1, 0, -1};  // finite points only; empty when min > max

  std::size_t size() const { return cloud ? cloud->size() : 0; }
  std::size_t pointAt(std::size_t j) const {
    return std::size_t((std::uint64_t(j) * stride) % std::uint64_t(size()));
  }
};

// The draw data for `cloud`: bounds of its finite points and a stride coprime with its size
// near n / golden ratio (consecutive draw positions then land far apart in the cloud's order, and
// any prefix covers the whole cloud evenly).
std::shared_ptr<CloudDrawData> make_draw_data(std::shared_ptr<const PointCloud> cloud);

class CloudProp : public vtkProp {
 public:
  static constexpr std::size_t kPage = 1u << 20;  // points a GL buffer (and a gathered chunk)
  static CloudProp* New();
  void setData(std::shared_ptr<const CloudDrawData> data);
  const std::shared_ptr<const CloudDrawData>& data() const { return data_; }
  void setPointSize(float size) { point_size_ = size; }
  // At most this many points a frame (a prefix of the draw order); SIZE_MAX for all.
  void setDrawLimit(std::size_t limit) { draw_limit_ = limit; }
  // Off (the default): points are gathered into the draw order a chunk at a time on a worker
  // thread and each frame copies in what is ready, calling `ready` (on the UI thread) when the
  // next chunk can be copied. On: every point is uploaded in the first frame (exports).
  void setUploadAll(bool on) { upload_all_ = on; }
  void setChunkReady(std::function<void()> ready) { ready_ = std::move(ready); }

  // Points drawn in the last frame, and whether uploads are still going on.
  std::size_t drawnLastFrame() const { return drawn_; }
  // Points in the GPU's buffers with their colours (a prefix of the draw order).
  std::size_t uploaded() const { return std::min(positions_uploaded_, colours_uploaded_); }
  bool uploading() const;

  double* GetBounds() override;
  int RenderOpaqueGeometry(vtkViewport* viewport) override;
  void ReleaseGraphicsResources(vtkWindow* window) override;
  // Last in the section: the macro ends without a semicolon (one more is -Wpedantic's "extra ;").
  vtkTypeMacro(CloudProp, vtkProp)

      protected : CloudProp();
  ~CloudProp() override;

 private:
  CloudProp(const CloudProp&) = delete;
  void operator=(const CloudProp&) = delete;
  // A range of the draw order gathered for upload: positions and colours, or colours only.
  struct Staged {
    std::shared_ptr<const CloudDrawData> data;  // held, so its address is not reused meanwhile
    std::size_t from = 0, count = 0;
    std::uint64_t colours_version = 0;
    std::vector<float> xyz;
    std::vector<std::uint32_t> rgba;
  };
  static Staged gather(std::shared_ptr<const CloudDrawData> data,
                       std::shared_ptr<const CloudColouring> colouring, std::uint64_t version,
                       std::size_t from, std::size_t count, bool positions);
  void copyIn(const Staged& s);
  void upload();

  std::shared_ptr<const CloudDrawData> data_;
  // One pair of GL buffers (positions, colours) a page of kPage draw positions: each page is
  // created by the upload that fills it (one big buffer would be zero-filled by some drivers
  // first: half a second for 40 million points on the UI thread).
  std::vector<vtkSmartPointer<vtkOpenGLBufferObject>> positions_, colours_;
  vtkNew<vtkOpenGLVertexArrayObject> vao_;
  std::size_t positions_uploaded_ = 0, colours_uploaded_ = 0;
  std::uint64_t colours_version_ = 0;
  std::size_t draw_limit_ = SIZE_MAX, drawn_ = 0;
  bool upload_all_ = false;
  QFutureWatcher<Staged> staging_;
  bool staging_busy_ = false;
  std::function<void()> ready_;
  float point_size_ = 2;
  double bounds_[6] = {0, 0, 0, 0, 0, 0};
};

}  // namespace cumulus::ui
