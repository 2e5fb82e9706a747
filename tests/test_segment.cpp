// RDP segmentation: the recursive reference on columns with known structure, and every
// method equal to it on real and generated depth images (GPU tests skip without a GPU).
#include <cmath>

#include "core/device.h"
#include "core/error.h"
#include "generate/generate.h"
#include "io/io.h"
#include "segment/segment.h"
#include "segment/segment_compare.h"
#include "test_support.h"

using namespace cumulus;

namespace {

DepthImage column(std::vector<float> values) {
  DepthImage img;
  img.width = 1;
  img.height = std::uint32_t(values.size());
  img.depth = std::move(values);
  return img;
}

std::vector<std::uint32_t> cuts(const SegmentResult& r, std::uint32_t c = 0) {
  return {r.rows.begin() + r.offsets[c], r.rows.begin() + r.offsets[c + 1]};
}

bool same(const SegmentResult& a, const SegmentResult& b) {
  return a.offsets == b.offsets && a.rows == b.rows && a.levels == b.levels;
}

QString gpu_skip() {
  return "GPU test skipped: " + QString::fromStdString(describe(query_device()));
}

}  // namespace

class TestSegment : public QObject {
  Q_OBJECT

  // Images `width` wide of each height, calm and very noisy, with holes, each without and with
  // the median filter of `median_size` and by both distances: the GPU's cut rows and levels equal
  // the CPU's.
  static void warpColumnsEqualTheCpu(std::uint32_t width,
                                     std::initializer_list<std::uint32_t> heights,
                                     int median_size) {
    for (const std::uint32_t h : heights)
      for (const double noise : {0.03, 2.0})
        for (const int median : {0, median_size}) {
          const DepthImage img = generate_depth_columns(width, h, 500 + h, noise, 0.05);
          for (const bool perpendicular : {false, true}) {
            const SegmentParams p{
                0.05f, perpendicular ? SegmentDistance::Perpendicular : SegmentDistance::Vertical,
                0.02f, median};
            QVERIFY2(same(segment_columns(img, p, SegmentMethod::Gpu),
                          segment_columns(img, p, SegmentMethod::Cpu)),
                     qPrintable(QString("height %1 noise %2 median %3 perpendicular %4")
                                    .arg(h)
                                    .arg(noise)
                                    .arg(median)
                                    .arg(perpendicular)));
          }
        }
  }

 private slots:
  void vShapeIsCutAtItsApex() {
    std::vector<float> v;
    for (int r = 0; r <= 20; ++r)
      v.push_back(10.0f + float(std::abs(r - 7)));
    const SegmentResult res = segment_columns(column(v), {0.5f}, SegmentMethod::Cpu);
    QCOMPARE(cuts(res), (std::vector<std::uint32_t>{0, 7, 20}));
    QCOMPARE(int(res.levels[0]), 2);
  }

  void constantAndLinearColumnsStayWhole() {
    const SegmentResult c =
        segment_columns(column(std::vector<float>(50, 3.0f)), {0.01f}, SegmentMethod::Cpu);
    QCOMPARE(cuts(c), (std::vector<std::uint32_t>{0, 49}));
    QCOMPARE(int(c.levels[0]), 1);
  }

  void invalidPixelsSplitTheColumn() {
    const SegmentResult r =
        segment_columns(column({0, 5, 5, 5, NAN, 0, 7, 0, 8, 8.5f, 9}), {0.1f}, SegmentMethod::Cpu);
    QCOMPARE(cuts(r), (std::vector<std::uint32_t>{1, 3, 6, 8, 10}));
    const SegmentResult none = segment_columns(column({0, NAN, 0}), {0.1f}, SegmentMethod::Cpu);
    QVERIFY(cuts(none).empty());
    QCOMPARE(int(none.levels[0]), 0);
  }

  void cutNeedsStrictlyMoreThanEpsilonAndTiesGoLow() {
    // Rows 2 and 4 are both 1.0 off the chord: the lower row wins; at epsilon 1.0 nothing is cut.
    const std::vector<float> v{5, 5, 6, 5, 6, 5, 5};
    QCOMPARE(cuts(segment_columns(column(v), {0.5f}, SegmentMethod::Cpu)).at(1), std::uint32_t(2));
    QCOMPARE(cuts(segment_columns(column(v), {1.0f}, SegmentMethod::Cpu)),
             (std::vector<std::uint32_t>{0, 6}));
  }

