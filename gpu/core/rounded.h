#pragma once
// Arithmetic rounded one operation at a time, the same on the host and the device: nvcc fuses
// a * b + c into one multiply-add (rounded once) unless told not to, so code whose CPU and GPU
// results must agree to the bit (RDP cuts, range-image pixels) uses these.
#include <cmath>

#ifdef __CUDACC__
#define CUMULUS_ROUNDED __host__ __device__ __forceinline__
#else
#define CUMULUS_ROUNDED inline
#endif

namespace cumulus::rounded {

#ifdef __CUDA_ARCH__
CUMULUS_ROUNDED float mul(float a, float b) {
  return __fmul_rn(a, b);
}
CUMULUS_ROUNDED float add(float a, float b) {
  return __fadd_rn(a, b);
}
CUMULUS_ROUNDED float sub(float a, float b) {
  return __fsub_rn(a, b);
}
CUMULUS_ROUNDED float div(float a, float b) {
  return __fdiv_rn(a, b);
}
CUMULUS_ROUNDED float root(float a) {
  return __fsqrt_rn(a);
}
CUMULUS_ROUNDED double mul(double a, double b) {
  return __dmul_rn(a, b);
}
CUMULUS_ROUNDED double add(double a, double b) {
  return __dadd_rn(a, b);
}
CUMULUS_ROUNDED double sub(double a, double b) {
  return __dadd_rn(a, -b);
}
CUMULUS_ROUNDED double div(double a, double b) {
  return __ddiv_rn(a, b);
}
CUMULUS_ROUNDED double root(double a) {
  return __dsqrt_rn(a);
}
#else
// volatile: the host compiler may not fuse the product into a later add either.
template <class T>
CUMULUS_ROUNDED T mul(T a, T b) {
  volatile T r = a * b;
  return r;
}
template <class T>
CUMULUS_ROUNDED T add(T a, T b) {
  return a + b;
}
template <class T>
CUMULUS_ROUNDED T sub(T a, T b) {
  return a - b;
}
template <class T>
CUMULUS_ROUNDED T div(T a, T b) {
  return a / b;
}
template <class T>
CUMULUS_ROUNDED T root(T a) {
  return std::sqrt(a);
}
#endif

}  // namespace cumulus::rounded
