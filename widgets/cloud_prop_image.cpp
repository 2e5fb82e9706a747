// The prop's resting image: its points drawn into its own colour and depth textures, frame
// after frame, and put into the scene with their depth: copied as pixels where the image can
// start as the scene's background, drawn as a textured triangle otherwise.
#include <vtkOpenGLFramebufferObject.h>
#include <vtkOpenGLRenderWindow.h>
#include <vtkOpenGLRenderer.h>
#include <vtkOpenGLShaderCache.h>
#include <vtkOpenGLState.h>
#include <vtkOpenGLVertexArrayObject.h>
#include <vtkPropCollection.h>
#include <vtkShaderProgram.h>
#include <vtkTextureObject.h>
#include <vtk_glew.h>

#include "cloud_prop.h"

namespace cumulus::ui {

namespace {

// The prop's image over the viewport: one triangle covering it (no vertex buffers), each pixel
// its texel, with its depth so the rest of the scene hides it and is hidden by it as if drawn in
// the same pass. Pixels no point reached (alpha 0) are left alone.
const char* kImageVertexShader = R"(//VTK::System::Dec
void main() {
  vec2 corner = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
  gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
}
)";

const char* kImageFragmentShader = R"(//VTK::System::Dec
//VTK::Output::Dec
uniform sampler2D colours;
uniform sampler2D depths;
uniform ivec2 origin;
void main() {
  ivec2 texel = ivec2(gl_FragCoord.xy) - origin;
  vec4 colour = texelFetch(colours, texel, 0);
  if (colour.a == 0.0) discard;
  gl_FragDepth = texelFetch(depths, texel, 0).r;
  gl_FragData[0] = colour;
}
)";

}  // namespace

void CloudProp::releaseImage(vtkWindow* win) {
  for (auto* texture : {image_colour_.Get(), image_depth_.Get()})
    if (texture) texture->ReleaseGraphicsResources(win);
  if (image_) image_->ReleaseGraphicsResources(win);
  image_ = nullptr;
  image_colour_ = image_depth_ = nullptr;
}

bool CloudProp::prepareImage(vtkOpenGLRenderWindow* win, int width, int height) {
  const int depth_format = blit_depth_format_ >= 0 ? blit_depth_format_ : vtkTextureObject::Float32;
  if (image_ && depth_format != image_depth_format_)  // made before the scene was looked at
    releaseImage(win);
  if (!image_) {
    shown_key_ = ViewKey{};  // a new image holds nothing yet: its first frame starts it
    image_ = vtkSmartPointer<vtkOpenGLFramebufferObject>::New();
    image_colour_ = vtkSmartPointer<vtkTextureObject>::New();
    image_depth_ = vtkSmartPointer<vtkTextureObject>::New();
    image_->SetContext(win);
    image_colour_->SetContext(win);
    image_depth_->SetContext(win);
    bool made =
        image_colour_->Allocate2D(unsigned(width), unsigned(height), 4, VTK_UNSIGNED_CHAR) &&
        image_depth_->AllocateDepth(unsigned(width), unsigned(height), depth_format);
    image_depth_format_ = depth_format;
    if (made) {
      win->GetState()->PushFramebufferBindings();
      image_->Bind();
      image_->AddColorAttachment(0, image_colour_);
      image_->AddDepthAttachment(image_depth_);
      made = image_->CheckFrameBufferStatus(GL_FRAMEBUFFER) != 0;
      win->GetState()->PopFramebufferBindings();
    }
    if (!made) {  // tried again next frame
      releaseImage(win);
      return false;
    }
  } else if (int(image_colour_->GetWidth()) != width || int(image_colour_->GetHeight()) != height) {
    image_colour_->Resize(unsigned(width), unsigned(height));
    image_depth_->Resize(unsigned(width), unsigned(height));
  }
  return true;
}

void CloudProp::compositeImage(vtkOpenGLRenderWindow* win, int x, int y) {
  vtkShaderProgram* program =
      win->GetShaderCache()->ReadyShaderProgram(kImageVertexShader, kImageFragmentShader, "");
  if (!program) return;
  image_colour_->Activate();
  image_depth_->Activate();
  program->SetUniformi("colours", image_colour_->GetTextureUnit());
  program->SetUniformi("depths", image_depth_->GetTextureUnit());
  const int origin[2] = {x, y};
  program->SetUniform2i("origin", origin);
  win->GetState()->vtkglEnable(GL_DEPTH_TEST);
  vao_->Bind();
  glDrawArrays(GL_TRIANGLES, 0, 3);
  vao_->Release();
  image_depth_->Deactivate();
  image_colour_->Deactivate();
}

void CloudProp::drawIntoImage(vtkOpenGLRenderWindow* win, int x, int y, int width, int height,
                              ImageStart start, const std::vector<DrawRange>& ranges,
                              vtkShaderProgram* program) {
  vtkOpenGLState* state = win->GetState();
  unsigned scene = 0, scene_buffer = 0;
  state->GetCurrentDrawFramebufferState(scene, scene_buffer);
  state->PushFramebufferBindings();
  image_->Bind();
  image_->ActivateDrawBuffers(1);
  {
    vtkOpenGLState::ScopedglViewport keep_viewport(state);
    vtkOpenGLState::ScopedglScissor keep_scissor(state);
    state->vtkglViewport(0, 0, width, height);
    state->vtkglScissor(0, 0, width, height);
    if (start == ImageStart::Scene) {
      state->vtkglBindFramebuffer(GL_READ_FRAMEBUFFER, scene);
      state->vtkglReadBuffer(scene_buffer);
      state->vtkglBlitFramebuffer(x, y, x + width, y + height, 0, 0, width, height,
                                  GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT, GL_NEAREST);
    } else if (start == ImageStart::Clear) {  // transparent: the composite leaves pixels alone
      vtkOpenGLState::ScopedglClearColor keep_clear(state);
      vtkOpenGLState::ScopedglDepthMask keep_mask(state);
      state->vtkglClearColor(0, 0, 0, 0);
      state->vtkglClearDepth(1);
      state->vtkglDepthMask(GL_TRUE);
      state->vtkglClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
    }
    if (program && !ranges.empty()) drawRanges(ranges, program);
  }
  state->PopFramebufferBindings();
}

