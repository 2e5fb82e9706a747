#pragma once
// The 3D view's points, drawn by our own VTK prop: GL buffers of positions and RGBA colours,
// filled straight from the cloud (no VTK points, cells or packed copies) in the draw order of its
// spatial index (cloud_lod.h). The level of detail follows the view: a frame draws a budget of
// points, shared among the index's cells on screen by their size there, and none off screen.
// While the camera rests, points go into an image of the prop's own (colour and depth) that is
// copied into the scene (or drawn there, when another prop draws first), and each frame adds the
// next budget of points to what is already drawn until every point on screen is: full detail at
// rest, a budget's time a frame. Buffers fill progressively: a worker gathers the next chunk into
// the draw order while frames draw what is there, so opening a huge cloud never stalls the UI
// thread.
#include <vtkNew.h>
#include <vtkProp.h>
#include <vtkSmartPointer.h>

#include <QFutureWatcher>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "cloud_lod.h"
#include "colormap.h"
#include "core/point_cloud.h"

class vtkOpenGLBufferObject;
class vtkOpenGLFramebufferObject;
class vtkOpenGLRenderWindow;
class vtkOpenGLRenderer;
class vtkOpenGLVertexArrayObject;
class vtkShaderProgram;
class vtkTextureObject;

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
// cloud, its colouring and its spatial index. Only the UI thread replaces `colouring`; workers
// get the one they gather from passed to them.
struct CloudDrawData {
  std::shared_ptr<const PointCloud> cloud;
  std::shared_ptr<const CloudColouring> colouring;
  std::uint64_t colours_version = 0;
  LodIndex index;
  std::array<double, 6> bounds{0, -1, 0, -1, 0, -1};  // finite points only; empty when min > max

  std::size_t size() const { return cloud ? cloud->size() : 0; }
  // The point at draw position j.
  std::size_t pointAt(std::size_t j) const { return index.pointAt(j); }
};

// The draw data for `cloud`: the bounds of its finite points and its spatial index (a second or
// two for 100 million points: call it off the UI thread for large clouds).
std::shared_ptr<CloudDrawData> make_draw_data(std::shared_ptr<const PointCloud> cloud);

class CloudProp : public vtkProp {
 public:
  static constexpr std::size_t kPage = 1u << 18;  // points a GL buffer (and a gathered chunk)
  static CloudProp* New();
  void setData(std::shared_ptr<const CloudDrawData> data);
  const std::shared_ptr<const CloudDrawData>& data() const { return data_; }
  void setPointSize(float size) { point_size_ = size; }
  // At most this many points drawn a frame; SIZE_MAX for all.
  void setDrawLimit(std::size_t limit) { draw_limit_ = limit; }
  // A frame draws its points in a few slices and stops before the slice that would take its
  // drawing past `ms` (0: no limit), at the cost a point its slices so far had; the first slice
  // is always drawn, so every frame adds to the image.
  void setDrawTimeLimit(double ms) { draw_time_limit_ms_ = ms; }
  // On: a frame that sees what the one before saw (same camera, size, points and colours) adds
  // its points to that frame's image; off: every frame starts a new image.
  void setAccumulate(bool on) { accumulate_ = on; }
  // Off (the default): points are gathered into the draw order a chunk at a time on a worker
  // thread and each frame copies in what is ready, calling `ready` (on the UI thread) when the
  // next chunk can be copied. On: every point is uploaded in the first frame (exports).
  void setUploadAll(bool on) { upload_all_ = on; }
  void setChunkReady(std::function<void()> ready) { ready_ = std::move(ready); }
  // New colours for a cloud whose positions are all in, and no more than a page of them: copied
  // in now (the GL context current), so that the next frame shows them. On the worker they
  // would arrive a frame later, and that frame in between would show no points: a live
  // re-colouring (a parameter dragged) would flicker and each result reach the screen a frame
  // late. Larger clouds' colours still come a page a frame, the old ones drawn until then.
  void recolourNow();

