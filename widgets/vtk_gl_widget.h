#pragma once
// VTK rendering inside a Qt 6 QOpenGLWidget. Debian's VTK Qt module is built for Qt 5 and must
// never be loaded, so the embedding (the context VTK draws with, the blit into Qt's framebuffer,
// mouse input) is done here, once, for the 3D view and for the charts.
#include <QOpenGLWidget>

#include <vtkNew.h>

class vtkGenericOpenGLRenderWindow;
class vtkGenericRenderWindowInteractor;
class vtkObject;
class QMouseEvent;

namespace cumulus::ui {

class VtkGlWidget : public QOpenGLWidget {
  Q_OBJECT

 public:
  explicit VtkGlWidget(QWidget* parent = nullptr);
  ~VtkGlWidget() override;

 signals:
  // After every frame VTK drew into the widget.
  void rendered();

 protected:
  vtkGenericOpenGLRenderWindow* renderWindow() const { return window_; }
  vtkGenericRenderWindowInteractor* interactor() const { return interactor_; }
  bool vtkReady() const { return vtk_ready_; }
  // Called when VTK's interactor asks for a render (a camera moved, a chart's scene changed).
  virtual void interactorRendered() { update(); }

  void initializeGL() override;
  void resizeGL(int w, int h) override;
  void paintGL() override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;

 private:
  void onMakeCurrent(vtkObject*, unsigned long, void*);
  void onIsCurrent(vtkObject*, unsigned long, void* call_data);
  void onInteractorRender(vtkObject*, unsigned long, void*);
  void finalizeVtk();
  void forwardMouse(QMouseEvent* e, unsigned long event_id);

  vtkNew<vtkGenericOpenGLRenderWindow> window_;
  vtkNew<vtkGenericRenderWindowInteractor> interactor_;
  bool vtk_ready_ = false;
};

}  // namespace cumulus::ui
