#include "tool_layout.h"

#include <QFormLayout>
#include <QMainWindow>
#include <QSplitter>
#include <QVBoxLayout>

#include "vtk_cloud_view.h"

namespace cumulus::app {

ui::VtkCloudView* lay_out_tool(QMainWindow* window, QFormLayout* inputs, QWidget* panel,
                               int side_stretch) {
  auto* split = new QSplitter(window);
  auto* view = new ui::VtkCloudView(split);
  auto* side = new QWidget(split);
  auto* column = new QVBoxLayout(side);
  column->addLayout(inputs);
  column->addWidget(panel, 1);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, side_stretch);
  window->setCentralWidget(split);
  return view;
}

}  // namespace cumulus::app
