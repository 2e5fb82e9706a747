#pragma once
// PCL's BFGS (pcl/registration/bfgs.h) with its line search, quirks included, over GICP's
// six-parameter state, for host and device. The `gpu` GICP runs it on every thread of one
// cooperative grid, each evaluation of the cost being a reduction over the grid
// (registration/cuda/gicp_gpu.cu), so the whole loop stays on the device.
#include <cfloat>
#include <cmath>

#include "core/hd.h"

namespace cumulus::gicp_math {

// PCL's BFGS (its parameters as GICP sets them) over the six-parameter state. `Eval` is called
// as eval(x, f, g) and gives the cost and gradient at x; on the device it is a collective call
// of the whole grid, so every thread must run this code in lockstep on the same values.
enum Status {
  kNegativeGradientEpsilon = -3,
  kNotStarted = -2,
  kRunning = -1,
  kSuccess = 0,
  kNoProgress = 1
};

struct Tolerances {
  double translation_gradient = 1e-2;
  double rotation_gradient = 1e-2;
};

template <class Eval>
class Bfgs {
 public:
  CUMULUS_HD Bfgs(Eval& eval, Tolerances tol) : eval_(eval), tol_(tol) {}

  // PCL's estimateRigidTransformationBFGS loop: minimises from x for at most max_inner steps.
  // Returns true where PCL accepts the result (x is then the solution).
  CUMULUS_HD bool minimise(double* x, int max_inner, int& inner, int& evaluations) {
    init(x);
    int result = kRunning;
    inner = 0;
    do {
      ++inner;
      result = one_step(x);
      if (result) break;
      result = test_gradient();
    } while (result == kRunning && inner < max_inner);
    evaluations = evaluations_;
    return result == kNoProgress || result == kSuccess || inner == max_inner;
  }

 private:
  static constexpr double kRho = 0.01, kSigma = 0.01, kTau1 = 9, kTau2 = 0.05, kTau3 = 0.5;
  static constexpr int kOrder = 3, kBracketIters = 100, kSectionIters = 100;
  static constexpr double kStepSize = 1;

  Eval& eval_;
  Tolerances tol_;
  int evaluations_ = 0;
  double f_ = 0, gradient_[6] = {};
  double delta_f_ = 0, fp0_ = 0;
  double x0_[6] = {}, dx0_[6] = {}, dg0_[6] = {}, g0_[6] = {}, dx_[6] = {}, p_[6] = {};
  double pnorm_ = 0, g0norm_ = 0;
  double f_alpha_ = 0, df_alpha_ = 0, x_alpha_[6] = {}, g_alpha_[6] = {};
  double f_cache_key_ = 0, df_cache_key_ = 0, x_cache_key_ = 0, g_cache_key_ = 0;

  CUMULUS_HD static double dot(const double* a, const double* b) {
    double s = 0;
    for (int i = 0; i < 6; ++i)
      s += a[i] * b[i];
    return s;
  }
  CUMULUS_HD static double norm(const double* a) { return sqrt(dot(a, a)); }

  CUMULUS_HD void evaluate(const double* x, double& f, double* g) {
    ++evaluations_;
    eval_(x, f, g);
  }

  CUMULUS_HD void move_to(double alpha) {
    for (int i = 0; i < 6; ++i)
      x_alpha_[i] = x0_[i] + alpha * p_[i];
    x_cache_key_ = alpha;
  }
  CUMULUS_HD double slope() const { return dot(g_alpha_, p_); }

  // Every evaluation gives the cost and the gradient together (PCL asks for them apart at
  // times: the values are the same, only fewer evaluations are made).
  CUMULUS_HD double apply_f(double alpha) {
    if (alpha == f_cache_key_) return f_alpha_;
    move_to(alpha);
    evaluate(x_alpha_, f_alpha_, g_alpha_);
    f_cache_key_ = alpha;
    g_cache_key_ = alpha;
    return f_alpha_;
  }
  CUMULUS_HD double apply_df(double alpha) {
    if (alpha == df_cache_key_) return df_alpha_;
    move_to(alpha);
    if (alpha != g_cache_key_) {
      evaluate(x_alpha_, f_alpha_, g_alpha_);
      f_cache_key_ = alpha;
      g_cache_key_ = alpha;
    }
    df_alpha_ = slope();
    df_cache_key_ = alpha;
    return df_alpha_;
  }
  CUMULUS_HD void apply_fdf(double alpha, double& f, double& df) {
    if (alpha == f_cache_key_ && alpha == df_cache_key_) {
      f = f_alpha_;
      df = df_alpha_;
      return;
    }
    if (alpha == f_cache_key_ || alpha == df_cache_key_) {
      f = apply_f(alpha);
      df = apply_df(alpha);
      return;
    }
    move_to(alpha);
    evaluate(x_alpha_, f_alpha_, g_alpha_);
    f_cache_key_ = alpha;
    g_cache_key_ = alpha;
    df_alpha_ = slope();
    df_cache_key_ = alpha;
    f = f_alpha_;
    df = df_alpha_;
  }

