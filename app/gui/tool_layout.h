#pragma once
// The layout of a tool window (registration, features): the 3D view on the left and, on the
// right, the choice of inputs above the algorithm's panel.
class QFormLayout;
class QMainWindow;
class QWidget;

namespace cumulus::ui {
class VtkCloudView;
}

namespace cumulus::app {

// Makes the window's central widget; the side takes `side_stretch` parts to the view's 3.
ui::VtkCloudView* lay_out_tool(QMainWindow* window, QFormLayout* inputs, QWidget* panel,
                               int side_stretch);

}  // namespace cumulus::app
