#pragma once
// The arithmetic of one ICP iteration, shared by the host and the device so every method makes
// the same decisions: the rigid transform of the correspondences (Umeyama without scale, as
// PCL's TransformationEstimationSVD), a 3x3 SVD by one-sided Jacobi, and PCL's
// DefaultConvergenceCriteria as a small state machine.
#include <cfloat>
#include <cmath>

#include "core/hd.h"

namespace cumulus::icp_math {

// Sums over the correspondences, of points shifted by a fixed centre c (which keeps the
// cross-covariance from cancelling for clouds far from the origin). s = source, t = target.
struct Sums {
  double n = 0;
  double s[3] = {0, 0, 0};
  double t[3] = {0, 0, 0};
  double ts[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};  // sum t_r * s_c, row-major (r, c)
  double d2 = 0;                               // sum of squared distances (as found)
  double w = 0;  // sum of the pairs' weights (their count without a robust kernel)
  static constexpr int kValues = 18;
  CUMULUS_HD double* values() { return &n; }
  CUMULUS_HD const double* values() const { return &n; }
};
static_assert(sizeof(Sums) == Sums::kValues * sizeof(double), "Sums is read as a flat array");

// A pair of weight w (1 without a robust kernel: then exactly PCL's unweighted sums).
CUMULUS_HD inline void add(Sums& a, const double* s, const double* t, double d2, double w = 1) {
  a.n += 1;
  a.w += w;
  if (w == 1) {
    for (int r = 0; r < 3; ++r) {
      a.s[r] += s[r];
      a.t[r] += t[r];
      for (int c = 0; c < 3; ++c)
        a.ts[3 * r + c] += t[r] * s[c];
    }
  } else {
    for (int r = 0; r < 3; ++r) {
      const double wt = w * t[r];
      a.s[r] += w * s[r];
      a.t[r] += wt;
      for (int c = 0; c < 3; ++c)
        a.ts[3 * r + c] += wt * s[c];
    }
  }
  a.d2 += d2;
}

// Robust kernels: the weight of a pair with residual r (a distance) in iteratively reweighted
// least squares. Huber: 1 within the scale k, k / r beyond. Tukey's biweight: (1 - (r/k)^2)^2
// within k, 0 beyond (pairs farther than k no longer pull).
enum Kernel { kNoKernel = 0, kHuber = 1, kTukey = 2 };
CUMULUS_HD inline double robust_weight(int kernel, double k, double r) {
  if (kernel == kHuber) return r <= k ? 1.0 : k / r;
  if (kernel == kTukey) {
    if (!(r < k)) return 0.0;
    const double u = r / k, v = 1 - u * u;
    return v * v;
  }
  return 1.0;
}

// 1 / sqrt(x): the device's reciprocal square root is one instruction sequence where a square
// root and a division are two, each slow on the single thread that solves.
CUMULUS_HD inline double inv_sqrt(double x) {
#ifdef __CUDA_ARCH__
  return rsqrt(x);
#else
  return 1 / std::sqrt(x);
#endif
}

CUMULUS_HD inline void cross(const double* a, const double* b, double* out) {
  out[0] = a[1] * b[2] - a[2] * b[1];
  out[1] = a[2] * b[0] - a[0] * b[2];
  out[2] = a[0] * b[1] - a[1] * b[0];
}

// Rotation R = U diag(1, 1, det(U) det(V)) V^T of the SVD of a (row-major), the Umeyama
// rotation. With proper rotations U' = [u1 u2 u1 x u2] and V' = [v1 v2 v1 x v2] that is U' V'^T,
// so only the two leading singular directions are needed, and rank-deficient (planar) inputs
// still give the unique answer. `v_io` (column-major, orthonormal; may be null) starts the
// sweeps and receives the final V: ICP's cross-covariance changes little from one iteration to
// the next, so the last V leaves one sweep or two to do instead of four or five.
CUMULUS_HD inline void umeyama_rotation(const double* a, double* rot, double* v_io = nullptr) {
  double w[9];  // columns of a V, rotated towards orthogonality (column-major: w[3c + r])
  double v[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};  // V, column-major
  if (v_io)
    for (int i = 0; i < 9; ++i)
      v[i] = v_io[i];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c)
      w[3 * c + r] =
          a[3 * r] * v[3 * c] + a[3 * r + 1] * v[3 * c + 1] + a[3 * r + 2] * v[3 * c + 2];
  // Cyclic Jacobi converges quadratically; a 3x3 needs a handful of sweeps. The threshold
  // (|gamma| <= 1e-14 sqrt(alpha beta), compared squared) sits well above double rounding noise
  // so the loop ends instead of chasing it. Each rotation is taken from two reciprocal square
  // roots: the textbook tangent (a quotient, a square root, another quotient, then the cosine's
  // reciprocal root) was a chain of four slow sequences on the one GPU thread that solves.
  for (int sweep = 0; sweep < 12; ++sweep) {
    bool rotated = false;
    for (int p = 0; p < 2; ++p)
      for (int q = p + 1; q < 3; ++q) {
        double alpha = 0, beta = 0, gamma = 0;
        for (int r = 0; r < 3; ++r) {
          alpha += w[3 * p + r] * w[3 * p + r];
          beta += w[3 * q + r] * w[3 * q + r];
          gamma += w[3 * p + r] * w[3 * q + r];
        }
        if (gamma == 0 || gamma * gamma <= 1e-28 * (alpha * beta)) continue;
        // The tangent sign(d) g / (|d| + h), with d = beta - alpha, g = 2 gamma, h = |(d, g)|,
        // as the cosine u / |(u, g)| and sine sign(d) g / |(u, g)| where u = |d| + h. c and s
        // share one root, so the rotation stays orthonormal to rounding whatever h's last bits.
        const double d = beta - alpha, g = 2 * gamma;
        const double d2g2 = d * d + g * g;
        if (!(d2g2 <= DBL_MAX / 8)) continue;  // as the test above, where alpha beta overflows
        rotated = true;
        const double u = fabs(d) + d2g2 * inv_sqrt(d2g2);
        const double root = inv_sqrt(u * u + g * g);
        const double c = u * root, s = (d >= 0 ? g : -g) * root;
        for (int r = 0; r < 3; ++r) {
          const double wp = w[3 * p + r], wq = w[3 * q + r];
          w[3 * p + r] = c * wp - s * wq;
          w[3 * q + r] = s * wp + c * wq;
          const double vp = v[3 * p + r], vq = v[3 * q + r];
          v[3 * p + r] = c * vp - s * vq;
          v[3 * q + r] = s * vp + c * vq;
        }
      }
    if (!rotated) break;
  }
  if (v_io)
    for (int i = 0; i < 9; ++i)
      v_io[i] = v[i];
  // Singular values are the column norms; take the two largest (compared squared).
  double norm2[3];
  for (int c = 0; c < 3; ++c)
    norm2[c] = w[3 * c] * w[3 * c] + w[3 * c + 1] * w[3 * c + 1] + w[3 * c + 2] * w[3 * c + 2];
  int i1 = 0;
  for (int c = 1; c < 3; ++c)
    if (norm2[c] > norm2[i1]) i1 = c;
  int i2 = i1 == 0 ? 1 : 0;
  for (int c = 0; c < 3; ++c)
    if (c != i1 && norm2[c] > norm2[i2]) i2 = c;
  double u1[3], u2[3], u3[3], v1[3], v2[3], v3[3];
  const double inv1 = norm2[i1] > 0 ? inv_sqrt(norm2[i1]) : 0;
  for (int r = 0; r < 3; ++r) {
    u1[r] = norm2[i1] > 0 ? w[3 * i1 + r] * inv1 : (r == 0);
    v1[r] = v[3 * i1 + r];
    v2[r] = v[3 * i2 + r];
  }
  if (norm2[i2] > 0) {
    // Re-orthogonalise against u1: the Jacobi sweeps leave it orthogonal to rounding only.
    double dot = 0;
    for (int r = 0; r < 3; ++r)
      dot += w[3 * i2 + r] * u1[r];
    double len2 = 0;
    for (int r = 0; r < 3; ++r) {
      u2[r] = w[3 * i2 + r] - dot * u1[r];
      len2 += u2[r] * u2[r];
    }
    const double inv = inv_sqrt(len2);
    for (int r = 0; r < 3; ++r)
      u2[r] *= inv;
  } else {
    // Rank one: any unit vector orthogonal to u1 pairs with v2 (the rotation is not unique).
    const double pick[3] = {fabs(u1[0]) < 0.9 ? 1.0 : 0.0, fabs(u1[0]) < 0.9 ? 0.0 : 1.0, 0.0};
    cross(u1, pick, u2);
    const double len = sqrt(u2[0] * u2[0] + u2[1] * u2[1] + u2[2] * u2[2]);
    for (int r = 0; r < 3; ++r)
      u2[r] /= len;
  }
  cross(u1, u2, u3);
  cross(v1, v2, v3);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c)
      rot[3 * r + c] = u1[r] * v1[c] + u2[r] * v2[c] + u3[r] * v3[c];
}