  CUMULUS_HD void init(const double* x) {
    delta_f_ = 0;
    for (int i = 0; i < 6; ++i)
      dx_[i] = 0;
    evaluate(x, f_, gradient_);
    for (int i = 0; i < 6; ++i) {
      x0_[i] = x[i];
      g0_[i] = gradient_[i];
    }
    g0norm_ = norm(g0_);
    for (int i = 0; i < 6; ++i)
      p_[i] = gradient_[i] * -1 / g0norm_;
    pnorm_ = norm(p_);
    fp0_ = -g0norm_;
    for (int i = 0; i < 6; ++i) {
      x_alpha_[i] = x0_[i];
      g_alpha_[i] = g0_[i];
    }
    x_cache_key_ = 0;
    f_alpha_ = f_;
    f_cache_key_ = 0;
    g_cache_key_ = 0;
    df_alpha_ = slope();
    df_cache_key_ = 0;
  }

  CUMULUS_HD int test_gradient() const {
    const double t = sqrt(gradient_[0] * gradient_[0] + gradient_[1] * gradient_[1] +
                          gradient_[2] * gradient_[2]);
    const double r = sqrt(gradient_[3] * gradient_[3] + gradient_[4] * gradient_[4] +
                          gradient_[5] * gradient_[5]);
    if (tol_.translation_gradient < 0 || tol_.rotation_gradient < 0)
      return kNegativeGradientEpsilon;
    return t < tol_.translation_gradient && r < tol_.rotation_gradient ? kSuccess : kRunning;
  }

  CUMULUS_HD static double poly3(const double* c, double x) {
    // Eigen's poly_eval: Horner for |x| <= 1, else in 1/x scaled by x^3.
    if (x * x <= 1) return ((c[3] * x + c[2]) * x + c[1]) * x + c[0];
    const double inv = 1 / x;
    const double v = ((c[0] * inv + c[1]) * inv + c[2]) * inv + c[3];
    return pow(x, 3.0) * v;
  }
  CUMULUS_HD static void check_extremum(const double* c, double x, double& xmin, double& fmin) {
    const double y = poly3(c, x);
    if (y < fmin) {
      xmin = x;
      fmin = y;
    }
  }

  CUMULUS_HD static double interpolate(double a, double fa, double fpa, double b, double fb,
                                       double fpb, double xmin, double xmax, int order) {
    double y, fmin;
    double ymin = (xmin - a) / (b - a);
    double ymax = (xmax - a) / (b - a);
    if (ymin > ymax) {
      const double t = ymin;
      ymin = ymax;
      ymax = t;
    }
    // PCL's test (!(fpb != fpa)) takes the cubic only where the slopes are equal.
    if (order > 2 && !(fpb != fpa) && fpb != INFINITY) {
      fpa = fpa * (b - a);
      fpb = fpb * (b - a);
      const double eta = 3 * (fb - fa) - 2 * fpa - fpb;
      const double xi = fpa + fpb - 2 * (fb - fa);
      const double c[4] = {fa, fpa, eta, xi};
      y = ymin;
      fmin = poly3(c, ymin);
      check_extremum(c, ymax, y, fmin);
      // Roots of c1 + 2 c2 y + 3 c3 y^2 (PCL's quadratic PolynomialSolver).
      const double q0 = c[1], q1 = 2 * c[2], q2 = 3 * c[3];
      const double a2 = 2 * q2;
      const double disc = q1 * q1 - 4 * q0 * q2;
      if (0 < disc) {
        const double root = sqrt(disc);
        double y0 = (-q1 - root) / a2, y1 = (-q1 + root) / a2;
        if (y0 > y1) {
          const double t = y0;
          y0 = y1;
          y1 = t;
        }
        if (y0 > ymin && y0 < ymax) check_extremum(c, y0, y, fmin);
        if (y1 > ymin && y1 < ymax) check_extremum(c, y1, y, fmin);
      } else if (disc == 0) {
        const double y0 = -q1 / a2;
        if (y0 > ymin && y0 < ymax) check_extremum(c, y0, y, fmin);
      }
    } else {
      fpa = fpa * (b - a);
      const double fl = fa + ymin * (fpa + ymin * (fb - fa - fpa));
      const double fh = fa + ymax * (fpa + ymax * (fb - fa - fpa));
      const double c = 2 * (fb - fa - fpa);
      y = ymin;
      fmin = fl;
      if (fh < fmin) {
        y = ymax;
        fmin = fh;
      }
      if (c > a) {  // PCL compares the curvature with a, not 0
        const double z = -fpa / c;
        if (z > ymin && z < ymax) {
          const double f = fa + z * (fpa + z * (fb - fa - fpa));
          if (f < fmin) {
            y = z;
            fmin = f;
          }
        }
      }
    }
    return a + y * (b - a);
  }

