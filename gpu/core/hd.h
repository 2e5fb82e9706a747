#pragma once
// Marks functions shared by host and device code (plain inline functions without nvcc).
#if defined(__CUDACC__)
#define CUMULUS_HD __host__ __device__
#else
#define CUMULUS_HD
#endif
