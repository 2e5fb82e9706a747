#include "cloud_prop.h"

#include <vtkObjectFactory.h>
#include <vtkOpenGLBufferObject.h>
#include <vtkOpenGLCamera.h>
#include <vtkOpenGLRenderWindow.h>
#include <vtkOpenGLRenderer.h>
#include <vtkOpenGLShaderCache.h>
#include <vtkOpenGLState.h>
#include <vtkOpenGLVertexArrayObject.h>
#include <vtkShaderProgram.h>
#include <vtk_glew.h>

#include <QtConcurrent/QtConcurrentRun>

#include <malloc.h>

#include <algorithm>
#include <numeric>

namespace cumulus::ui {

namespace {

// Non-finite points (holes of organized clouds) are moved outside the clip volume, not drawn.
const char* kVertexShader = R"(//VTK::System::Dec
in vec3 vertexMC;
in vec4 colourIn;
uniform mat4 MCDCMatrix;
out vec4 colourVS;
void main() {
  if (any(isnan(vertexMC)) || any(isinf(vertexMC)))
    gl_Position = vec4(2.0, 2.0, 2.0, 1.0);
  else
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

}  // namespace

std::shared_ptr<CloudDrawData> make_draw_data(std::shared_ptr<const PointCloud> cloud) {
  auto d = std::make_shared<CloudDrawData>();
  d->cloud = std::move(cloud);
  const std::size_t n = d->size();
  if (n > 1) {
    auto s = std::uint64_t(double(n) * 0.6180339887498949);
    while (std::gcd(s, std::uint64_t(n)) != 1)
      ++s;
    d->stride = s;
  }
  if (const Bounds b = d->cloud->local_bounds(); b.valid)
    d->bounds = {b.min.x, b.max.x, b.min.y, b.max.y, b.min.z, b.max.z};
  return d;
}

vtkStandardNewMacro(CloudProp);

CloudProp::CloudProp() {
  QObject::connect(&staging_, &QFutureWatcherBase::finished, [this] {
    if (ready_) ready_();
  });
}

CloudProp::~CloudProp() {
  // A gather still running keeps its own reference to the data; only its result is dropped.
  staging_.disconnect();
}

void CloudProp::setData(std::shared_ptr<const CloudDrawData> data) {
  data_ = std::move(data);
  // Pages are refilled in place; those past the new cloud's end go.
  const std::size_t pages = (data_ ? data_->size() + kPage - 1 : 0) / kPage;
  for (auto* list : {&positions_, &colours_})
    if (list->size() > pages) {
      for (std::size_t k = pages; k < list->size(); ++k)
        if ((*list)[k]) (*list)[k]->ReleaseGraphicsResources();
      list->resize(pages);
    }
  positions_uploaded_ = colours_uploaded_ = 0;
  drawn_ = 0;
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

void CloudProp::ReleaseGraphicsResources(vtkWindow*) {
  for (auto* pages : {&positions_, &colours_}) {
    for (auto& b : *pages)
      if (b) b->ReleaseGraphicsResources();
    pages->clear();
  }
  vao_->ReleaseGraphicsResources();
  positions_uploaded_ = colours_uploaded_ = 0;
}

CloudProp::Staged CloudProp::gather(std::shared_ptr<const CloudDrawData> data,
                                    std::shared_ptr<const CloudColouring> colouring,
                                    std::uint64_t version, std::size_t from, std::size_t count,
                                    bool positions) {
  Staged s;
  s.data = data;
  s.from = from;
  s.count = count;
  s.colours_version = version;
  if (positions) s.xyz.resize(3 * count);
  s.rgba.resize(count);
  for (std::size_t j = 0; j < count; ++j) {
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

void CloudProp::upload() {
  if (colours_version_ != data_->colours_version) {
    colours_version_ = data_->colours_version;
    colours_uploaded_ = 0;
  }
  const std::size_t n = data_->size();
  // The next range: positions with their colours while the positions lag, else colours alone.
  const auto next = [&](bool* positions) {
    *positions = colours_uploaded_ >= positions_uploaded_ && positions_uploaded_ < n;
    const std::size_t from = *positions ? positions_uploaded_ : colours_uploaded_;
    const std::size_t end = *positions ? n : positions_uploaded_;
    return std::pair{from, std::min(kPage, end - from)};
  };
  if (upload_all_) {
    while (positions_uploaded_ < n || colours_uploaded_ < n) {
      bool positions = false;
      const auto [from, count] = next(&positions);
      copyIn(gather(data_, data_->colouring, data_->colours_version, from, count, positions));
    }
    return;
  }
  if (staging_busy_ && staging_.isFinished()) {
    staging_busy_ = false;
    copyIn(staging_.result());
    staging_.setFuture({});  // the chunk's memory goes now, not with the next one
#ifdef __GLIBC__
    // The chunks were allocated on worker threads' heaps, which glibc keeps once freed: give
    // them back when the last one is in, so a cloud's memory is its own and the GL buffers'.
    if (positions_uploaded_ == data_->size() && colours_uploaded_ == data_->size()) malloc_trim(0);
#endif
  }
  if (!staging_busy_ && (positions_uploaded_ < n || colours_uploaded_ < n)) {
    bool positions = false;
    const auto [from, count] = next(&positions);
    staging_busy_ = true;
    staging_.setFuture(QtConcurrent::run(&CloudProp::gather, data_, data_->colouring,
                                         data_->colours_version, from, count, positions));
  }
}

int CloudProp::RenderOpaqueGeometry(vtkViewport* viewport) {
  drawn_ = 0;
  auto* ren = vtkOpenGLRenderer::SafeDownCast(viewport);
  auto* win = ren ? vtkOpenGLRenderWindow::SafeDownCast(ren->GetRenderWindow()) : nullptr;
  auto* cam = ren ? vtkOpenGLCamera::SafeDownCast(ren->GetActiveCamera()) : nullptr;
  if (!win || !cam || !data_ || data_->size() == 0) return 0;
  // The program first: compiled (once a process) in a frame that has nothing else to do yet,
  // not in one that also copies and draws points.
  vtkShaderProgram* program =
      win->GetShaderCache()->ReadyShaderProgram(kVertexShader, kFragmentShader, "");
  if (!program) return 0;
  upload();
  const std::size_t count = std::min({positions_uploaded_, colours_uploaded_, draw_limit_});
  if (count == 0) return 0;
  vtkMatrix4x4 *wcvc = nullptr, *vcdc = nullptr, *wcdc = nullptr;
  vtkMatrix3x3* normals = nullptr;
  cam->GetKeyMatrices(ren, wcvc, normals, vcdc, wcdc);
  program->SetUniformMatrix("MCDCMatrix", wcdc);
  vtkOpenGLState* state = win->GetState();
  state->vtkglEnable(GL_DEPTH_TEST);
  state->vtkglPointSize(point_size_);
  const GLint xyz = glGetAttribLocation(GLuint(program->GetHandle()), "vertexMC"),
              rgba = glGetAttribLocation(GLuint(program->GetHandle()), "colourIn");
  if (xyz < 0 || rgba < 0) return 0;
  vao_->Bind();
  glEnableVertexAttribArray(GLuint(xyz));
  glEnableVertexAttribArray(GLuint(rgba));
  // The prefix of `count` draw positions, page by page.
  for (std::size_t page = 0; page * kPage < count; ++page) {
    positions_[page]->Bind();
    glVertexAttribPointer(GLuint(xyz), 3, GL_FLOAT, GL_FALSE, 12, nullptr);
    colours_[page]->Bind();
    glVertexAttribPointer(GLuint(rgba), 4, GL_UNSIGNED_BYTE, GL_TRUE, 4, nullptr);
    glDrawArrays(GL_POINTS, 0, GLsizei(std::min(kPage, count - page * kPage)));
  }
  glDisableVertexAttribArray(GLuint(xyz));
  glDisableVertexAttribArray(GLuint(rgba));
  vao_->Release();
  drawn_ = count;
  return 1;
}

}  // namespace cumulus::ui