  void perpendicularDistanceUsesTheRowPitch() {
    std::vector<float> v;
    for (int r = 0; r <= 10; ++r)
      v.push_back(r == 5 ? 2.0f : 1.0f);
    // Rows 1 cm apart make the chords beside the peak nearly vertical: perpendicular to them,
    // the flat rows are close, while their vertical offsets are not.
    const SegmentParams perp{0.5f, SegmentDistance::Perpendicular, 0.01f, 0};
    QCOMPARE(cuts(segment_columns(column(v), perp, SegmentMethod::Cpu)),
             (std::vector<std::uint32_t>{0, 5, 10}));
    QCOMPARE(cuts(segment_columns(column(v), {0.5f}, SegmentMethod::Cpu)),
             (std::vector<std::uint32_t>{0, 4, 5, 6, 10}));
    QCOMPARE(segment_distance(0, 0, 1, 0, 10, 5, perp), 1.0f);
  }

  void segmentsExportAsCsv() {
    const DepthImage img = column({0, 5, 5, 6, 5, 5, 0, 7, 7});
    const SegmentResult r = segment_columns(img, {0.5f}, SegmentMethod::Cpu);
    const auto segs = list_segments(img, r);
    QCOMPARE(segs.size(), std::size_t(3));  // 1-3, 3-5, 7-8
    QCOMPARE(segs[0].start_row, 1u);
    QCOMPARE(segs[2].end_depth, 7.0f);
    QTemporaryDir dir;
    save_segments((dir.path() + "/s.csv").toStdString(), img, r, SegmentFormat::Csv);
    QCOMPARE(
        test::readAll(dir.path() + "/s.csv"),
        QByteArray(
            "column,start_row,end_row,start_depth,end_depth\n0,1,3,5,6\n0,3,5,6,5\n0,7,8,7,7\n"));
  }

  void agreementListsDifferingColumns() {
    const DepthImage img = generate_depth_columns(40, 60, 5);
    const SegmentResult ref = segment_columns(img, {0.1f}, SegmentMethod::Cpu);
    QVERIFY(compare_segments(ref, segment_columns(img, {0.1f}, SegmentMethod::CpuMt)).identical);
    SegmentResult bent = ref;  // move one cut row of column 7
    const std::uint32_t at = bent.offsets[7] + 1;
    QVERIFY(at < bent.offsets[8]);
    bent.rows[at] += bent.rows[at] + 1 < bent.rows[at + 1] ? 1 : 0;
    bent.levels[11] += 1;
    const SegmentAgreement a = compare_segments(ref, bent);
    QVERIFY(!a.identical);
    QVERIFY(std::find(a.columns.begin(), a.columns.end(), 11u) != a.columns.end());
    QVERIFY(QString::fromStdString(a.summary).contains("columns differ"));
  }

