#pragma once
// Which problem a CTA works on. The grid's z index is a batch entry or a group; for grouped
// problems the group's extent comes from device-resident int32 offsets (cumulative ends), so
// nothing is synchronised with the host and a captured CUDA graph replays with new offsets.
//
// Offsets are clamped before use: a group is [clamp(offs[g-1]), clamp(offs[g])) with both ends
// in [0, extent] and end >= begin. Decreasing offsets or offsets past the extent therefore give
// empty or truncated groups, never an out-of-bounds access.

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm {

enum class GroupMode : int {
  kBatched = 0,   // bmm / 3D x 3D: every z has the full (m, n, k), operands offset by batch strides
  kGroupedM = 1,  // 2D x 3D: rows of A and D split by offs; B indexed by group
  kGroupedN = 2,  // 3D x 2D: columns of B and D split by offs; A indexed by group
  kGroupedK = 3,  // 2D x 2D: the reduction split by offs; D indexed by group
};

struct GroupRange {
  int begin;
  int end;
};

CG_HOST_DEVICE GroupRange clamp_group(const int32_t* offs, int g, int extent) {
  int begin = g == 0 ? 0 : offs[g - 1];
  int end = offs[g];
  begin = min_of(max_of(begin, 0), extent);
  end = min_of(max_of(end, begin), extent);
  return GroupRange{begin, end};
}

// One GEMM problem as seen by a CTA: extents, the absolute K range, and element offsets of
// each operand's origin (strides are the launch's).
struct Problem {
  int m;
  int n;
  int k_begin;
  int k_end;
  index_t a_off;
  index_t b_off;
  index_t c_off;
  index_t d_off;
  index_t bias_off;
};

struct ProblemShape {
  GroupMode mode;
  int m, n, k;              // full extents (for grouped modes, the grouped extent is the total)
  index_t a_sm, a_sk, a_sb;  // A strides along m, k, batch/group
  index_t b_sk, b_sn, b_sb;  // B strides along k, n, batch/group
  index_t c_sm, c_sn, c_sb;
  index_t d_sm, d_sn, d_sb;
  index_t bias_sb;           // bias stride between batch entries / groups (0: shared)
  const int32_t* offs;       // device pointer for grouped modes
};

CG_HOST_DEVICE Problem resolve_problem(const ProblemShape& s, int z) {
  Problem p{s.m, s.n, 0, s.k,
            z * s.a_sb, z * s.b_sb, z * s.c_sb, z * s.d_sb, z * s.bias_sb};
  switch (s.mode) {
    case GroupMode::kBatched:
      break;
    case GroupMode::kGroupedM: {
      const GroupRange r = clamp_group(s.offs, z, s.m);
      p.m = r.end - r.begin;
      p.a_off = index_t(r.begin) * s.a_sm;
      p.c_off = index_t(r.begin) * s.c_sm;
      p.d_off = index_t(r.begin) * s.d_sm;
      break;
    }
    case GroupMode::kGroupedN: {
      const GroupRange r = clamp_group(s.offs, z, s.n);
      p.n = r.end - r.begin;
      p.b_off = index_t(r.begin) * s.b_sn;
      p.c_off = index_t(r.begin) * s.c_sn;
      p.d_off = index_t(r.begin) * s.d_sn;
      p.bias_off = r.begin;  // bias is per output column (T,)
      break;
    }
    case GroupMode::kGroupedK: {
      const GroupRange r = clamp_group(s.offs, z, s.k);
      p.k_begin = r.begin;
      p.k_end = r.end;
      p.a_off = 0;
      p.b_off = 0;
      break;
    }
  }
  return p;
}

}  // namespace cutorch_gemm
