#include "vtk_gl_widget.h"

#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLExtraFunctions>
#include <QWheelEvent>

#include <vtkCallbackCommand.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkGenericRenderWindowInteractor.h>
#include <vtkOpenGLState.h>

#include <cmath>

namespace cumulus::ui {

VtkGlWidget::VtkGlWidget(QWidget* parent) : QOpenGLWidget(parent) {
  window_->SetReadyForRendering(false);
  window_->SetFrameBlitModeToNoBlit();
  window_->SetMultiSamples(0);
  window_->AddObserver(vtkCommand::WindowMakeCurrentEvent, this, &VtkGlWidget::onMakeCurrent);
  window_->AddObserver(vtkCommand::WindowIsCurrentEvent, this, &VtkGlWidget::onIsCurrent);
  interactor_->SetRenderWindow(window_);
  // VTK must not render on its own: it would draw outside paintGL, into a frame Qt never shows.
  interactor_->EnableRenderOff();
  interactor_->AddObserver(vtkCommand::RenderEvent, this, &VtkGlWidget::onInteractorRender);
  interactor_->Initialize();
}

VtkGlWidget::~VtkGlWidget() {
  // Finalize first, then stop listening to the context, or VTK frees GL objects on exit with no
  // current context and crashes.
  makeCurrent();
  finalizeVtk();
  doneCurrent();
  if (context()) disconnect(context(), nullptr, this, nullptr);
}

void VtkGlWidget::finalizeVtk() {
  if (!vtk_ready_) return;
  vtk_ready_ = false;
  window_->Finalize();
  window_->SetReadyForRendering(false);
}

void VtkGlWidget::onMakeCurrent(vtkObject*, unsigned long, void*) {
  // Only when needed: making current unconditionally rebinds Qt's framebuffer mid-render.
  if (QOpenGLContext::currentContext() != context()) makeCurrent();
}

void VtkGlWidget::onIsCurrent(vtkObject*, unsigned long, void* call_data) {
  *static_cast<bool*>(call_data) = context() && QOpenGLContext::currentContext() == context();
}

void VtkGlWidget::onInteractorRender(vtkObject*, unsigned long, void*) {
  interactorRendered();
}

void VtkGlWidget::initializeGL() {
  window_->SetOwnContext(false);
  window_->OpenGLInitContext();
  window_->SetReadyForRendering(true);
  vtk_ready_ = true;
  connect(context(), &QOpenGLContext::aboutToBeDestroyed, this, [this] {
    makeCurrent();
    finalizeVtk();
    doneCurrent();
  });
}

void VtkGlWidget::resizeGL(int w, int h) {
  const double dpr = devicePixelRatioF();
  const int pw = int(std::lround(w * dpr)), ph = int(std::lround(h * dpr));
  window_->SetSize(pw, ph);
  interactor_->UpdateSize(pw, ph);
}

void VtkGlWidget::paintGL() {
  if (!vtk_ready_) return;
  window_->Render();
  auto* f = context()->extraFunctions();
  const int w = window_->GetSize()[0], h = window_->GetSize()[1];
  f->glBindFramebuffer(GL_DRAW_FRAMEBUFFER, defaultFramebufferObject());
  f->glDisable(GL_SCISSOR_TEST);
  window_->GetState()->vtkglDisable(GL_SCISSOR_TEST);
  window_->BlitDisplayFramebuffer(0, 0, 0, w, h, 0, 0, w, h, GL_COLOR_BUFFER_BIT, GL_NEAREST);
  // Opaque alpha, or grabbed images come out transparent.
  f->glColorMask(GL_FALSE, GL_FALSE, GL_FALSE, GL_TRUE);
  f->glClearColor(0, 0, 0, 1);
  f->glClear(GL_COLOR_BUFFER_BIT);
  f->glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
  window_->GetState()->ResetGLClearColorState();
  window_->GetState()->ResetGLColorMaskState();
  emit rendered();
}

namespace {

// VTK's event for pressing or releasing a mouse button; 0 for buttons VTK has no event for.
unsigned long vtk_button_event(Qt::MouseButton button, bool press) {
  switch (button) {
    case Qt::LeftButton:
      return press ? vtkCommand::LeftButtonPressEvent : vtkCommand::LeftButtonReleaseEvent;
    case Qt::RightButton:
      return press ? vtkCommand::RightButtonPressEvent : vtkCommand::RightButtonReleaseEvent;
    case Qt::MiddleButton:
      return press ? vtkCommand::MiddleButtonPressEvent : vtkCommand::MiddleButtonReleaseEvent;
    default:
      return 0;
  }
}

}  // namespace

void VtkGlWidget::forwardMouse(QMouseEvent* e, unsigned long event_id) {
  const double dpr = devicePixelRatioF();
  const QPointF p = e->position();
  interactor_->SetEventInformationFlipY(int(p.x() * dpr), int(p.y() * dpr),
                                        (e->modifiers() & Qt::ControlModifier) ? 1 : 0,
                                        (e->modifiers() & Qt::ShiftModifier) ? 1 : 0);
  interactor_->InvokeEvent(event_id, e);
}

void VtkGlWidget::mousePressEvent(QMouseEvent* e) {
  if (const unsigned long id = vtk_button_event(e->button(), true)) forwardMouse(e, id);
}

void VtkGlWidget::mouseReleaseEvent(QMouseEvent* e) {
  if (const unsigned long id = vtk_button_event(e->button(), false)) forwardMouse(e, id);
}

void VtkGlWidget::mouseMoveEvent(QMouseEvent* e) {
  forwardMouse(e, vtkCommand::MouseMoveEvent);
}

void VtkGlWidget::wheelEvent(QWheelEvent* e) {
  const double dpr = devicePixelRatioF();
  const QPointF p = e->position();
  interactor_->SetEventInformationFlipY(int(p.x() * dpr), int(p.y() * dpr), 0, 0);
  if (e->angleDelta().y() > 0)
    interactor_->MouseWheelForwardEvent();
  else if (e->angleDelta().y() < 0)
    interactor_->MouseWheelBackwardEvent();
}

}  // namespace cumulus::ui