// The same rotation by Newton's method on the rotations, from `rot_io` (row-major, a rotation
// to rounding): Umeyama's R is the rotation that maximises tr(R^T a), so each step turns R by
// the w solving M w = g, where with B = R^T a, g is twice the skew part of B and M = tr(P) I - P
// for P its symmetric part (the gradient and the negated Hessian in the turn's coordinates).
// ICP's rotation moves little between iterations, so from the last one two or three steps
// reach it: about 1,500 cycles in all on an H200's one solving thread, against 3,400 for the
// warm Jacobi sweeps. Returns false, with rot_io as it was, where it cannot vouch for the
// answer: M not clearly positive definite at some step (then R is not near the maximum, or the
// maximum is flat or not unique: rank-one inputs), no convergence in eight steps, or NaNs.
// With M positive definite the maximum found is the only one there is, so the answer is
// umeyama_rotation's to rounding.
CUMULUS_HD inline bool umeyama_rotation_newton(const double* a, double* rot_io) {
  double r[9];
  {
    // One Newton-Schulz step, R (3 I - R^T R) / 2: the start carries earlier solves' rounding,
    // which the turns below would otherwise keep.
    double g[9];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        g[3 * i + j] =
            rot_io[i] * rot_io[j] + rot_io[3 + i] * rot_io[3 + j] + rot_io[6 + i] * rot_io[6 + j];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        double acc = 1.5 * rot_io[3 * i + j];
        for (int k = 0; k < 3; ++k)
          acc -= 0.5 * rot_io[3 * i + k] * g[3 * k + j];
        r[3 * i + j] = acc;
      }
  }
  for (int step = 0; step < 8; ++step) {
    double b[9];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        b[3 * i + j] = r[i] * a[j] + r[3 + i] * a[3 + j] + r[6 + i] * a[6 + j];
    const double g0 = b[7] - b[5], g1 = b[2] - b[6], g2 = b[3] - b[1];
    const double tr = b[0] + b[4] + b[8];
    const double m00 = tr - b[0], m11 = tr - b[4], m22 = tr - b[8];
    const double m01 = -0.5 * (b[1] + b[3]), m02 = -0.5 * (b[2] + b[6]), m12 = -0.5 * (b[5] + b[7]);
    const double c00 = m11 * m22 - m12 * m12, c01 = m02 * m12 - m01 * m22,
                 c02 = m01 * m12 - m02 * m11, c11 = m00 * m22 - m02 * m02,
                 c12 = m01 * m02 - m00 * m12, c22 = m00 * m11 - m01 * m01;
    const double det = m00 * c00 + m01 * c01 + m02 * c02;
    const double trm = m00 + m11 + m22;
    // Sylvester's test, the last minor held to 1e-6 of the trace's cube: M's smallest
    // eigenvalue then exceeds 1e-6 of its largest, so a step of 1e-9 leaves the answer within
    // about 1e-12 (the step's square over that ratio).
    if (!(m00 > 0 && c22 > 0 && det > 1e-6 * trm * trm * trm)) return false;
    const double inv = 1 / det;
    const double w0 = (c00 * g0 + c01 * g1 + c02 * g2) * inv;
    const double w1 = (c01 * g0 + c11 * g1 + c12 * g2) * inv;
    const double w2 = (c02 * g0 + c12 * g1 + c22 * g2) * inv;
    // The turn by w as the Cayley rotation of w / 2 (an angle of 2 atan(|w| / 2), w's to third
    // order, so the steps still converge quadratically): orthonormal without a sine or cosine.
    const double x = 0.5 * w0, y = 0.5 * w1, z = 0.5 * w2;
    const double s2 = x * x + y * y + z * z;
    const double k = 2 * (1 / (1 + s2));  // a reciprocal: on the GPU cheaper than a quotient
    const double q[9] = {1 + k * (x * x - s2), k * (x * y - z),      k * (x * z + y),
                         k * (x * y + z),      1 + k * (y * y - s2), k * (y * z - x),
                         k * (x * z - y),      k * (y * z + x),      1 + k * (z * z - s2)};
    double next[9];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        next[3 * i + j] = r[3 * i] * q[j] + r[3 * i + 1] * q[3 + j] + r[3 * i + 2] * q[6 + j];
    for (int i = 0; i < 9; ++i)
      r[i] = next[i];
    if (4 * s2 <= 1e-18) {
      for (int i = 0; i < 9; ++i)
        rot_io[i] = r[i];
      return true;
    }
  }
  return false;
}

