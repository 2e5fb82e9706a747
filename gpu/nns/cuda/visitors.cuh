#pragma once
// What a search does with each candidate target. Every traversal (brute force, kd-tree, grid)
// calls visit(d2, index) for the targets it cannot rule out and asks limit() for the squared
// distance beyond which nothing is wanted any more; it skips only what is provably farther.
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

namespace cumulus::nns {

// A target as one number: its squared distance's bits above its index. Distances are never
// negative (nor -0: sums of squares), and such floats order like their bit patterns, so keys
// order as (distance, index), ties to the lowest index: the visitors' order.
__device__ __forceinline__ unsigned long long distance_key(float d2, int idx) {
  return static_cast<unsigned long long>(__float_as_uint(d2)) << 32 | unsigned(idx);
}
__device__ __forceinline__ float key_distance(unsigned long long key) {
  return __uint_as_float(unsigned(key >> 32));
}
__device__ __forceinline__ int key_index(unsigned long long key) {
  return int(unsigned(key & 0xffffffffu));
}

// The k nearest so far, sorted by (distance, index) so ties resolve to the lowest index and
// every traversal order gives the same list. MaxK is a compile-time bound (k <= MaxK).
template <int MaxK>
struct KnnVisitor {
  float d[MaxK];
  int i[MaxK];
  int k = 1, size = 0;
  float max_d2;  // only targets with d2 <= max_d2 count

  __device__ KnnVisitor(int k_, float max_d2_) : k(k_), max_d2(max_d2_) {}

  __device__ float limit() const { return size < k ? max_d2 : d[k - 1]; }

  __device__ void visit(float d2, int idx) {
    if (size < k) {
      if (!(d2 <= max_d2)) return;  // also drops NaN
    } else if (!(d2 < d[k - 1] || (d2 == d[k - 1] && idx < i[k - 1]))) {
      return;
    }
    int at = size < k ? size++ : k - 1;
    // Insertion from the back: lists are short and mostly arrive in near-sorted order.
    while (at > 0 && (d[at - 1] > d2 || (d[at - 1] == d2 && i[at - 1] > idx))) {
      d[at] = d[at - 1];
      i[at] = i[at - 1];
      --at;
    }
    d[at] = d2;
    i[at] = idx;
  }
};

// The lanes of the group of Lanes consecutive lanes (a power of two) this thread belongs to.
template <int Lanes>
__device__ __forceinline__ unsigned group_mask() {
  constexpr unsigned kBits = Lanes == 32 ? 0xffffffffu : (1u << Lanes) - 1u;
  return kBits << ((threadIdx.x & 31u) & ~unsigned(Lanes - 1));
}

// The single nearest target within max_d2 (ties to the lowest index), as KnnVisitor<1>, found
// by a group of Lanes consecutive lanes (a power of two) that split each cell's targets; merge()
// gives every lane of the group the group's best. Every lane of the group must call it.
template <int Lanes>
struct GroupNearestVisitor {
  float d;
  int i = INT_MAX;  // none yet; d then holds max_d2, so the first candidate must be within it
  unsigned mask;

  __device__ explicit GroupNearestVisitor(float max_d2) : d(max_d2), mask(group_mask<Lanes>()) {}

  __device__ float limit() const { return d; }
  __device__ bool found() const { return i != INT_MAX; }

  __device__ void visit(float d2, int idx) {
    if (d2 < d || (d2 == d && idx < i)) {  // false for NaN
      d = d2;
      i = idx;
    }
  }