  // Points drawn by the last frame, and the points its image shows (those of earlier frames it
  // added to included).
  std::size_t drawnLastFrame() const { return drawn_; }
  std::size_t shownPoints() const { return shown_total_; }
  // The image shows every point of the cloud on screen (no more to add at rest).
  bool complete() const { return complete_; }
  // The last frame at rest copied its image into the scene as pixels (see sceneTakesBlits)
  // rather than drawing it there.
  bool imageCopied() const { return shown_key_.blits; }
  // The draw positions the image shows, sorted.
  std::vector<DrawRange> shownRanges() const;
  // Points in the GPU's buffers with their colours (a prefix of the draw order).
  std::size_t uploaded() const { return std::min(positions_uploaded_, colours_uploaded_); }
  bool uploading() const;
  // Whether this cloud's pages had to be gathered at normal priority (every core was busy).
  bool gathersStarved() const { return gather_starved_; }

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
  // Takes up the data's colours version: those uploaded become held until replaced.
  void followColoursVersion();
  // Gathers and copies in, on this thread, everything not yet uploaded.
  void uploadRestNow();
  // A range of the draw order gathered for upload: positions and colours, or colours only.
  struct Staged {
    std::shared_ptr<const CloudDrawData> data;  // held, so its address is not reused meanwhile
    std::size_t from = 0, count = 0;
    std::uint64_t colours_version = 0;
    std::vector<float> xyz;
    std::vector<std::uint32_t> rgba;
  };
  // Stops early, with a result that is not used, once *abandoned (if given) is set.
  static Staged gather(std::shared_ptr<const CloudDrawData> data,
                       std::shared_ptr<const CloudColouring> colouring, std::uint64_t version,
                       std::size_t from, std::size_t count, bool positions,
                       const std::atomic<bool>* abandoned = nullptr);
  void copyIn(const Staged& s);
  void startGather();
  void abandonGather();
  // The next range of the draw order to gather: its first point and count.
  std::pair<std::size_t, std::size_t> nextRange(bool* positions) const;
  void upload();
  // Draws `ranges` of draw positions with the point program (bound).
  void drawRanges(const std::vector<DrawRange>& ranges, vtkShaderProgram* program);
  // The image's GL objects given back, the image gone (made again when next needed).
  void releaseImage(vtkWindow* win);
  // The prop's image for a `width` x `height` viewport, made or resized; false if GL refuses.
  bool prepareImage(vtkOpenGLRenderWindow* win, int width, int height);
  // How a frame's image starts: as the frame before left it, as the scene under the viewport at
  // (x, y) (its background, colour and depth; see sceneTakesBlits), or transparent and at the
  // far plane.
  enum class ImageStart { Kept, Scene, Clear };
  // Draws `ranges` into the image (bound for this only), started anew as `start` says.
  void drawIntoImage(vtkOpenGLRenderWindow* win, int x, int y, int width, int height,
                     ImageStart start, const std::vector<DrawRange>& ranges,
                     vtkShaderProgram* program);
  // Whether the image can go into the scene as a copy of its pixels (colour and depth) instead
  // of drawn: this prop draws first among the renderer's visible props (the scene holds only its
  // background then) and the scene's framebuffer stores pixels as an image can (its depth
  // format is then the image's, see prepareImage). Mesa's llvmpipe copies such pixels as
  // memory: 1.4-2 ms a frame at 1280 x 800 on two cores, where drawing the image took 12-13.
  bool sceneTakesBlits(vtkOpenGLRenderer* ren, vtkOpenGLRenderWindow* win);
  // Copies the image over the viewport at (x, y), colour and depth.
  void blitImage(vtkOpenGLRenderWindow* win, int x, int y, int width, int height);
  // Makes the image, clears it and composites it (nothing shows): the pipelines compiled.
  void warmImage(vtkOpenGLRenderer* ren, vtkOpenGLRenderWindow* win);
  // Draws the image into the bound framebuffer (its depth too) at the viewport's origin.
  void compositeImage(vtkOpenGLRenderWindow* win, int x, int y);
  // What a frame sees: an image is added to only by frames seeing the same.
  struct ViewKey {
    std::array<double, 16> clip{};
    int width = 0, height = 0;
    float point_size = 0;
    std::array<double, 7> background{};  // colours and gradient: copied into a blitted image
    bool blits = false;
    const CloudDrawData* data = nullptr;
    std::uint64_t colours_version = 0;
    bool operator==(const ViewKey&) const = default;
  };

  std::shared_ptr<const CloudDrawData> data_;
  // One pair of GL buffers (positions, colours) a page of kPage draw positions: each page is
  // created by the upload that fills it (one big buffer would be zero-filled by some drivers
  // first: half a second for 40 million points on the UI thread).
  std::vector<vtkSmartPointer<vtkOpenGLBufferObject>> positions_, colours_;
  vtkNew<vtkOpenGLVertexArrayObject> vao_;
  std::size_t positions_uploaded_ = 0, colours_uploaded_ = 0;
  // New colours replace the old a page at a time: until a page's come, its points are drawn with
  // the colours of an earlier version its buffer holds (this many points have some), so that
  // re-colouring a large cloud never shows a frame without its points.
  std::size_t colours_held_ = 0;
  std::uint64_t colours_version_ = 0;
  std::size_t draw_limit_ = SIZE_MAX, drawn_ = 0, shown_total_ = 0;
  double draw_time_limit_ms_ = 0;
  bool upload_all_ = false, accumulate_ = false, complete_ = false;
  int warm_frames_ = 0;               // first frames that only made programs ready
  std::vector<std::uint32_t> shown_;  // ranks of each cell in the image
  ViewKey shown_key_;
  vtkSmartPointer<vtkOpenGLFramebufferObject> image_;
  vtkSmartPointer<vtkTextureObject> image_colour_, image_depth_;
  // The scene framebuffer last looked at, and its depth format as a vtkTextureObject's
  // (-1: the scene cannot take blits; see sceneTakesBlits); the image's depth format.
  unsigned blit_checked_fb_ = 0;
  int blit_depth_format_ = -1, image_depth_format_ = -1;
  QFutureWatcher<Staged> staging_;
  bool staging_busy_ = false;
  // Gathers run on a thread that yields to every other (the frames' drawing first). One kept
  // waiting so long that the cores must be busy with other work is abandoned and started again
  // at normal priority, as are the rest of the cloud's.
  bool gather_starved_ = false;
  std::uint64_t gathers_started_ = 0;
  std::shared_ptr<std::atomic<bool>> gather_abandoned_;
  std::function<void()> ready_;
  float point_size_ = 2;
  double bounds_[6] = {0, 0, 0, 0, 0, 0};
};

}  // namespace cumulus::ui