// Row-major 4x4 rigid transform mapping source onto target for the summed correspondences
// (points were shifted by `centre` before summing). With `rotation_io` (row-major, a rotation),
// Newton's steps start from it and it receives the answer; the Jacobi sweeps (from `jacobi_v`)
// take over where those steps cannot vouch for theirs.
CUMULUS_HD inline void estimate_rigid(const Sums& a, const double* centre, double* m,
                                      double* jacobi_v = nullptr, double* rotation_io = nullptr) {
  const double inv = 1 / a.w;
  double sm[3], tm[3], sigma[9];
  for (int r = 0; r < 3; ++r) {
    sm[r] = a.s[r] * inv;
    tm[r] = a.t[r] * inv;
  }
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c)
      sigma[3 * r + c] = a.ts[3 * r + c] * inv - tm[r] * sm[c];
  double rot[9];
  if (rotation_io && umeyama_rotation_newton(sigma, rotation_io)) {
    for (int i = 0; i < 9; ++i)
      rot[i] = rotation_io[i];
  } else {
    umeyama_rotation(sigma, rot, jacobi_v);
    if (rotation_io)
      for (int i = 0; i < 9; ++i)
        rotation_io[i] = rot[i];
  }
  for (int r = 0; r < 3; ++r) {
    // t = (c + t_mean) - R (c + s_mean)
    double rs = 0;
    for (int c = 0; c < 3; ++c)
      rs += rot[3 * r + c] * (centre[c] + sm[c]);
    for (int c = 0; c < 3; ++c)
      m[4 * r + c] = rot[3 * r + c];
    m[4 * r + 3] = (centre[r] + tm[r]) - rs;
  }
  m[12] = m[13] = m[14] = 0;
  m[15] = 1;
}