  __device__ void merge() {
    for (int o = Lanes / 2; o > 0; o >>= 1) {
      const float od = __shfl_xor_sync(mask, d, o, Lanes);
      const int oi = __shfl_xor_sync(mask, i, o, Lanes);
      if (od < d || (od == d && oi < i)) {
        d = od;
        i = oi;
      }
    }
  }
};

// The k nearest (k <= MaxK, a few) found by a group of Lanes consecutive lanes (a power of
// two, more than k - 1) for one query, with KnnVisitor's order and so its result. Each lane keeps
// the nearest of the targets it visited itself as sorted keys in registers (inserted by a fixed
// network: a thread's list with a moving insertion point goes to local memory), and takes a
// target only where it beats the group's k-th as of the last merge. merge() draws the group's
// first k entries in order, one reduction over the lanes' next keys each, where some lane took a
// target since the last: the group's limit is then its k-th, and lane e holds entry e (`mine`).
// Every lane of the group must call merge(). (A warp a query, WarpKnnVisitor, left most of its
// lanes without targets at such k.)
template <int Lanes, int MaxK>
struct GroupKnnVisitor {
  static constexpr unsigned long long kNone = ~0ull;  // above every key: distances are finite
  unsigned long long keys[MaxK];  // this lane's own nearest, sorted; kNone where none
  int k;
  float max_d2;
  unsigned long long bar = kNone;   // the group's k-th key at the last merge
  unsigned long long mine = kNone;  // the group's entry at this lane's rank, after a merge
  int found = 0;                    // the group's entries at the last merge, at most k
  bool took = false;                // this lane took a target since the last merge

  __device__ GroupKnnVisitor(int k_, float max_d2_) : k(k_), max_d2(max_d2_) {
#pragma unroll
    for (int j = 0; j < MaxK; ++j)
      keys[j] = kNone;
  }

  __device__ float limit() const {
    return bar == kNone ? max_d2 : key_distance(bar);
  }

  __device__ void visit(float d2, int idx) {
    if (!(d2 <= max_d2)) return;  // also drops NaN
    unsigned long long carry = distance_key(d2, idx);
    if (carry >= bar) return;
    took = true;
#pragma unroll
    for (int j = 0; j < MaxK; ++j) {  // the larger of each pair moves on; past k nothing stays
      const unsigned long long held = keys[j];
      if (j < k && carry < held) {
        keys[j] = carry;
        carry = held;
      }
    }
  }

  __device__ void merge() {
    const unsigned mask = group_mask<Lanes>();
    if (!(__ballot_sync(mask, took) & mask)) return;  // the group's list is as it was
    took = false;
    const int rank = int(threadIdx.x & unsigned(Lanes - 1));
    int taken = 0;  // this lane's keys drawn so far
    found = 0;
    mine = kNone;
    for (int e = 0; e < k; ++e) {
      unsigned long long head = kNone;
#pragma unroll
      for (int j = 0; j < MaxK; ++j)
        if (j == taken) head = keys[j];
      unsigned long long least = head;
      for (int o = Lanes / 2; o > 0; o >>= 1)
        least = min(least, __shfl_xor_sync(mask, least, o, Lanes));
      if (least == kNone) break;  // the same in every lane of the group
      taken += head == least;     // keys are distinct: each target is visited by one lane
      if (rank == e) mine = least;
      found = e + 1;
      if (e == k - 1) bar = least;
    }
  }
};

// The k nearest so far, kept by a whole warp for one query, with KnnVisitor's order (distance,
// then index) and so its result. Lane l holds entries l * kPer to l * kPer + kPer - 1 of the
// sorted list in registers: a list of 64 or 256 stays there, where a thread's own list of that
// length spills to local memory and pays a shift of up to k entries per insertion. visit_all()
// takes one candidate from every lane at once. A few that still beat the k-th are inserted one
// by one, each by one shift of the list, in which every lane needs only the last entry of the
// lane before (one shuffle; entries spread over the lanes instead, e at lane e % 32, needed a
// ballot and four shuffles a row of 32). More are merged at once: every entry and candidate
// counts the candidates before it, the candidates find their place in the list from the entries'
// counts, and all are written to their new places in the warp's stage in shared memory (an
// insertion costs some fifty instructions, a merge about sixteen a candidate and some fifty
// more). limit() is the same in every lane. Every lane of the warp must call visit_all(),
// converged (warp_visit_packed does).
template <int MaxK>
struct WarpKnnVisitor {
  static constexpr int kPer = (MaxK + 31) / 32;
  // From this many candidates of one round on, they are merged rather than inserted (H200, ncu,
  // k_knn_warp on the bunny at k 16, 64, 100 and KITTI at 64: from 3 a little faster than from 5,
  // from 9 3-7 % slower).
  static constexpr int kMergeFrom = 3;
  // From this many, the round's candidates are sorted across the warp first (sort_across_warp):
  // each then knows its rank among them by its lane, and each entry its count of them by a binary
  // search, where counting costs every candidate a pass over the entries. About sixteen
  // instructions a candidate for the count against some two hundred for the sort and searches
  // (H200, ncu, the SOR scores of KITTI, a LiDAR frame and cuPCL's sample: from 8, 12 or 24
  // within 8 % of 16, none ahead on all three).
  static constexpr int kSortFrom = 16;
  float d[kPer];
  int i[kPer];
  int k, size = 0;
  float max_d2;
  float kth_d = 0;  // the k-th entry once the list is full
  int kth_i = 0;
  unsigned long long* stage;  // MaxK keys of shared memory, this warp's own

