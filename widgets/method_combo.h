#pragma once
// A method list filled from an algorithm's method table: the method's name as the entry, its
// description as the entry's tooltip, and the whole table as the box's tooltip.
#include <QComboBox>
#include <QString>

#include "core/method_table.h"

namespace cumulus::ui {

// Item data beside the enumerator (Qt::UserRole): whether the method needs a GPU, and whether it
// is the one to fall back to without a GPU.
inline constexpr int kMethodIsGpuRole = Qt::UserRole + 1;
inline constexpr int kMethodFallbackRole = Qt::UserRole + 2;

template <class Method>
void fill_method_combo(QComboBox* box, const MethodTable<Method>& table) {
  for (const auto& r : table.rows()) {
    box->addItem(QString::fromUtf8(r.name), int(r.method));
    box->setItemData(
        box->count() - 1,
        QString::fromUtf8(r.label) + QStringLiteral(": ") + QString::fromUtf8(r.description),
        Qt::ToolTipRole);
    box->setItemData(box->count() - 1, r.device == MethodDevice::Gpu, kMethodIsGpuRole);
    box->setItemData(box->count() - 1, r.use == MethodDefault::WithoutGpu, kMethodFallbackRole);
  }
  box->setToolTip(QString::fromStdString(table.help(0)).trimmed());
}

}  // namespace cumulus::ui
