#include "cloud_prop.h"

#include <vtkMatrix4x4.h>
#include <vtkObjectFactory.h>
#include <vtkOpenGLBufferObject.h>
#include <vtkOpenGLCamera.h>
#include <vtkOpenGLFramebufferObject.h>
#include <vtkOpenGLRenderWindow.h>
#include <vtkOpenGLRenderer.h>
#include <vtkOpenGLShaderCache.h>
#include <vtkOpenGLState.h>
#include <vtkOpenGLVertexArrayObject.h>
#include <vtkShaderProgram.h>
#include <vtkTextureObject.h>
#include <vtk_glew.h>

#include <QElapsedTimer>
#include <QThreadPool>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <malloc.h>
#include <sched.h>

#include <algorithm>
#include <numeric>

namespace cumulus::ui {

namespace {

// Only finite points are ever drawn (the index puts the others past its drawable range).
const char* kVertexShader = R"(//VTK::System::Dec
in vec3 vertexMC;
in vec4 colourIn;
uniform mat4 MCDCMatrix;
out vec4 colourVS;
void main() {
  gl_Position = MCDCMatrix * vec4(vertexMC, 1.0);
  colourVS = colourIn;
}
)";

const char* kFragmentShader = R"(//VTK::System::Dec
//VTK::Output::Dec
in vec4 colourVS;
void main() {
  gl_FragData[0] = colourVS;
}
)";

// Pages are gathered on a thread of their own that runs only when a core is idle: a software
// renderer splits each frame among threads on every core and waits for the slowest, and a
// gather sharing a core with one of them (at 100M points, random reads over the whole cloud)
// made frames take 50-70 ms and composing the window 30-60 ms more (the longest stall opening
// 100M points, one run each: 126 ms at normal priority, 105 at nice 19, 89-93 idle; starting
// each gather only after the frame instead: 99 ms, and a third longer to upload).
QThreadPool& idle_pool() {
  static QThreadPool* pool = [] {
    auto* p = new QThreadPool;
    p->setMaxThreadCount(1);
    p->setExpiryTimeout(-1);  // its one thread, once idle, stays so
    return p;
  }();
  return *pool;
}

void make_this_thread_idle() {
#ifdef SCHED_IDLE
  static thread_local const bool idle = [] {
    const sched_param none{};
    return sched_setscheduler(0, SCHED_IDLE, &none) == 0;
  }();
  (void)idle;
#endif
}

// A gather on the idle thread not done after this long is starved by other work on every core
// (at 100M points a page takes at most about 130 ms beside the frames).
constexpr int kStarvedMs = 500;

}  // namespace

std::shared_ptr<CloudDrawData> make_draw_data(std::shared_ptr<const PointCloud> cloud) {
  auto d = std::make_shared<CloudDrawData>();
  d->cloud = std::move(cloud);
  const Bounds b = d->cloud->local_bounds();
  if (b.valid) d->bounds = {b.min.x, b.max.x, b.min.y, b.max.y, b.min.z, b.max.z};
  d->index = LodIndex::build(*d->cloud, b);
  return d;
}

vtkStandardNewMacro(CloudProp);

CloudProp::CloudProp() {
  QObject::connect(&staging_, &QFutureWatcherBase::finished, [this] {
    if (ready_) ready_();
  });
}

CloudProp::~CloudProp() {
  // A gather still running keeps its own reference to the data; it stops soon, unused.
  staging_.disconnect();
  abandonGather();
}

void CloudProp::setData(std::shared_ptr<const CloudDrawData> data) {
  data_ = std::move(data);
  abandonGather();  // of the cloud before
  // Pages are refilled in place; those past the new cloud's end go.
  const std::size_t pages = (data_ ? data_->size() + kPage - 1 : 0) / kPage;
  for (auto* list : {&positions_, &colours_})
    if (list->size() > pages) {
      for (std::size_t k = pages; k < list->size(); ++k)
        if ((*list)[k]) (*list)[k]->ReleaseGraphicsResources();
      list->resize(pages);
    }
  positions_uploaded_ = colours_uploaded_ = colours_held_ = 0;
  gather_starved_ = false;
  drawn_ = shown_total_ = 0;
  shown_.clear();
  complete_ = false;
  Modified();
}

