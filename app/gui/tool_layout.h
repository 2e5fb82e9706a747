#pragma once
// The layout of a tool window (registration, features): the 3D view on the left and, on the
// right, the choice of inputs (the document's clouds) above the algorithm's panel.
class QComboBox;
class QFormLayout;
class QMainWindow;
class QWidget;

namespace cumulus::ui {
class VtkCloudView;
}

namespace cumulus::app {

class DocumentModel;

// Makes the window's central widget; the side takes `side_stretch` parts to the view's 3.
ui::VtkCloudView* lay_out_tool(QMainWindow* window, QFormLayout* inputs, QWidget* panel,
                               int side_stretch);

// Lists the document's clouds in `box` (each with its row as data), keeping the chosen one where
// it is still there; emits nothing while it fills.
void list_clouds(QComboBox* box, const DocumentModel& document);

}  // namespace cumulus::app