// Point to plane, as PCL's TransformationEstimationPointToPlaneLLS: per pair the row
// (a, b, c, nx, ny, nz) of s x n and n, and the residual d = n . t - n . s, in PCL's arithmetic
// (the row's cross products and d in float, then double; n n^T in float); summed into the upper
// triangle of A^T A (row by row) and A^T b.
struct PlaneSums {
  double n = 0;
  double ata[21] = {};
  double atb[6] = {};
  double d2 = 0;  // sum of squared distances (as found), for the MSE
  double w = 0;   // sum of the pairs' weights
  static constexpr int kValues = 30;
  CUMULUS_HD double* values() { return &n; }
  CUMULUS_HD const double* values() const { return &n; }
};
static_assert(sizeof(PlaneSums) == PlaneSums::kValues * sizeof(double), "read as a flat array");

CUMULUS_HD inline float fmul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
CUMULUS_HD inline float fadd(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
CUMULUS_HD inline float fsub(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// s: the moved source point, t: its target, n: the target's normal (all finite). With a
// robust kernel the pair is weighted by its point-to-plane residual |d|.
CUMULUS_HD inline void add_plane(PlaneSums& a, const float* s, const float* t, const float* n,
                                 double d2, int kernel = kNoKernel, double scale = 0) {
  const double row[6] = {double(fsub(fmul(n[2], s[1]), fmul(n[1], s[2]))),
                         double(fsub(fmul(n[0], s[2]), fmul(n[2], s[0]))),
                         double(fsub(fmul(n[1], s[0]), fmul(n[0], s[1]))),
                         double(n[0]),
                         double(n[1]),
                         double(n[2])};
  const float d = fsub(
      fsub(fsub(fadd(fadd(fmul(n[0], t[0]), fmul(n[1], t[1])), fmul(n[2], t[2])), fmul(n[0], s[0])),
           fmul(n[1], s[1])),
      fmul(n[2], s[2]));
  const double w = robust_weight(kernel, scale, fabs(double(d)));
  int k = 0;
  for (int r = 0; r < 6; ++r)
    for (int c = r; c < 6; ++c, ++k) {
      // PCL multiplies two normal components in float (both are float references there).
      const double v = r >= 3 ? double(fmul(n[r - 3], n[c - 3])) : row[r] * row[c];
      a.ata[k] += w == 1 ? v : w * v;
    }
  for (int r = 0; r < 6; ++r)
    a.atb[r] += w == 1 ? row[r] * double(d) : w * (row[r] * double(d));
  a.n += 1;
  a.w += w;
  a.d2 += d2;
}

// x = (A^T A)^-1 A^T b by Gaussian elimination with partial pivoting (PCL inverts with Eigen's
// partial-pivoting LU). A singular system gives NaN, as PCL's inverse would.
CUMULUS_HD inline void solve_plane(const PlaneSums& a, double* x) {
  double m[6][7];
  int k = 0;
  for (int r = 0; r < 6; ++r)
    for (int c = r; c < 6; ++c, ++k)
      m[r][c] = m[c][r] = a.ata[k];
  for (int r = 0; r < 6; ++r)
    m[r][6] = a.atb[r];
  for (int col = 0; col < 6; ++col) {
    int pivot = col;
    for (int r = col + 1; r < 6; ++r)
      if (fabs(m[r][col]) > fabs(m[pivot][col])) pivot = r;
    if (pivot != col)
      for (int c = 0; c < 7; ++c) {
        const double t = m[col][c];
        m[col][c] = m[pivot][c];
        m[pivot][c] = t;
      }
    for (int r = col + 1; r < 6; ++r) {
      const double f = m[r][col] / m[col][col];
      for (int c = col; c < 7; ++c)
        m[r][c] -= f * m[col][c];
    }
  }
  for (int r = 5; r >= 0; --r) {
    double s = m[r][6];
    for (int c = r + 1; c < 6; ++c)
      s -= m[r][c] * x[c];
    x[r] = s / m[r][r];
  }
}

// PCL's constructTransformationMatrix(alpha, beta, gamma, tx, ty, tz): R = Rz(gamma) Ry(beta)
// Rx(alpha), row-major.
CUMULUS_HD inline void plane_transform(const double* x, double* m) {
  const double ca = cos(x[0]), sa = sin(x[0]), cb = cos(x[1]), sb = sin(x[1]), cg = cos(x[2]),
               sg = sin(x[2]);
  m[0] = cg * cb;
  m[1] = -sg * ca + cg * sb * sa;
  m[2] = sg * sa + cg * sb * ca;
  m[4] = sg * cb;
  m[5] = cg * ca + sg * sb * sa;
  m[6] = -cg * sa + sg * sb * ca;
  m[8] = -sb;
  m[9] = cb * sa;
  m[10] = cb * ca;
  m[3] = x[3];
  m[7] = x[4];
  m[11] = x[5];
  m[12] = m[13] = m[14] = 0;
  m[15] = 1;
}

// out = a * b, row-major 4x4.
CUMULUS_HD inline void multiply(const double* a, const double* b, double* out) {
  double tmp[16];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      double s = 0;
      for (int k = 0; k < 4; ++k)
        s += a[4 * r + k] * b[4 * k + c];
      tmp[4 * r + c] = s;
    }
  for (int i = 0; i < 16; ++i)
    out[i] = tmp[i];
}

// PCL's ConvergenceState values.
enum State : int {
  kNotConverged = 0,
  kIterations = 1,
  kTransform = 2,
  kAbsMse = 3,
  kRelMse = 4,
  kNoCorrespondences = 5,
  kFailureAfterMaxIterations = 6,
  kSolverFailure = 7,  // GICP's BFGS (not PCL's ICP criteria)
};

struct Criteria {
  int max_iterations = 10;
  double rotation_threshold = 1;     // cosine
  double translation_threshold = 0;  // squared
  double mse_relative = -DBL_MAX;
  double mse_absolute = 1e-12;
  int failure_after_max_iterations = 0;
  int kernel = kNoKernel;  // robust kernel (not PCL's), and its scale
  double kernel_scale = 0;
};

struct ConvergenceState {
  double prev_mse = DBL_MAX;
  int similar = 0;  // PCL's iterations_similar_transforms_; its allowed maximum is 0
};

// PCL's DefaultConvergenceCriteria::hasConverged after `iterations` iterations, whose last
// incremental transform is m and whose correspondences had mean squared distance mse.
// Returns the new state (kNotConverged to go on).
CUMULUS_HD inline int check_convergence(const Criteria& k, ConvergenceState& st, int iterations,
                                        const double* m, double mse, double* cos_angle_out,
                                        double* translation_sq_out) {
  int state = kNotConverged;
  const int max_similar = 0;
  bool similar = false;
  const double cos_angle = 0.5 * (m[0] + m[5] + m[10] - 1);
  const double translation_sq = m[3] * m[3] + m[7] * m[7] + m[11] * m[11];
  *cos_angle_out = cos_angle;
  *translation_sq_out = translation_sq;
  if (iterations >= k.max_iterations) {
    if (!k.failure_after_max_iterations) return kIterations;
    state = kFailureAfterMaxIterations;
  }
  if (cos_angle >= k.rotation_threshold && translation_sq <= k.translation_threshold) {
    if (st.similar >= max_similar) return kTransform;
    similar = true;
  }
  if (fabs(mse - st.prev_mse) < k.mse_absolute) {
    if (st.similar >= max_similar) return kAbsMse;
    similar = true;
  }
  if (fabs(mse - st.prev_mse) / st.prev_mse < k.mse_relative) {
    if (st.similar >= max_similar) return kRelMse;
    similar = true;
  }
  st.similar = similar ? st.similar + 1 : 0;
  st.prev_mse = mse;
  return state;
}

}  // namespace cumulus::icp_math
