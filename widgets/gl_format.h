#pragma once

namespace cumulus::ui {

// The OpenGL format the 3D view needs (VTK 9.1: a 3.2 core context, no multisampling), as the
// default for every window; call before the QApplication exists.
void set_default_gl_format();

}  // namespace cumulus::ui