bool CloudProp::uploading() const {
  const std::size_t n = data_ ? data_->size() : 0;
  return positions_uploaded_ < n || colours_uploaded_ < n;
}

double* CloudProp::GetBounds() {
  if (!data_ || data_->bounds[0] > data_->bounds[1]) return nullptr;
  std::copy(data_->bounds.begin(), data_->bounds.end(), bounds_);
  return bounds_;
}

void CloudProp::ReleaseGraphicsResources(vtkWindow* window) {
  for (auto* pages : {&positions_, &colours_}) {
    for (auto& b : *pages)
      if (b) b->ReleaseGraphicsResources();
    pages->clear();
  }
  vao_->ReleaseGraphicsResources();
  positions_uploaded_ = colours_uploaded_ = colours_held_ = 0;
  releaseImage(window);
  blit_checked_fb_ = 0;
  blit_depth_format_ = image_depth_format_ = -1;
  warm_frames_ = 0;
  shown_.clear();
  shown_total_ = 0;
}

CloudProp::Staged CloudProp::gather(std::shared_ptr<const CloudDrawData> data,
                                    std::shared_ptr<const CloudColouring> colouring,
                                    std::uint64_t version, std::size_t from, std::size_t count,
                                    bool positions, const std::atomic<bool>* abandoned) {
  Staged s;
  s.data = data;
  s.from = from;
  s.count = count;
  s.colours_version = version;
  if (positions) s.xyz.resize(3 * count);
  s.rgba.resize(count);
  for (std::size_t j = 0; j < count; ++j) {
    if (abandoned && j % 16384 == 0 && abandoned->load(std::memory_order_relaxed)) return {};
    const std::size_t i = data->pointAt(from + j);
    if (positions) {
      const auto& p = data->cloud->points[i];
      s.xyz[3 * j] = p.x, s.xyz[3 * j + 1] = p.y, s.xyz[3 * j + 2] = p.z;
    }
    const Rgb8 c = colouring ? colouring->of(*data->cloud, i) : Rgb8{200, 200, 200};
    s.rgba[j] = std::uint32_t(c.r) | std::uint32_t(c.g) << 8 | std::uint32_t(c.b) << 16 |
                std::uint32_t(255) << 24;
  }
  return s;
}

void CloudProp::copyIn(const Staged& s) {
  // Only what still belongs: the same cloud, the next range, colours of the current version.
  if (s.data != data_ || s.colours_version != data_->colours_version) return;
  const std::size_t page = s.from / kPage;
  const auto fill = [page](std::vector<vtkSmartPointer<vtkOpenGLBufferObject>>& pages,
                           const void* bytes, std::size_t size) {
    if (pages.size() <= page) pages.resize(page + 1);
    if (!pages[page]) {
      pages[page] = vtkSmartPointer<vtkOpenGLBufferObject>::New();
      pages[page]->GenerateBuffer(vtkOpenGLBufferObject::ArrayBuffer);
    }
    pages[page]->Bind();
    glBufferData(GL_ARRAY_BUFFER, GLsizeiptr(size), bytes, GL_STATIC_DRAW);
  };
  if (!s.xyz.empty()) {
    if (s.from != positions_uploaded_) return;
    fill(positions_, s.xyz.data(), s.count * 12);
    positions_uploaded_ += s.count;
  }
  if (s.from != colours_uploaded_) return;
  fill(colours_, s.rgba.data(), s.count * 4);
  colours_uploaded_ += s.count;
}

std::pair<std::size_t, std::size_t> CloudProp::nextRange(bool* positions) const {
  const std::size_t n = data_->size();
  // Positions with their colours while the positions lag, else colours alone.
  *positions = colours_uploaded_ >= positions_uploaded_ && positions_uploaded_ < n;
  const std::size_t from = *positions ? positions_uploaded_ : colours_uploaded_;
  const std::size_t end = *positions ? n : positions_uploaded_;
  return {from, std::min(kPage, end - from)};
}

void CloudProp::followColoursVersion() {
  if (colours_version_ == data_->colours_version) return;
  colours_version_ = data_->colours_version;
  colours_held_ = std::max(colours_held_, colours_uploaded_);
  colours_uploaded_ = 0;
}

