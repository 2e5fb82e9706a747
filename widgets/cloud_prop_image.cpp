// The prop's resting image: its points drawn into its own colour and depth textures, frame
// after frame, and composited into the scene with their depth.
#include <vtkOpenGLFramebufferObject.h>
#include <vtkOpenGLRenderWindow.h>
#include <vtkOpenGLRenderer.h>
#include <vtkOpenGLShaderCache.h>
#include <vtkOpenGLState.h>
#include <vtkOpenGLVertexArrayObject.h>
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

bool CloudProp::prepareImage(vtkOpenGLRenderWindow* win, int width, int height) {
  if (!image_) {
    image_ = vtkSmartPointer<vtkOpenGLFramebufferObject>::New();
    image_colour_ = vtkSmartPointer<vtkTextureObject>::New();
    image_depth_ = vtkSmartPointer<vtkTextureObject>::New();
    image_->SetContext(win);
    image_colour_->SetContext(win);
    image_depth_->SetContext(win);
    bool made =
        image_colour_->Allocate2D(unsigned(width), unsigned(height), 4, VTK_UNSIGNED_CHAR) &&
        image_depth_->AllocateDepth(unsigned(width), unsigned(height), vtkTextureObject::Float32);
    if (made) {
      win->GetState()->PushFramebufferBindings();
      image_->Bind();
      image_->AddColorAttachment(0, image_colour_);
      image_->AddDepthAttachment(image_depth_);
      made = image_->CheckFrameBufferStatus(GL_FRAMEBUFFER) != 0;
      win->GetState()->PopFramebufferBindings();
    }
    if (!made) {  // tried again next frame
      image_colour_->ReleaseGraphicsResources(win);
      image_depth_->ReleaseGraphicsResources(win);
      image_->ReleaseGraphicsResources(win);
      image_ = nullptr;
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

void CloudProp::drawIntoImage(vtkOpenGLRenderWindow* win, int width, int height, bool clear,
                              const std::vector<DrawRange>& ranges, vtkShaderProgram* program) {
  vtkOpenGLState* state = win->GetState();
  state->PushFramebufferBindings();
  image_->Bind();
  image_->ActivateDrawBuffers(1);
  {
    vtkOpenGLState::ScopedglViewport keep_viewport(state);
    vtkOpenGLState::ScopedglScissor keep_scissor(state);
    state->vtkglViewport(0, 0, width, height);
    state->vtkglScissor(0, 0, width, height);
    if (clear) {  // transparent: the composite leaves pixels without points alone
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

void CloudProp::warmImage(vtkOpenGLRenderer* ren, vtkOpenGLRenderWindow* win) {
  int width = 0, height = 0, x = 0, y = 0;
  ren->GetTiledSizeAndOrigin(&width, &height, &x, &y);
  if (width <= 0 || height <= 0 || !prepareImage(win, width, height)) return;
  drawIntoImage(win, width, height, true, {}, nullptr);
  compositeImage(win, x, y);  // an empty image: every pixel discarded
  shown_key_ = ViewKey{};
}

}  // namespace cumulus::ui