  __device__ WarpKnnVisitor(int k_, float max_d2_, unsigned long long* stage_)
      : k(k_), max_d2(max_d2_), stage(stage_) {
#pragma unroll
    for (int r = 0; r < kPer; ++r)
      d[r] = 0, i[r] = 0;  // beyond size: never read as entries, but copied by the merge
  }

  __device__ float limit() const {
    return size < k ? max_d2 : kth_d;
  }

  // Empty again, for a search that starts over on another grid (GridSearch::group).
  __device__ void reset() {
    size = 0;
    kth_d = 0;
    kth_i = 0;
  }

  __device__ bool wants(float d2, int idx) const {
    if (size < k) return d2 <= max_d2;  // also drops NaN
    return d2 < kth_d || (d2 == kth_d && idx < kth_i);
  }

  __device__ void visit_all(float d2, int idx, bool active) {
    const bool want = active && wants(d2, idx);
    unsigned todo = __ballot_sync(0xffffffffu, want);
    if (__popc(todo) >= kMergeFrom) {
      merge_round(d2, idx, want, todo);
      return;
    }
    for (; todo; todo &= todo - 1) {
      const int from = __ffs(int(todo)) - 1;
      const float cd = __shfl_sync(0xffffffffu, d2, from);
      const int ci = __shfl_sync(0xffffffffu, idx, from);
      if (wants(cd, ci)) insert(cd, ci);  // an earlier insertion may have raised the bar
    }
  }

  __device__ void merge() {}  // the list is the warp's already

  // The list and the wanted candidates of this round (lanes `todo`; all distinct, as every target
  // is visited once) in one: each goes to its rank among both, those below k stay. A candidate
  // that an earlier one of the round pushes out drops out as an insertion would have skipped it.
  __device__ void merge_round(float d2, int idx, bool want, unsigned todo) {
    const int lane = int(threadIdx.x & 31u);
    unsigned long long mine = distance_key(d2, idx);
    unsigned long long held[kPer];
    int before_held[kPer];  // wanted candidates before entry r
#pragma unroll
    for (int r = 0; r < kPer; ++r) {
      held[r] = distance_key(d[r], i[r]);
      before_held[r] = 0;
    }
    int before_mine = 0;  // wanted candidates before this lane's
    if (__popc(todo) >= kSortFrom) {
      // Lane j now holds the j-th wanted candidate, the unwanted ones (kNoKey) after them all.
      mine = sort_across_warp(want ? mine : kNoKey);
      want = lane < __popc(todo);
      before_mine = lane;
#pragma unroll
      for (int r = 0; r < kPer; ++r)
        before_held[r] = count_below(mine, held[r]);
    } else {
      for (unsigned t = todo; t; t &= t - 1) {
        const unsigned long long c = __shfl_sync(0xffffffffu, mine, __ffs(int(t)) - 1);
#pragma unroll
        for (int r = 0; r < kPer; ++r)
          before_held[r] += c < held[r];
        before_mine += c < mine;
      }
    }
    // Entry e lies before this lane's candidate exactly when fewer candidates than this one's
    // rank lie before the entry, and those counts rise along the list: the entries before it are
    // found from the counts by a search over the lanes' first entries (32-bit shuffles) and a
    // look at the last such lane's others, where a binary search over the list's keys shuffled
    // kPer 64-bit entries a step (at least 14 % of the SOR scores' instructions; ncu, H200).
    int first_count = kNoCount;  // this lane's first entry's count, or above every rank
    if (lane * kPer < size) first_count = before_held[0];
    const int lanes_before = count_below(first_count, before_mine + 1);
    const int last = max(lanes_before - 1, 0);  // every lane shuffles: the mask is the warp's
    int lo = lanes_before > 0 ? last * kPer + 1 : 0;
#pragma unroll
    for (int r = 1; r < kPer; ++r) {
      const int count = __shfl_sync(0xffffffffu, before_held[r], last);
      lo += lanes_before > 0 && last * kPer + r < size && count <= before_mine;
    }
#pragma unroll
    for (int r = 0; r < kPer; ++r) {
      const int e = lane * kPer + r;
      if (e < size && e + before_held[r] < k) stage[e + before_held[r]] = held[r];
    }
    if (want && lo + before_mine < k) stage[lo + before_mine] = mine;
    __syncwarp();
    size = min(k, size + __popc(todo));
#pragma unroll
    for (int r = 0; r < kPer; ++r) {
      const int e = lane * kPer + r;
      if (e < size) {
        d[r] = key_distance(stage[e]);
        i[r] = key_index(stage[e]);
      }
    }
    if (size == k) {
      kth_d = key_distance(stage[k - 1]);
      kth_i = key_index(stage[k - 1]);
    }
    __syncwarp();  // every lane has read the stage before a later merge writes it
  }