void CloudProp::uploadRestNow() {
  while (uploading()) {
    bool positions = false;
    const auto [from, count] = nextRange(&positions);
    copyIn(gather(data_, data_->colouring, data_->colours_version, from, count, positions));
  }
}

void CloudProp::upload() {
  followColoursVersion();
  if (upload_all_) return uploadRestNow();
  if (staging_busy_ && staging_.isFinished()) {
    staging_busy_ = false;
    {
      const Staged page = staging_.future().takeResult();
      staging_.setFuture({});
      copyIn(page);
    }  // the page's memory goes now, not with the next one
#ifdef __GLIBC__
    // The chunks were allocated on worker threads' heaps, which glibc keeps once freed: give
    // them back when the last one is in, so a cloud's memory is its own and the GL buffers'.
    if (!uploading()) malloc_trim(0);
#endif
  }
  startGather();
}

void CloudProp::recolourNow() {
  if (!data_ || upload_all_) return;
  const std::size_t n = data_->size();
  followColoursVersion();
  if (positions_uploaded_ < n || colours_uploaded_ >= n || n - colours_uploaded_ > kPage) return;
  abandonGather();  // of these colours or older ones: replaced by the copy below
  uploadRestNow();
}

void CloudProp::startGather() {
  if (staging_busy_ || !uploading()) return;
  bool positions = false;
  const auto [from, count] = nextRange(&positions);
  const bool idle = !gather_starved_;
  auto abandoned = std::make_shared<std::atomic<bool>>(false);
  gather_abandoned_ = abandoned;
  staging_busy_ = true;
  staging_.setFuture(QtConcurrent::run(
      idle ? &idle_pool() : QThreadPool::globalInstance(),
      [data = data_, colouring = data_->colouring, version = data_->colours_version, from, count,
       positions, idle, abandoned] {
        if (idle) make_this_thread_idle();
        return gather(data, colouring, version, from, count, positions, abandoned.get());
      }));
  if (!idle) return;
  const std::uint64_t serial = ++gathers_started_;
  QTimer::singleShot(kStarvedMs, &staging_, [this, serial] {
    if (serial != gathers_started_ || !staging_busy_ || staging_.isFinished()) return;
    abandonGather();
    gather_starved_ = true;
    startGather();
  });
}

void CloudProp::abandonGather() {
  if (!staging_busy_) return;
  gather_abandoned_->store(true);
  staging_busy_ = false;
  ++gathers_started_;
  staging_.setFuture({});
}

std::vector<DrawRange> CloudProp::shownRanges() const {
  std::vector<DrawRange> ranges;
  if (!data_) return ranges;
  for (std::size_t c = 0; c < shown_.size(); ++c)
    if (shown_[c] > 0) data_->index.appendRanges(c, 0, shown_[c], ranges);
  merge_ranges(ranges);
  return ranges;
}

void CloudProp::drawRanges(const std::vector<DrawRange>& ranges, vtkShaderProgram* program) {
  const GLint xyz = glGetAttribLocation(GLuint(program->GetHandle()), "vertexMC"),
              rgba = glGetAttribLocation(GLuint(program->GetHandle()), "colourIn");
  if (xyz < 0 || rgba < 0) return;
  vao_->Bind();
  glEnableVertexAttribArray(GLuint(xyz));
  glEnableVertexAttribArray(GLuint(rgba));
  // Page by page: the ranges' parts within it, in one call.
  std::vector<GLint> firsts;
  std::vector<GLsizei> counts;
  std::size_t next = 0;
  for (std::size_t page = 0; next < ranges.size(); ++page) {
    const std::size_t lo = page * kPage, hi = lo + kPage;
    firsts.clear();
    counts.clear();
    while (next < ranges.size() && ranges[next].first < hi) {
      const DrawRange& r = ranges[next];
      const std::size_t from = std::max(r.first, lo), to = std::min(r.first + r.count, hi);
      firsts.push_back(GLint(from - lo));
      counts.push_back(GLsizei(to - from));
      if (r.first + r.count > hi) break;  // its rest is on the next page
      ++next;
    }
    if (firsts.empty()) continue;
    positions_[page]->Bind();
    glVertexAttribPointer(GLuint(xyz), 3, GL_FLOAT, GL_FALSE, 12, nullptr);
    colours_[page]->Bind();
    glVertexAttribPointer(GLuint(rgba), 4, GL_UNSIGNED_BYTE, GL_TRUE, 4, nullptr);
    glMultiDrawArrays(GL_POINTS, firsts.data(), counts.data(), GLsizei(firsts.size()));
  }
  glDisableVertexAttribArray(GLuint(xyz));
  glDisableVertexAttribArray(GLuint(rgba));
  vao_->Release();
}