  CUMULUS_HD int line_search(double alpha1, double& alpha_new) {
    double f0, fp0, falpha, falpha_prev, fpalpha, fpalpha_prev, delta, alpha_next;
    double alpha = alpha1, alpha_prev = 0.0;
    double a, b, fa, fb, fpa, fpb;
    int i = 0;
    apply_fdf(0.0, f0, fp0);
    falpha_prev = f0;
    fpalpha_prev = fp0;
    a = 0.0;
    b = alpha;
    fa = f0;
    fb = 0.0;
    fpa = fp0;
    fpb = 0.0;
    while (i++ < kBracketIters) {
      falpha = apply_f(alpha);
      if (falpha > f0 + alpha * kRho * fp0 || falpha >= falpha_prev) {
        a = alpha_prev;
        fa = falpha_prev;
        fpa = fpalpha_prev;
        b = alpha;
        fb = falpha;
        fpb = NAN;
        break;
      }
      fpalpha = apply_df(alpha);
      if (fabs(fpalpha) <= -kSigma * fp0) {
        alpha_new = alpha;
        return kSuccess;
      }
      if (fpalpha >= 0) {
        a = alpha;
        fa = falpha;
        fpa = fpalpha;
        b = alpha_prev;
        fb = falpha_prev;
        fpb = fpalpha_prev;
        break;
      }
      delta = alpha - alpha_prev;
      alpha_next = interpolate(alpha_prev, falpha_prev, fpalpha_prev, alpha, falpha, fpalpha,
                               alpha + delta, alpha + kTau1 * delta, kOrder);
      alpha_prev = alpha;
      falpha_prev = falpha;
      fpalpha_prev = fpalpha;
      alpha = alpha_next;
    }
    while (i++ < kSectionIters) {
      delta = b - a;
      alpha = interpolate(a, fa, fpa, b, fb, fpb, a + kTau2 * delta, b - kTau3 * delta, kOrder);
      falpha = apply_f(alpha);
      if ((a - alpha) * fpa <= DBL_EPSILON) return kNoProgress;
      if (falpha > f0 + kRho * alpha * fp0 || falpha >= fa) {
        b = alpha;
        fb = falpha;
        fpb = NAN;
      } else {
        fpalpha = apply_df(alpha);
        if (fabs(fpalpha) <= -kSigma * fp0) {
          alpha_new = alpha;
          return kSuccess;
        }
        if (((b - a) >= 0 && fpalpha >= 0) || ((b - a) <= 0 && fpalpha <= 0)) {
          b = a;
          fb = fa;
          fpb = fpa;
          a = alpha;
          fa = falpha;
          fpa = fpalpha;
        } else {
          a = alpha;
          fa = falpha;
          fpa = fpalpha;
        }
      }
    }
    return kSuccess;
  }

  CUMULUS_HD int one_step(double* x) {
    double alpha = 0.0, alpha1;
    const double f0 = f_;
    if (pnorm_ == 0.0 || g0norm_ == 0.0 || fp0_ == 0) {
      for (int i = 0; i < 6; ++i)
        dx_[i] = 0;
      return kNoProgress;
    }
    if (delta_f_ < 0) {
      const double del = fmax(-delta_f_, 10 * DBL_EPSILON * fabs(f0));
      alpha1 = fmin(1.0, 2.0 * del / (-fp0_));
    } else {
      alpha1 = fabs(kStepSize);
    }
    const int status = line_search(alpha1, alpha);
    if (status != kSuccess) return status;
    // updatePosition
    {
      double fa, dfa;
      apply_fdf(alpha, fa, dfa);
    }
    f_ = f_alpha_;
    for (int i = 0; i < 6; ++i) {
      x[i] = x_alpha_[i];
      gradient_[i] = g_alpha_[i];
    }
    delta_f_ = f_ - f0;
    for (int i = 0; i < 6; ++i) {
      dx0_[i] = x[i] - x0_[i];
      dx_[i] = dx0_[i];
      dg0_[i] = gradient_[i] - g0_[i];
    }
    const double dxg = dot(dx0_, gradient_), dgg = dot(dg0_, gradient_), dxdg = dot(dx0_, dg0_);
    const double dgnorm = norm(dg0_);
    double a_coef = 0, b_coef = 0;
    if (dxdg != 0) {
      b_coef = dxg / dxdg;
      a_coef = -(1.0 + dgnorm * dgnorm / dxdg) * b_coef + dgg / dxdg;
    }
    for (int i = 0; i < 6; ++i)
      p_[i] = -a_coef * dx0_[i] + gradient_[i] + -b_coef * dg0_[i];
    for (int i = 0; i < 6; ++i) {
      g0_[i] = gradient_[i];
      x0_[i] = x[i];
    }
    g0norm_ = norm(g0_);
    pnorm_ = norm(p_);
    const double dir = dot(p_, gradient_) > 0 ? -1.0 : 1.0;
    for (int i = 0; i < 6; ++i)
      p_[i] *= dir / pnorm_;
    pnorm_ = norm(p_);
    fp0_ = dot(p_, g0_);
    // changeDirection
    for (int i = 0; i < 6; ++i) {
      x_alpha_[i] = x0_[i];
      g_alpha_[i] = g0_[i];
    }
    x_cache_key_ = 0.0;
    f_cache_key_ = 0.0;
    g_cache_key_ = 0.0;
    df_alpha_ = slope();
    df_cache_key_ = 0.0;
    return kSuccess;
  }
};

}  // namespace cumulus::gicp_math