  void badParametersAreRejected() {
    const DepthImage img = column({1, 2, 3});
    for (float e : {0.0f, -1.0f, NAN})
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, segment_columns(img, {e}, SegmentMethod::Cpu));
    QVERIFY_THROWS_EXCEPTION(
        InvalidArgument,
        segment_columns(img, {0.1f, SegmentDistance::Vertical, 0.01f, 4}, SegmentMethod::Cpu));
    QVERIFY_THROWS_EXCEPTION(
        InvalidArgument,
        segment_columns(img, {0.1f, SegmentDistance::Perpendicular, 0.0f, 0}, SegmentMethod::Cpu));
  }

  void multiThreadedEqualsRecursive() {
    const DepthImage img = generate_depth_columns(300, 375, 3, 0.05, 0.01);
    for (int median : {0, 3, 5}) {
      const SegmentParams p{0.2f, SegmentDistance::Vertical, 0.01f, median};
      QVERIFY(same(segment_columns(img, p, SegmentMethod::Cpu),
                   segment_columns(img, p, SegmentMethod::CpuMt)));
    }
  }

  void medianFilterUsesValidNeighbours() {
    const DepthImage f = median_filter_columns(column({1, 9, 2, 0, 3, 3}), 3);
    QCOMPARE(f.depth, (std::vector<float>{1, 2, 2, 0, 3, 3}));
  }

  // ---- every method equals the recursive reference ------------------------------------------

  void methodsAgree_data() {
    test::add_columns<QString, double, int, bool>({"input", "epsilon", "median", "perpendicular"});
    QTest::newRow("scan00197 0.2") << "depth/scan00197.png" << 0.2 << 0 << false;
    QTest::newRow("scan10159 0.05 median3") << "depth/scan10159.png" << 0.05 << 3 << false;
    QTest::newRow("kinect 0.01") << "depth/kinect_depth_mm.tiff" << 0.01 << 0 << false;
    QTest::newRow("kinect 0.005 median5 perp")
        << "depth/kinect_depth_mm.tiff" << 0.005 << 5 << true;
    QTest::newRow("street range 0.1") << "sample:street_range.png" << 0.1 << 0 << false;
    QTest::newRow("synthetic 1242x375") << "synthetic:1242x375" << 0.1 << 0 << false;
    QTest::newRow("synthetic 2048 rows") << "synthetic:64x2048" << 0.05 << 0 << false;
    QTest::newRow("very noisy") << "noisy:200x1024" << 0.01 << 0 << false;
  }

  void methodsAgree() {
    QFETCH(QString, input);
    QFETCH(double, epsilon);
    QFETCH(int, median);
    QFETCH(bool, perpendicular);
    DepthImage img;
    if (input.startsWith("synthetic:") || input.startsWith("noisy:")) {
      const auto wh = input.section(':', 1).split('x');
      img = generate_depth_columns(wh[0].toUInt(), wh[1].toUInt(), 7,
                                   input.startsWith("noisy") ? 2.0 : 0.03, 0.02);
    } else if (input.startsWith("sample:")) {
      img = load_depth_image((test::sampleDir() + "/" + input.mid(7)).toStdString(), 1.0 / 500);
    } else {
      CUMULUS_REQUIRE_DATA(path, input);
      img = load_depth_image(path.toStdString(), input.endsWith(".tiff") ? 0.001 : 1.0 / 500);
    }
    const SegmentParams p{
        float(epsilon), perpendicular ? SegmentDistance::Perpendicular : SegmentDistance::Vertical,
        0.01f, median};
    const SegmentResult ref = segment_columns(img, p, SegmentMethod::Cpu);
    QVERIFY(!ref.rows.empty());
    QVERIFY(same(ref, segment_columns(img, p, SegmentMethod::CpuMt)));
    if (!query_device().available) QSKIP(qPrintable(gpu_skip()));
    const SegmentResult gpu = segment_columns(img, p, SegmentMethod::Gpu);
    std::uint32_t differing = 0;
    for (std::uint32_t c = 0; c < img.width; ++c)
      differing += cuts(ref, c) != cuts(gpu, c) || ref.levels[c] != gpu.levels[c];
    QVERIFY2(differing == 0, qPrintable(QString("%1 columns differ").arg(differing)));
  }

  // 48 KITTI-size images: chunks of six, 7,452 columns a launch, enough to fill the SMs of an
  // H100 or H200 with a warp a column (single images go two warps a column).
  void gpuBatchEqualsSingleImages() {
    if (!query_device().available) QSKIP(qPrintable(gpu_skip()));
    std::vector<DepthImage> imgs;
    for (int k = 0; k < 48; ++k)
      imgs.push_back(generate_depth_columns(1242, 375, 100 + k, 0.03, 0.02));
    std::vector<const DepthImage*> ptrs;
    for (auto& i : imgs)
      ptrs.push_back(&i);
    const SegmentParams p{0.1f};
    const auto batch = segment_columns_batch(ptrs, p);
    for (std::size_t k = 0; k < imgs.size(); ++k)
      QVERIFY(same(batch[k], segment_columns(imgs[k], p, SegmentMethod::Cpu)));
    // Raw page-locked buffers give the same cut rows.
    auto pinned = allocate_pinned_floats(imgs[0].size() * imgs.size());
    std::vector<const float*> raw;
    for (std::size_t k = 0; k < imgs.size(); ++k) {
      std::copy(imgs[k].depth.begin(), imgs[k].depth.end(), pinned.get() + k * imgs[0].size());
      raw.push_back(pinned.get() + k * imgs[0].size());
    }
    const auto from_raw = segment_buffers_gpu(raw, imgs[0].width, imgs[0].height, p);
    for (std::size_t k = 0; k < imgs.size(); ++k)
      QVERIFY(same(from_raw[k], batch[k]));
  }

  // One results vector through batches of other sizes and contents, as a sequence reuses it: each
  // call leaves exactly its own images' results, nothing of the call before (a longer batch's
  // results, a noisy image's many more cuts, an empty image's missing ones).
  void gpuResultsIntoReusedVectorsEqualFreshOnes() {
    if (!query_device().available) QSKIP(qPrintable(gpu_skip()));
    std::vector<DepthImage> imgs;
    for (int k = 0; k < 12; ++k)
      imgs.push_back(generate_depth_columns(1242, 375, 300 + k, 0.03, 0.02));
    const DepthImage noisy = generate_depth_columns(1242, 375, 400, 1.0, 0.02);
    const SegmentParams p{0.1f};
    std::vector<SegmentResult> out;
    auto run = [&](const std::vector<const DepthImage*>& batch, const char* what) {
      std::vector<const float*> data;
      for (auto* im : batch)
        data.push_back(im->depth.data());
      segment_buffers_gpu(data, batch[0]->width, batch[0]->height, p, out);
      QCOMPARE(out.size(), batch.size());
      for (std::size_t k = 0; k < batch.size(); ++k)
        QVERIFY2(same(out[k], segment_columns(*batch[k], p, SegmentMethod::Cpu)),
                 qPrintable(QString("%1, image %2").arg(what).arg(k)));
    };
    std::vector<const DepthImage*> twelve;
    for (auto& i : imgs)
      twelve.push_back(&i);
    run(twelve, "twelve images");
    run({&noisy, &imgs[5], &noisy}, "three, two of them noisy");
    run({&imgs[7]}, "one image");
    run(twelve, "twelve again");
    DepthImage empty;  // no columns: every result keeps nothing of the twelve
    empty.height = 375;
    std::vector<const float*> none(4, empty.depth.data());
    segment_buffers_gpu(none, 0, 375, p, out);
    QCOMPARE(out.size(), std::size_t(4));
    for (const auto& r : out)
      QVERIFY(r.width == 0 && r.rows.empty() && r.levels.empty() && r.offsets.size() == 1);
  }

  // A batch runs in chunks of three images here, each with its own slice of the page-locked
  // rows; the zigzag chunk cuts every pixel, more than any slice this process has grown to, so
  // its rows come through the device copy while its neighbours' do not.
  void gpuBatchChunkBeyondItsHostSliceArrives() {
    if (!query_device().available) QSKIP(qPrintable(gpu_skip()));
    std::vector<DepthImage> imgs;
    for (int k = 0; k < 17; ++k) {
      if (k / 3 != 1) {
        imgs.push_back(generate_depth_columns(16384, 64, 200 + k, 0.03, 0.02));
        continue;
      }
      DepthImage zigzag;
      zigzag.width = 16384;
      zigzag.height = 64;
      zigzag.depth.resize(std::size_t(zigzag.width) * zigzag.height);
      for (std::size_t i = 0; i < zigzag.depth.size(); ++i)
        zigzag.depth[i] = (i / zigzag.width) % 2 ? 2.0f + float(k) : 1.0f;
      imgs.push_back(std::move(zigzag));
    }
    std::vector<const DepthImage*> ptrs;
    for (auto& i : imgs)
      ptrs.push_back(&i);
    const SegmentParams p{0.1f};
    const auto first = segment_columns_batch(ptrs, p);
    const auto second = segment_columns_batch(ptrs, p);
    QCOMPARE(first.size(), imgs.size());
    for (std::size_t k = 0; k < imgs.size(); ++k) {
      const SegmentResult ref = segment_columns(imgs[k], p, SegmentMethod::Cpu);
      QVERIFY2(same(first[k], ref), qPrintable(QString("image %1").arg(k)));
      QVERIFY2(same(second[k], ref), qPrintable(QString("image %1, second run").arg(k)));
    }
    QCOMPARE(first[4].rows.size(), imgs[4].depth.size());
  }

  // A zigzag cuts every row: more rows than the page-locked buffer the GPU writes them to holds
  // at first, so they come through the device copy; the second run finds the grown buffer.
  void gpuRowsBeyondTheHostBufferArrive() {
    DepthImage img;
    img.width = 32768;  // short columns: ties make the recursion quadratic in the height
    img.height = 64;
    img.depth.resize(std::size_t(img.width) * img.height);
    for (std::size_t i = 0; i < img.depth.size(); ++i)
      img.depth[i] = (i / img.width) % 2 ? 2.0f : 1.0f;
    const SegmentParams p{0.1f};
    const SegmentResult ref = segment_columns(img, p, SegmentMethod::Cpu);
    QCOMPARE(ref.rows.size(), img.depth.size());
    if (!query_device().available) QSKIP(qPrintable(gpu_skip()));
    QVERIFY(same(segment_columns(img, p, SegmentMethod::Gpu), ref));
    QVERIFY(same(segment_columns(img, p, SegmentMethod::Gpu), ref));
  }

  // The raw-unit path's host side: the units a loaded 16-bit image came from give back its
  // depths exactly, and a scale that is not a positive number is refused before any GPU work.
  void depthUnitsGiveBackTheLoadedImage() {
    const double scale = 1.0 / 500;
    const DepthImage img =
        load_depth_image((test::sampleDir() + "/street_range.png").toStdString(), scale);
    std::size_t valid = 0;
    for (float d : img.depth) {
      QCOMPARE(depth_from_unit(depth_to_unit(d, scale), scale), d);
      valid += DepthImage::is_valid(d);
    }
    QVERIFY(valid > 1000);
    QCOMPARE(depth_to_unit(NAN, scale), std::uint16_t(0));
    QCOMPARE(depth_to_unit(200.0f, scale), std::uint16_t(0));  // 100,000 units: none holds it
    QCOMPARE(depth_from_unit(0, scale), 0.0f);
  }

  void rawUnitScaleIsValidated() {
    const std::vector<std::uint16_t> units{1, 2, 3};
    for (double s : {0.0, -0.001, double(NAN), double(INFINITY)})
      QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                               segment_raw_buffers_gpu({units.data()}, 1, 3, s, {0.1f}));
  }

  void gpuRawUnitsEqualTheLoadedImage() {
    std::vector<std::pair<DepthImage, double>> images;
    const double png = 1.0 / 500;
    images.emplace_back(
        load_depth_image((test::sampleDir() + "/street_range.png").toStdString(), png), png);
    for (const char* f : {"depth/scan00197.png", "depth/scan10159.png"})
      if (const QString path = test::sharedDataFile(f); !path.isEmpty())
        images.emplace_back(load_depth_image(path.toStdString(), png), png);
    if (const QString path = test::sharedDataFile("depth/kinect_depth_mm.tiff"); !path.isEmpty())
      images.emplace_back(load_depth_image(path.toStdString(), 0.001), 0.001);
    if (!query_device().available) QSKIP(qPrintable(gpu_skip()));
    for (const auto& [img, scale] : images) {
      // A batch of five copies, page-locked, as a camera driver would deliver them.
      const std::size_t px = img.size();
      auto units = allocate_pinned_u16(px * 5);
      std::vector<const std::uint16_t*> batch;
      for (std::size_t k = 0; k < 5; ++k) {
        for (std::size_t i = 0; i < px; ++i)
          units[k * px + i] = depth_to_unit(img.depth[i], scale);
        batch.push_back(units.get() + k * px);
      }
      for (const SegmentParams& p :
           {SegmentParams{0.05f}, SegmentParams{0.02f, SegmentDistance::Perpendicular, 0.01f, 3}}) {
        const SegmentResult ref = segment_columns(img, p, SegmentMethod::Cpu);
        const auto raw = segment_raw_buffers_gpu(batch, img.width, img.height, scale, p);
        QCOMPARE(raw.size(), std::size_t(5));
        for (const auto& r : raw)
          QVERIFY(same(r, ref));
      }
    }
  }

  // Columns of up to 256 rows go a warp each, 2, 4 or 8 rows a thread by height, and their cut
  // rows leave as words of 32: heights at the edges of both (a row past a thread's share, a word
  // partly filled), noisy columns (deep recursion, many short segments), holes, the median filter
  // and the perpendicular distance, each against the CPU.
  void gpuWarpColumnsEqualTheCpuAtEveryHeight() {
    if (!query_device().available) QSKIP(qPrintable(gpu_skip()));
    warpColumnsEqualTheCpu(
        97, {1u, 2u, 3u, 31u, 32u, 33u, 63u, 64u, 65u, 96u, 128u, 129u, 255u, 256u}, 3);
  }

  // 257 to 384 rows go a warp a column (12 rows a thread) only when the launch fills the SMs (40
  // columns each): 8,000 columns do on GPUs of up to 200 SMs.
  void gpuWarpColumnsOfTwelveRowsEqualTheCpu() {
    if (!query_device().available) QSKIP(qPrintable(gpu_skip()));
    warpColumnsEqualTheCpu(8000, {257u, 300u, 383u, 384u}, 5);
  }

  void gpuEdgeColumns() {
    if (!query_device().available) QSKIP(qPrintable(gpu_skip()));
    const SegmentParams p{0.1f};
    for (const DepthImage& img :
         {column({0, 0, 0}), column({4}), column(std::vector<float>(1000, 2.0f)),
          column({5, 5, 6, 5, 6, 5, 5}), column({0, 5, 5, 5, NAN, 0, 7, 0, 8, 8.5f, 9})})
      QVERIFY(same(segment_columns(img, p, SegmentMethod::Gpu),
                   segment_columns(img, p, SegmentMethod::Cpu)));
  }
};

QTEST_GUILESS_MAIN(TestSegment)
#include "test_segment.moc"