int CloudProp::RenderOpaqueGeometry(vtkViewport* viewport) {
  drawn_ = 0;
  auto* ren = vtkOpenGLRenderer::SafeDownCast(viewport);
  auto* win = ren ? vtkOpenGLRenderWindow::SafeDownCast(ren->GetRenderWindow()) : nullptr;
  auto* cam = ren ? vtkOpenGLCamera::SafeDownCast(ren->GetActiveCamera()) : nullptr;
  if (!win || !cam || !data_ || data_->size() == 0) return 0;
  // A view's first frames do no more than make its programs ready: the points' program, then
  // the image's program, the image and a composite of it (a software renderer compiles each
  // pipeline at its first draw: tens of milliseconds), each in a frame that has nothing else to
  // do yet, not in one that also copies and draws points.
  vtkShaderProgram* program =
      win->GetShaderCache()->ReadyShaderProgram(kVertexShader, kFragmentShader, "");
  if (!program) return 0;
  if (!upload_all_ && warm_frames_ < 2) {
    if (warm_frames_ == 1) warmImage(ren, win);
    ++warm_frames_;
    if (!staging_busy_)
      upload();                                  // starts gathering the first points
    else if (staging_.isFinished() && ready_)    // copied by the next frame, not this one, which
      QTimer::singleShot(0, &staging_, ready_);  // comes after the events waiting now
    return 0;
  }
  upload();
  // Points whose colours are on their way are drawn with those their buffers still hold.
  const std::size_t uploaded =
      std::min(positions_uploaded_, std::max(colours_uploaded_, colours_held_));
  if (uploaded == 0) {
    shown_total_ = 0;  // the frame shows none of the points (nor the image of frames before)
    return 0;
  }
  vtkMatrix4x4 *wcvc = nullptr, *vcdc = nullptr, *wcdc = nullptr;
  vtkMatrix3x3* normals = nullptr;
  cam->GetKeyMatrices(ren, wcvc, normals, vcdc, wcdc);
  program->SetUniformMatrix("MCDCMatrix", wcdc);
  vtkOpenGLState* state = win->GetState();
  state->vtkglEnable(GL_DEPTH_TEST);
  state->vtkglPointSize(point_size_);
  if (upload_all_) {  // an export: every point, straight into the scene
    drawRanges({{0, std::min(uploaded, data_->index.drawable())}}, program);
    drawn_ = shown_total_ = std::min(uploaded, data_->index.drawable());
    complete_ = true;
    return 1;
  }

  // What each cell may draw (its uploaded ranks) and how large it is on screen.
  int width = 0, height = 0, x = 0, y = 0;
  ren->GetTiledSizeAndOrigin(&width, &height, &x, &y);
  if (width <= 0 || height <= 0) return 0;
  ViewKey key;
  const vtkMatrix4x4* clip =
      cam->GetCompositeProjectionTransformMatrix(ren->GetTiledAspectRatio(), -1, 1);
  std::copy(&clip->GetData()[0], &clip->GetData()[0] + 16, key.clip.begin());
  key.width = width, key.height = height, key.point_size = point_size_;
  key.data = data_.get(), key.colours_version = data_->colours_version;
  ren->GetBackground(&key.background[0]);
  ren->GetBackground2(&key.background[3]);
  key.background[6] = ren->GetGradientBackground();
  const auto& cells = data_->index.cells();
  const std::vector<double> sizes = lod_screen_sizes(cells, key.clip.data(), width, height);
  std::vector<std::uint32_t> available(cells.size());
  for (std::size_t c = 0; c < cells.size(); ++c)
    available[c] = data_->index.available(c, uploaded);
  // At rest, into the image (kept from the frame before if that saw the same); moving, straight
  // into the scene (no image to clear and composite), and the next frame at rest starts anew.
  const bool blits = accumulate_ && sceneTakesBlits(ren, win);  // before the image is made
  const bool into_image = accumulate_ && prepareImage(win, width, height);
  key.blits = into_image && blits;
  const bool fresh = !into_image || !(key == shown_key_) || shown_.size() != cells.size();
  if (fresh) shown_.assign(cells.size(), 0);
  shown_key_ = into_image ? key : ViewKey{};
  // This frame's share: `draw_limit_` more points than the image has, spread by screen size,
  // in slices while the time limit allows. Each slice's target is where the whole share would
  // have reached had it been `drawn + slice`, so slices drawn to the end equal one draw.
  const std::size_t before = fresh ? 0 : shown_total_;
  const auto target_for = [&](std::size_t share) {
    std::vector<std::uint32_t> target;
    if (uploading() && !into_image) {
      // While points arrive, the first of the draw order (its first rounds: a uniform sample of
      // the whole cloud) in one range: a software renderer pays about 10 us a range, and a
      // frame's share spread over thousands of cells is thousands of ranges on top of the copy.
      const std::size_t prefix = std::min({uploaded, data_->index.drawable(), share});
      target.resize(cells.size());
      for (std::size_t c = 0; c < cells.size(); ++c)
        target[c] = data_->index.available(c, prefix);
    } else if (fresh) {
      target = lod_counts(sizes, available, shown_,
                          share > SIZE_MAX - before ? SIZE_MAX : before + share);
    } else {
      // Adding to the image: the first frame drew by size on screen, as a moving frame does; the
      // rest fill in the cells on screen in the draw order (each round a uniform sample of every
      // cell), the cells that lag first, in a few long ranges.
      target = data_->index.extendInOrder(sizes, available, shown_, share - drawn_);
    }
    return target;
  };
  // Four slices: a frame whose points cost several times what the frames before had (a
  // software renderer sharing its cores) stops within about a quarter of its budget of its
  // time limit, and the others pay three more waits for the renderer.
  const bool sliced = draw_time_limit_ms_ > 0;
  const std::size_t slice =
      sliced ? std::max<std::size_t>(draw_limit_ / 4 + (draw_limit_ % 4 != 0), 1) : draw_limit_;
  QElapsedTimer clock;
  clock.start();
  bool started = false;
  std::vector<DrawRange> ranges;
  for (;;) {
    const std::size_t share = draw_limit_ - drawn_ > slice ? drawn_ + slice : draw_limit_;
    const std::vector<std::uint32_t> target = target_for(share);
    ranges.clear();
    std::size_t new_points = 0;
    for (std::size_t c = 0; c < cells.size(); ++c)
      if (target[c] > shown_[c]) {
        data_->index.appendRanges(c, shown_[c], target[c], ranges);
        new_points += target[c] - shown_[c];
      }
    // A quarter more points drawn at most, for fewer ranges (the image counts only its own).
    merge_ranges(ranges, new_points / 4);
    if (!into_image) {
      drawRanges(ranges, program);
    } else {
      const ImageStart start = started || !fresh ? ImageStart::Kept
                               : key.blits       ? ImageStart::Scene
                                                 : ImageStart::Clear;
      drawIntoImage(win, x, y, width, height, start, ranges, program);
    }
    started = true;
    for (std::size_t c = 0; c < cells.size(); ++c)
      shown_[c] = std::max(shown_[c], target[c]);
    drawn_ += new_points;
    if (!sliced || new_points == 0 || drawn_ >= draw_limit_) break;
    glFinish();  // the slice's real cost: a software renderer draws when asked to finish
    const double spent = double(clock.nsecsElapsed()) * 1e-6;
    const std::size_t next = std::min(slice, draw_limit_ - drawn_);
    if (spent + spent / double(drawn_) * double(next) > draw_time_limit_ms_) break;
  }
  if (into_image) {
    if (key.blits)
      blitImage(win, x, y, width, height);
    else
      compositeImage(win, x, y);
  }

  complete_ = true;
  shown_total_ = 0;
  for (std::size_t c = 0; c < cells.size(); ++c) {
    shown_total_ += shown_[c];
    if (sizes[c] > 0 && shown_[c] < cells[c].count) complete_ = false;
  }
  return 1;
}

}  // namespace cumulus::ui