  static constexpr unsigned long long kNoKey = ~0ull;  // above every key: distances are not NaN

  // The warp's keys in ascending order over the lanes (a bitonic network: 15 exchanges).
  static __device__ unsigned long long sort_across_warp(unsigned long long key) {
    const int lane = int(threadIdx.x & 31u);
#pragma unroll
    for (int block = 2; block <= 32; block <<= 1) {
#pragma unroll
      for (int j = block >> 1; j > 0; j >>= 1) {
        const unsigned long long other = __shfl_xor_sync(0xffffffffu, key, j);
        const bool ascending = (lane & block) == 0, lower = (lane & j) == 0;
        key = lower == ascending ? min(key, other) : max(key, other);
      }
    }
    return key;
  }

  static constexpr int kNoCount = 1 << 30;  // above every candidate's rank

  // How many of the warp's values, ascending over the lanes, lie below `key` (0 to 32).
  template <class T>
  static __device__ int count_below(T sorted, T key) {
    int count = 0;
#pragma unroll
    for (int step = 32; step > 0; step >>= 1) {
      const int probe = count + step - 1;
      const T v = __shfl_sync(0xffffffffu, sorted, min(probe, 31));
      if (probe < 32 && v < key) count += step;
    }
    return count;
  }

  // Entries before the candidate stay; the candidate takes the first place after them; the rest
  // move one place on (the last one, beyond k, drops out).
  __device__ void insert(float cd, int ci) {
    const int lane = int(threadIdx.x & 31u);
    const auto stays = [&](int e, float ed, int ei) {
      return e < size && (ed < cd || (ed == cd && ei < ci));
    };
    float prev_d = __shfl_up_sync(0xffffffffu, d[kPer - 1], 1);
    int prev_i = __shfl_up_sync(0xffffffffu, i[kPer - 1], 1);
    bool prev_stays = lane > 0 && stays(lane * kPer - 1, prev_d, prev_i);
#pragma unroll
    for (int r = 0; r < kPer; ++r) {
      const int e = lane * kPer + r;
      const float od = d[r];
      const int oi = i[r];
      const bool s = stays(e, od, oi);
      if (!s) {
        const bool here = e == 0 || prev_stays;
        d[r] = here ? cd : prev_d;
        i[r] = here ? ci : prev_i;
      }
      prev_stays = s;
      prev_d = od;
      prev_i = oi;
    }
    if (size < k) ++size;
    if (size == k) {
      const int last = k - 1;
#pragma unroll
      for (int r = 0; r < kPer; ++r)
        if (r == last % kPer) {
          kth_d = __shfl_sync(0xffffffffu, d[r], last / kPer);
          kth_i = __shfl_sync(0xffffffffu, i[r], last / kPer);
        }
    }
  }
};

// Counts the targets strictly inside the radius (FLANN's radius rule).
struct RadiusCountVisitor {
  float r2;
  std::uint32_t count = 0;
  __device__ explicit RadiusCountVisitor(float r2_) : r2(r2_) {}
  __device__ float limit() const { return r2; }
  __device__ void visit(float d2, int) { count += d2 < r2 ? 1u : 0u; }
};

// Writes the targets strictly inside the radius to this query's slice as distance_keys, so a
// segmented sort of the keys gives PCL's order with ties by index.
struct RadiusFillVisitor {
  float r2;
  unsigned long long* out;
  std::uint32_t count = 0;
  __device__ RadiusFillVisitor(float r2_, unsigned long long* out_) : r2(r2_), out(out_) {}
  __device__ float limit() const { return r2; }
  __device__ void visit(float d2, int idx) {
    if (d2 < r2) out[count++] = distance_key(d2, idx);
  }
};

// RadiusCountVisitor for a whole warp (kWholeWarp in grid.cuh): the warp's 32 candidates of a
// round counted at once, the same count in every lane.
struct WarpRadiusCountVisitor {
  static constexpr bool kAnyRounds = true;
  float r2;
  std::uint32_t count = 0;
  __device__ explicit WarpRadiusCountVisitor(float r2_) : r2(r2_) {}
  __device__ float limit() const { return r2; }
  __device__ void visit_all(float d2, int, bool active) {
    count += unsigned(__popc(__ballot_sync(0xffffffffu, active && d2 < r2)));
  }
  __device__ void merge() {}
};

// Where WarpRadiusFillVisitor puts a row's targets: as keys, for a sort afterwards from them
// (the warp's shared memory, or room of their own in global memory).
struct RadiusRowKeys {
  unsigned long long* keys;
  __device__ void put(unsigned at, float d2, int idx) const { keys[at] = distance_key(d2, idx); }
};

// ...or at their places in the result's `index` and `dist`, for a long row sorted afterwards
// where it lies (k_sort_long_rows, where the device lacks room for the rows' keys). Two 4-byte
// stores a round instead of one of 8 bytes: the LiDAR frame's fill at 0.8 m, mostly long rows,
// 620 -> 898 us, KITTI's at 0.5 m 523 -> 560 (ncu, H200), and staging the keys in the warp's
// shared memory to write them out a whole warp at a time was slower still (967 us).
struct RadiusRowInPlace {
  int* index;
  float* dist;
  __device__ void put(unsigned at, float d2, int idx) const {
    index[at] = idx;
    dist[at] = d2;
  }
};

// RadiusFillVisitor for a whole warp: a round's targets go to the next free places of the row
// (`out`: RadiusRowKeys or RadiusRowInPlace), in lane order. At most `room` are written (the
// count found before), so a row never runs into the next one's memory.
// (Its rows are sorted afterwards, so it could take kAnyRounds too; read range by range, KITTI's
// fill at 0.5 m took fewer instructions but no less time and the LiDAR frame's and the bunny's
// more: 0.925 -> 0.910, 2.48 -> 2.57 ms and 209 -> 225 us in ncu on the H200.)
template <class Out>
struct WarpRadiusFillVisitor {
  float r2;
  Out out;
  std::uint32_t room, count = 0;
  __device__ WarpRadiusFillVisitor(float r2_, Out out_, std::uint32_t room_)
      : r2(r2_), out(out_), room(room_) {}
  __device__ float limit() const { return r2; }
  __device__ void visit_all(float d2, int idx, bool active) {
    const bool in = active && d2 < r2;
    const unsigned found = __ballot_sync(0xffffffffu, in);
    const unsigned at = count + unsigned(__popc(found & ((1u << (threadIdx.x & 31u)) - 1u)));
    if (in && at < room) out.put(at, d2, idx);
    count += unsigned(__popc(found));
  }
  __device__ void merge() {}
};

}  // namespace cumulus::nns
