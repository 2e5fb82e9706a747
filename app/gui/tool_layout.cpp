#include "tool_layout.h"

#include <QComboBox>
#include <QFormLayout>
#include <QMainWindow>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSplitter>
#include <QVBoxLayout>

#include "document.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

ui::VtkCloudView* lay_out_tool(QMainWindow* window, QFormLayout* inputs, QWidget* panel,
                               int side_stretch) {
  auto* split = new QSplitter(window);
  auto* view = new ui::VtkCloudView(split);
  // The side scrolls rather than squeezing its rows below their size when the window is short.
  auto* scroll = new QScrollArea(split);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* side = new QWidget;
  scroll->setWidget(side);
  auto* column = new QVBoxLayout(side);
  column->addLayout(inputs);
  column->addWidget(panel, 1);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, side_stretch);
  window->setCentralWidget(split);
  return view;
}

void list_clouds(QComboBox* box, const DocumentModel& document) {
  const QString keep = box->currentText();
  QSignalBlocker block(box);
  box->clear();
  for (int r = 0; r < document.count(); ++r)
    if (document.at(r).isCloud()) box->addItem(document.at(r).name, r);
  const int at = box->findText(keep);
  if (at >= 0) box->setCurrentIndex(at);
}

}  // namespace cumulus::app