bool CloudProp::sceneTakesBlits(vtkOpenGLRenderer* ren, vtkOpenGLRenderWindow* win) {
  unsigned scene = 0, scene_buffer = 0;
  win->GetState()->GetCurrentDrawFramebufferState(scene, scene_buffer);
  if (scene == 0) return false;  // a window's own buffers: formats not comparable here
  if (scene != blit_checked_fb_) {
    // A blit copies depth only between equal formats (and a software renderer then copies the
    // memory as it is): the image takes the scene's depth format, if it is one a texture can
    // have, and copies need 8-bit RGBA colour, single-sampled.
    const auto attachment = [](GLenum which, GLenum what) {
      GLint v = 0;
      glGetFramebufferAttachmentParameteriv(GL_DRAW_FRAMEBUFFER, which, what, &v);
      return v;
    };
    GLint samples = -1;
    glGetIntegerv(GL_SAMPLES, &samples);
    const GLenum colour =
        scene_buffer >= GL_COLOR_ATTACHMENT0 && scene_buffer < GL_COLOR_ATTACHMENT0 + 16
            ? GLenum(scene_buffer)
            : GLenum(GL_COLOR_ATTACHMENT0);
    const bool colour_ok =
        attachment(colour, GL_FRAMEBUFFER_ATTACHMENT_RED_SIZE) == 8 &&
        attachment(colour, GL_FRAMEBUFFER_ATTACHMENT_GREEN_SIZE) == 8 &&
        attachment(colour, GL_FRAMEBUFFER_ATTACHMENT_BLUE_SIZE) == 8 &&
        attachment(colour, GL_FRAMEBUFFER_ATTACHMENT_ALPHA_SIZE) == 8 &&
        attachment(colour, GL_FRAMEBUFFER_ATTACHMENT_COMPONENT_TYPE) == GL_UNSIGNED_NORMALIZED;
    const GLint depth_bits = attachment(GL_DEPTH_ATTACHMENT, GL_FRAMEBUFFER_ATTACHMENT_DEPTH_SIZE);
    const GLint depth_type =
        attachment(GL_DEPTH_ATTACHMENT, GL_FRAMEBUFFER_ATTACHMENT_COMPONENT_TYPE);
    const bool has_depth =
        attachment(GL_DEPTH_ATTACHMENT, GL_FRAMEBUFFER_ATTACHMENT_OBJECT_TYPE) != GL_NONE;
    blit_depth_format_ = -1;
    if (has_depth && colour_ok && samples == 0) {
      if (depth_type == GL_FLOAT && depth_bits == 32)
        blit_depth_format_ = vtkTextureObject::Float32;
      else if (depth_type == GL_UNSIGNED_NORMALIZED && depth_bits == 32)
        blit_depth_format_ = vtkTextureObject::Fixed32;
      else if (depth_type == GL_UNSIGNED_NORMALIZED && depth_bits == 24)
        blit_depth_format_ = vtkTextureObject::Fixed24;
      else if (depth_type == GL_UNSIGNED_NORMALIZED && depth_bits == 16)
        blit_depth_format_ = vtkTextureObject::Fixed16;
    }
    blit_checked_fb_ = scene;
  }
  if (blit_depth_format_ < 0) return false;
  // Only the background is in the scene when this prop draws first.
  vtkPropCollection* props = ren->GetViewProps();
  vtkCollectionSimpleIterator it;
  props->InitTraversal(it);
  for (vtkProp* p = props->GetNextProp(it); p && p != this; p = props->GetNextProp(it))
    if (p->GetVisibility()) return false;
  return true;
}

void CloudProp::blitImage(vtkOpenGLRenderWindow* win, int x, int y, int width, int height) {
  vtkOpenGLState* state = win->GetState();
  state->PushReadFramebufferBinding();
  image_->Bind(GL_READ_FRAMEBUFFER);
  image_->ActivateReadBuffer(0);
  state->vtkglBlitFramebuffer(0, 0, width, height, x, y, x + width, y + height,
                              GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT, GL_NEAREST);
  state->PopReadFramebufferBinding();
}

void CloudProp::warmImage(vtkOpenGLRenderer* ren, vtkOpenGLRenderWindow* win) {
  int width = 0, height = 0, x = 0, y = 0;
  ren->GetTiledSizeAndOrigin(&width, &height, &x, &y);
  const bool blits = sceneTakesBlits(ren, win);  // the image made with the scene's depth format
  if (width <= 0 || height <= 0 || !prepareImage(win, width, height)) return;
  drawIntoImage(win, x, y, width, height, ImageStart::Clear, {}, nullptr);
  // A copied image never uses the textured triangle: its pipeline is not compiled then.
  if (!blits) compositeImage(win, x, y);  // an empty image: every pixel discarded
  shown_key_ = ViewKey{};
}

}  // namespace cumulus::ui
