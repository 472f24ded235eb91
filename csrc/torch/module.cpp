// The Python module cutorch_gemm._C. Importing it registers the `gemm` ops (schema.cpp and the
// per-device implementations); the functions below expose the torch-free host-device logic
// (rasterization, split-K partitioning, fusion functors, layout mapping, heuristics) so the CPU
// test suite checks the exact code the kernels run.
#include <torch/extension.h>

#include <string>
#include <vector>

#include "checks.h"
#include "fast_calls.h"
#include "cutorch_gemm/device/simt_heuristic.h"
#include "cutorch_gemm/device/family.h"
#include "cutorch_gemm/device/sm80_configs.h"
#include "cutorch_gemm/device/sm80_skinny.h"
#include "cutorch_gemm/device/sm90_skinny.h"
#include "cutorch_gemm/device/sm90_configs.h"
#include "cutorch_gemm/device/sm90_fit_rules.h"
#ifdef CUTORCH_GEMM_WITH_CUDA
#include "cutorch_gemm/device/sm80_gemm.h"
#include "cutorch_gemm/device/sm90_gemm.h"
#endif
#include "cutorch_gemm/scheduler/split_k.h"
#include "epilogue_cpu.h"

#define CG_STR2(x) #x
#define CG_STR(x) CG_STR2(x)

namespace {

using namespace cutorch_gemm;

DType parse_dtype(const std::string& name) {
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64, DType::kInt8}) {
    if (name == dtype_name(t)) return t;
  }
  TORCH_CHECK_VALUE(false, "unknown dtype '", name, "'; expected float16, bfloat16, float32, float64 or int8");
  return DType::kFloat32;
}

std::vector<std::string> compiled_archs() {
  std::vector<std::string> out;
#ifdef CUTORCH_GEMM_ARCH_LIST
  // setup.py passes TORCH_CUDA_ARCH_LIST as one token with '_' between entries.
  std::string all = CG_STR(CUTORCH_GEMM_ARCH_LIST), cur;
  for (char ch : all + "_") {
    if (ch == '_') {
      if (!cur.empty()) {
        std::string sm = "sm_";
        for (char x : cur) if (x != '.') sm += x;
        out.push_back(sm);
      }
      cur.clear();
    } else {
      cur += ch;
    }
  }
#endif
  return out;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "cutorch_gemm native module: registers torch.ops.gemm.* and exposes host-device helpers";
  cutorch_gemm::fast::register_fast_calls(m);
  m.def("cuda_built", [] {
#ifdef CUTORCH_GEMM_WITH_CUDA
    return true;
#else
    return false;
#endif
  }, "True when the CUDA kernels were compiled into this build.");
  m.def("compiled_archs", &compiled_archs, "GPU architectures with machine code in this build.");
  m.def("sm90_available", [] {
#ifdef CUTORCH_GEMM_WITH_CUDA
    return sm90_kernels_available();
#else
    return false;
#endif
  }, "True when this build has sm_90a kernels the current device runs.");
  m.def("sm90_operand", [](int64_t k_stride, int64_t mn_stride, int64_t batch_stride, bool base_aligned,
                           int elem_bytes) {
    const Sm90Operand o = sm90_operand(k_stride, mn_stride, batch_stride, base_aligned, elem_bytes);
    return std::make_pair(o.ok, o.mn_major);
  }, "(ok, mn_major): whether the sm90 kernels can read an operand with these strides (elements).");
  m.def("sm80_available", [] {
#ifdef CUTORCH_GEMM_WITH_CUDA
    return sm80_kernels_available();
#else
    return false;
#endif
  }, "True when this build has sm_80-family kernels the current device runs.");
  m.def("choose_family", [](int major, const std::string& dtype, std::pair<bool, bool> a, std::pair<bool, bool> b,
                            const std::string& mode, bool k_positive, bool sm90_built, bool sm80_built,
                            bool tf32_allowed, const std::string& forced) {
    GroupMode gm = GroupMode::kBatched;
    if (mode == "m") gm = GroupMode::kGroupedM;
    else if (mode == "n") gm = GroupMode::kGroupedN;
    else if (mode == "k") gm = GroupMode::kGroupedK;
    else TORCH_CHECK_VALUE(mode == "none", "choose_family: mode must be none, m, n or k, got ", mode);
    const FamilyChoice c = choose_family(FamilyQuery{major, parse_dtype(dtype), Sm90Operand{a.first, a.second},
                                                     Sm90Operand{b.first, b.second}, gm, k_positive, sm90_built,
                                                     sm80_built, tf32_allowed, forced});
    pybind11::dict d;
    d["family"] = std::string(family_name(c.family));
    d["reason"] = c.reason;
    return d;
  }, "Which kernel family a call takes (the binding's own rule); a, b: sm90_operand results; mode: grouped dimension.",
        pybind11::arg("major"), pybind11::arg("dtype"), pybind11::arg("a"), pybind11::arg("b"), pybind11::arg("mode"),
        pybind11::arg("k_positive"), pybind11::arg("sm90_built"), pybind11::arg("sm80_built"),
        pybind11::arg("tf32_allowed"), pybind11::arg("forced"));
  m.def("skinny_plan", [](int major, bool sm80_built, const std::string& dtype, int64_t batch, int64_t m_, int64_t n,
                          int64_t k, int64_t a_sm, int64_t a_sk, int64_t b_sk, int64_t b_sn, bool a_aligned,
                          bool b_aligned, const std::string& forced, const std::string& knob, int num_sms) {
    const SkinnyQuery q{major, sm80_built, parse_dtype(dtype), GroupMode::kBatched, batch, m_, n, k, a_sm, a_sk,
                        b_sk, b_sn, a_aligned, b_aligned, num_sms, forced, knob};
    const std::string why = skinny_refusal(q);
    pybind11::dict d;
    d["taken"] = why.empty();
    d["reason"] = why;
    d["config"] = std::string(skinny_config_name(choose_skinny_config(m_, n, num_sms, knob)));
    return d;
  }, "Whether the skinny (M <= 64) kernel takes one dense launch (the binding's rule; strides in elements as "
     "set_2d reports them; knob: CUTORCH_GEMM_SKINNY), why not, and its config.",
        pybind11::arg("major"), pybind11::arg("sm80_built"), pybind11::arg("dtype"), pybind11::arg("batch"),
        pybind11::arg("m"), pybind11::arg("n"), pybind11::arg("k"), pybind11::arg("a_sm"), pybind11::arg("a_sk"),
        pybind11::arg("b_sk"), pybind11::arg("b_sn"), pybind11::arg("a_aligned"), pybind11::arg("b_aligned"),
        pybind11::arg("forced") = "", pybind11::arg("knob") = "", pybind11::arg("num_sms") = 132);
  m.def("sm90_skinny_plan", [](int major, bool sm90_built, const std::string& dtype, int64_t batch, int64_t m_,
                               int64_t n, int64_t k, int64_t a_sm, int64_t a_sk, int64_t b_sk, int64_t b_sn,
                               bool a_aligned, bool b_aligned, const std::string& forced, const std::string& knob,
                               int num_sms, int forced_splits, const std::string& ring) {
    SkinnyQuery q{major, false, parse_dtype(dtype), GroupMode::kBatched, batch, m_, n, k, a_sm, a_sk,
                  b_sk, b_sn, a_aligned, b_aligned, num_sms, forced, knob, sm90_built};
    const std::string why = sm90_skinny_refusal(q);
    const int tokens = sm90_skinny_tokens(m_);
    pybind11::dict d;
    d["taken"] = why.empty();
    d["reason"] = why;
    d["config"] = sm90_skinny_config_name(tokens);
    const int splits = choose_sm90_skinny_splits(n, k, tokens, num_sms, forced_splits);
    d["splits"] = splits;
    // (the launch keeps the short ring where the deep one's CTAs would not all be resident)
    d["stages"] = sm90_skinny_stages(tokens, sm90_skinny_deep_ring(tokens, k, splits, ring));
    return d;
  }, "Whether the Hopper skinny (M <= 128) kernel takes one dense launch (the binding's rule, checked before "
     "skinny_plan's), why not, its config, K split and ring stages (knob: CUTORCH_GEMM_SKINNY; forced_splits: "
     "CUTORCH_GEMM_SKINNY_SPLITS; ring: CUTORCH_GEMM_SKINNY_RING).",
        pybind11::arg("major"), pybind11::arg("sm90_built"), pybind11::arg("dtype"), pybind11::arg("batch"),
        pybind11::arg("m"), pybind11::arg("n"), pybind11::arg("k"), pybind11::arg("a_sm"), pybind11::arg("a_sk"),
        pybind11::arg("b_sk"), pybind11::arg("b_sn"), pybind11::arg("a_aligned"), pybind11::arg("b_aligned"),
        pybind11::arg("forced") = "", pybind11::arg("knob") = "", pybind11::arg("num_sms") = 132,
        pybind11::arg("forced_splits") = 0, pybind11::arg("ring") = "");
  m.def("sm90_grouped_skinny_plan", [](int major, bool sm90_built, const std::string& dtype, int64_t groups,
                                       int64_t m_, int64_t n, int64_t k, int64_t a_sm, int64_t a_sk, int64_t b_sk,
                                       int64_t b_sn, int64_t b_sb, bool a_aligned, bool b_aligned,
                                       const std::string& forced, const std::string& knob, int num_sms,
                                       int forced_splits, int forced_slots, bool swiglu) {
    const SkinnyQuery q{major, false, parse_dtype(dtype), GroupMode::kGroupedM, groups, m_, n, k, a_sm, a_sk,
                        b_sk, b_sn, a_aligned, b_aligned, num_sms, forced, knob, sm90_built, b_sb, swiglu};
    const std::string why = sm90_grouped_skinny_refusal(q);
    const int tokens = sm90_skinny_tokens(m_);
    pybind11::dict d;
    d["taken"] = why.empty();
    d["reason"] = why;
    d["config"] = sm90_skinny_config_name(tokens);
    d["splits"] = choose_sm90_grouped_skinny_splits(n, k, groups, m_, num_sms, forced_splits);
    d["slots"] = sm90_grouped_skinny_slots(groups, m_, forced_slots);
    return d;
  }, "Whether the grouped Hopper skinny kernel takes a grouped_mm 2D x 3D launch (the binding's rule, checked "
     "before the tile kernels'), why not, its config, K split and grid z slots (knob: CUTORCH_GEMM_SKINNY; "
     "forced_splits / forced_slots: CUTORCH_GEMM_SKINNY_SPLITS / _SLOTS; swiglu: the fused SwiGLU).",
        pybind11::arg("major"), pybind11::arg("sm90_built"), pybind11::arg("dtype"), pybind11::arg("groups"),
        pybind11::arg("m"), pybind11::arg("n"), pybind11::arg("k"), pybind11::arg("a_sm"), pybind11::arg("a_sk"),
        pybind11::arg("b_sk"), pybind11::arg("b_sn"), pybind11::arg("b_sb"), pybind11::arg("a_aligned"),
        pybind11::arg("b_aligned"), pybind11::arg("forced") = "", pybind11::arg("knob") = "",
        pybind11::arg("num_sms") = 132, pybind11::arg("forced_splits") = 0, pybind11::arg("forced_slots") = 0,
        pybind11::arg("swiglu") = false);
  m.def("choose_sm80_plan", [](const std::string& dtype, int64_t m_, int64_t n, int64_t k, int64_t batch, int num_sms,
                               int smem_optin, bool grouped, const std::string& forced_config,
                               const std::string& forced_split, bool mn_major) {
    bool ok = true;
    const Sm80Plan p = choose_sm80_plan(parse_dtype(dtype), int(m_), int(n), int(k), int(batch), num_sms, smem_optin,
                                        grouped, forced_config, forced_split, &ok, mn_major);
    TORCH_CHECK_VALUE(ok, "CUTORCH_GEMM_SM80_CONFIG='", forced_config, "' / CUTORCH_GEMM_SPLIT_K='", forced_split,
                      "' name nothing ", dtype, " has on this GPU (configs: see cutorch_gemm.explain; split-K: "
                      "none, serial:N or parallel:N with 1 <= N <= ", kSm80MaxSplits, ")");
    pybind11::dict d;
    d["config"] = std::string(sm80_config_name(p.config));
    d["split_mode"] = std::string(splitk_mode_name(p.split_mode));
    d["splits"] = p.splits;
    d["raster_group"] = p.raster_group;
    d["tiles_m"] = p.tiles_m;
    d["tiles_n"] = p.tiles_n;
    d["smem_bytes"] = sm80_smem_bytes(p.config);
    d["reason"] = p.reason;
    return d;
  }, "The sm80 heuristic's plan (m, n: one problem or the average group; mn_major: an operand is read "
     "MN-major).", pybind11::arg("dtype"),
        pybind11::arg("m"), pybind11::arg("n"), pybind11::arg("k"), pybind11::arg("batch"), pybind11::arg("num_sms"),
        pybind11::arg("smem_optin"), pybind11::arg("grouped") = false, pybind11::arg("forced_config") = "",
        pybind11::arg("forced_split") = "", pybind11::arg("mn_major") = false);
  m.def("choose_sm90_config", [](int64_t m_, int64_t n, int64_t k, int64_t problems, int num_sms,
                                 const std::string& forced, int elem_bytes, bool narrow, bool fast_accum,
                                 bool coop_streamk) {
    Sm90ConfigId id = choose_sm90_config(int(m_), int(n), int(k), int(problems), num_sms, forced, narrow,
                                         coop_streamk);
    if (elem_bytes == 1) id = choose_sm90_f8_config(id, fast_accum, forced, int(m_), int(n), num_sms);
    return std::string(sm90_config_name(id, elem_bytes));
  }, "The sm90 heuristic's config (m, n: one problem or the average group; forced: CUTORCH_GEMM_SM90_CONFIG), "
     "named for operands of elem_bytes bytes (2: fp16/bf16, 1: fp8 (scaled_mm; fast_accum: its use_fast_accum), "
     "4: tf32); narrow: the launch may take the 64x128 config (fp16 / bf16 dense, batched or grouped-M); "
     "coop_streamk: the cooperative config would take stream-K (sm90_coop_streamk).", pybind11::arg("m"),
        pybind11::arg("n"), pybind11::arg("k"), pybind11::arg("problems"), pybind11::arg("num_sms"),
        pybind11::arg("forced"), pybind11::arg("elem_bytes") = 2, pybind11::arg("narrow") = false,
        pybind11::arg("fast_accum") = false, pybind11::arg("coop_streamk") = false);
  m.attr("SM90_ACT_PINGPONG_MAX_K") = kActPingpongMaxK;  // (explain's note names the bounds)
  m.attr("SM90_ACT_PINGPONG_MAX_MNK_LOG2") = kActPingpongMaxMnkLog2;
  m.def("choose_sm90_act", [](const std::string& base, int64_t m, int64_t n, int64_t k, bool activation,
                              bool rows_128b, bool k_major, const std::string& forced, bool on) {
    if (base != sm90_config_name(Sm90ConfigId::kCoop128x256)) return std::string();
    const Sm90ConfigId id =
        choose_sm90_act(Sm90ConfigId::kCoop128x256, m, n, int(k), activation, rows_128b, k_major, forced, on);
    return std::string(id != Sm90ConfigId::kCoop128x256 ? sm90_config_name(id) : "");
  }, "The activation rule for one dense fp16 / bf16 problem (base: the config the heuristic and the fit rules left, "
     "by name): the 64x256 ping-pong config's name where it replaces the cooperative 128x256 one (an activation, "
     "rows_128b, k_major: both operands K-major, K <= kActPingpongMaxK, M*N*K <= kActPingpongMaxMnk, no forced "
     "config, on: CUTORCH_GEMM_SM90_ACT_PINGPONG=on, the opt-in), else ''.",
        pybind11::arg("base"), pybind11::arg("m"), pybind11::arg("n"), pybind11::arg("k"), pybind11::arg("activation"),
        pybind11::arg("rows_128b"), pybind11::arg("k_major"), pybind11::arg("forced") = "",
        pybind11::arg("on") = false);
  m.def("choose_sm90_big", [](const std::string& base, int64_t m, int64_t n, int64_t k, int num_sms,
                              const std::string& forced, bool forced_ok, bool ok, bool on) {
    Sm90ConfigId from = Sm90ConfigId::kCoop128x256;
    for (int i = 0; i <= int(Sm90ConfigId::kCoop240); ++i) {  // (the first id of that name: 128x256 is kCoop128x256)
      if (base == sm90_config_name(Sm90ConfigId(i))) {
        from = Sm90ConfigId(i);
        break;
      }
    }
    const Sm90ConfigId id = choose_sm90_big(from, int(m), int(n), int(k), num_sms, forced, forced_ok, ok, on);
    return std::string(id != from ? sm90_config_name(id) : "");
  }, "The big-tile rule for one dense fp16 / bf16 problem (base: the config the heuristic and the fit rules left, by "
     "name): Sm90_128x320x64_Coop_S3 or Sm90_192x192x64_Coop_S4 where one replaces it, else ''. forced: "
     "CUTORCH_GEMM_SM90_CONFIG (coop320, coop192x192: wherever forced_ok); ok: the launch can take them (both operands "
     "K-major on 128-byte-multiple rows, no C, plain or bias + an activation, a 16-bit D the TMA stores); on: CUTORCH_GEMM_SM90_BIG "
     "is not off.",
        pybind11::arg("base"), pybind11::arg("m"), pybind11::arg("n"), pybind11::arg("k"), pybind11::arg("num_sms"),
        pybind11::arg("forced") = "", pybind11::arg("forced_ok") = true, pybind11::arg("ok") = true,
        pybind11::arg("on") = true);
  m.attr("SM90_BIG_MIN_K") = kBigMinK;  // (explain's note names the bounds)
  m.attr("SM90_BIG_MAX_K") = kBigMaxK;
  m.def("choose_sm90_fit", [](int64_t m_, int64_t n, int64_t k, int num_sms, const std::string& forced,
                              bool rows_128b, const std::string& base, bool fit_ok, bool defer_ok, bool coop_sk,
                              bool mn_b) {
    Sm90ConfigId from = Sm90ConfigId::kPingpong64x256;
    for (Sm90ConfigId id : {Sm90ConfigId::kCoop128x256, Sm90ConfigId::kPingpong64x256, Sm90ConfigId::kPingpong64x128,
                            Sm90ConfigId::kPingpong64x64}) {
      if (base == sm90_config_name(id)) from = id;
    }
    const Sm90ConfigId id = choose_sm90_fit(from, int(m_), int(n), int(k), num_sms, forced, rows_128b, fit_ok, defer_ok,
                                            coop_sk, mn_b);
    return std::string(id != from ? sm90_config_name(id) : "");
  }, "The fit-width rule's config for one dense fp16 / bf16 problem whose launch allows it (both operands K-major, "
     "B MN-major or both MN-major; a plain epilogue), or '' (the heuristic's config stays); forced: "
     "CUTORCH_GEMM_SM90_CONFIG; rows_128b: both operands' TMA rows are 128-byte multiples (else choose_sm90_pairs: 2x1 clusters of 128x256, 128x240 or "
     "128x192 tiles for a ping-pong base of more than one round, or in place of 128x256); base: the heuristic's "
     "16-bit config (its name; default the 64x256 ping-pong one); fit_ok: the launch can take the fit tiles (else "
     "only the pair rule's 128x256 pairs); defer_ok: it also defers its store in every tile (the 240-wide tiles); "
     "coop_sk: the 128x256 tiles would take stream-K (sm90_coop_streamk: the 240-wide tiles are not taken then); "
     "mn_b: B is MN-major (widths from kFitMnMin up).",
        pybind11::arg("m"), pybind11::arg("n"), pybind11::arg("k"), pybind11::arg("num_sms"),
        pybind11::arg("forced") = "", pybind11::arg("rows_128b") = true, pybind11::arg("base") = "",
        pybind11::arg("fit_ok") = true, pybind11::arg("defer_ok") = false, pybind11::arg("coop_sk") = false,
        pybind11::arg("mn_b") = false);
  m.def("sm90_mn_b_stages", [](int block_n, int stages) { return sm90_mn_b_stages(block_n, stages); },
        "The pipeline stages of a fit width with an MN-major B (Sm90MnB: whole 64-column B boxes), from the K-major "
        "config's stages.", pybind11::arg("block_n"), pybind11::arg("stages"));
  m.def("sm90_bare_config", [](const std::string& name) { return Sm90BareConfigs::has_name(name); },
        "Whether the config has a bare compact kernel (Sm90BareConfigs; the kernel's kBare, for 16-bit K-major "
        "operands).", pybind11::arg("name"));
  m.def("sm90_ksplit_ok", [](int64_t items, int ctas, int cluster, bool grouped_k, int block_n, int k_blocks,
                             int producers, int stages, const std::string& forced) {
    return sm90_ksplit_ok(items, ctas, cluster, grouped_k, block_n, k_blocks, producers, stages, forced);
  }, "Whether a compact ping-pong sm90 launch runs the K-split pair (both consumer warpgroups on the CTA's one tile, "
     "k-blocks alternating; forced: CUTORCH_GEMM_SM90_KSPLIT).", pybind11::arg("items"), pybind11::arg("ctas"),
        pybind11::arg("cluster"), pybind11::arg("grouped_k"), pybind11::arg("block_n"), pybind11::arg("k_blocks"),
        pybind11::arg("producers"), pybind11::arg("stages"), pybind11::arg("forced") = "");
  m.def("sm90_pdl_wanted", [](int64_t items, int64_t units, int64_t item_k, int64_t ctas, int64_t sms,
                              const std::string& forced) {
    return sm90_pdl_wanted(items, units, item_k, ctas, sms, forced);
  }, "Whether a Hopper tile launch asks for programmatic dependent launch (device/sm90_pdl_rule.h): items of K depth "
     "item_k over units CTAs (or clusters), ctas CTAs in all, sms SMs; forced: CUTORCH_GEMM_SM90_PDL.",
        pybind11::arg("items"), pybind11::arg("units"), pybind11::arg("item_k"), pybind11::arg("ctas"),
        pybind11::arg("sms"), pybind11::arg("forced") = "");
  m.def("sm90_skinny_pdl_wanted", [](int64_t ctas, int64_t cta_k, int64_t sms, const std::string& forced) {
    return sm90_skinny_pdl_wanted(ctas, cta_k, sms, forced);
  }, "Whether a Hopper skinny launch asks for programmatic dependent launch (device/sm90_pdl_rule.h): ctas CTAs, "
     "each running through cta_k of K; forced: CUTORCH_GEMM_SM90_PDL.", pybind11::arg("ctas"), pybind11::arg("cta_k"),
        pybind11::arg("sms"), pybind11::arg("forced") = "");
  m.def("skinny_pdl_wanted", [](int64_t k, const std::string& forced) { return skinny_pdl_wanted(k, forced); },
        "Whether a launch of the mma.sync skinny kernel's sm_90 build asks for programmatic dependent launch "
        "(device/sm80_skinny.h); forced: CUTORCH_GEMM_SM90_PDL.", pybind11::arg("k"), pybind11::arg("forced") = "");
  m.def("sm90_mid_size_rule", [](int64_t m_, int64_t n, int64_t k, int num_sms) {
    switch (sm90_mid_size_rule(int(m_), int(n), int(k), num_sms)) {
      case Sm90MidRule::kCoopDeepK: return std::string("coop_deep_k");
      case Sm90MidRule::kSmall64: return std::string("small_64");
      case Sm90MidRule::kHalfRound64: return std::string("half_round_64");
      default: return std::string();
    }
  }, "Which mid-size rule of choose_sm90_config acts on one dense fp16 / bf16 problem (device/sm90_configs.h): "
     "'coop_deep_k', 'small_64', 'half_round_64' or '' (none).", pybind11::arg("m"), pybind11::arg("n"),
        pybind11::arg("k"), pybind11::arg("num_sms"));
  m.def("sm90_coop_streamk", [](int64_t m_, int64_t n, int64_t k, int num_sms, bool rows_128b,
                                const std::string& forced_cluster, const std::string& forced_sk, int block_k) {
    TORCH_CHECK_VALUE(block_k == 64 || block_k == 32, "sm90_coop_streamk: block_k must be 64 (fp16 / bf16) or 32 (tf32)");
    return sm90_coop_streamk(m_, n, k, num_sms, rows_128b, forced_cluster, forced_sk, block_k);
  }, "Whether one dense problem would take stream-K with the cooperative config (unclustered, or in 2x1 clusters "
     "where sm90_streamk_pairs allows; the stream-K rule; block_k: 64 for fp16 / bf16, 32 for tf32).",
        pybind11::arg("m"), pybind11::arg("n"),
        pybind11::arg("k"), pybind11::arg("num_sms"), pybind11::arg("rows_128b"), pybind11::arg("forced_cluster") = "",
        pybind11::arg("forced_sk") = "", pybind11::arg("block_k") = 64);
  m.def("sm90_streamk_pair_plan", [](int64_t m_, int64_t n, int64_t k, int block_k, int num_sms, int64_t grid_cap,
                                     const std::string& forced_sk) {
    TORCH_CHECK_VALUE(block_k == 64 || block_k == 32, "sm90_streamk_pair_plan: block_k must be 64 (fp16 / bf16) or 32 (tf32)");
    const Sm90StreamK p = sm90_streamk_pair_plan(m_, n, k, block_k, num_sms, grid_cap, forced_sk);
    return std::make_tuple(int64_t(p.tiles), p.ctas, p.sk_tiles);
  }, "Stream-K in 2x1 clusters for one dense cooperative launch that takes them: (pair tiles, clusters, pair tiles "
     "cut along K) as the binding plans it; none cut where sm90_streamk_pairs (CUTORCH_GEMM_SM90_STREAMK_PAIRS, "
     "read now) keeps it off.", pybind11::arg("m"), pybind11::arg("n"), pybind11::arg("k"), pybind11::arg("block_k"),
        pybind11::arg("num_sms"), pybind11::arg("grid_cap") = 0, pybind11::arg("forced_sk") = "");
  m.def("sm90_coop_pairs", [](int64_t m_, int64_t n, int64_t k, int num_sms, bool rows_128b,
                              const std::string& forced_cluster, int block_k) {
    TORCH_CHECK_VALUE(block_k == 64 || block_k == 32, "sm90_coop_pairs: block_k must be 64 (fp16 / bf16) or 32 (tf32)");
    return sm90_coop_pairs(m_, n, k, num_sms, rows_128b, forced_cluster, block_k);
  }, "Whether one dense problem's launch on the cooperative 128x256 config takes 2x1 clusters (choose_sm90_cluster; "
     "block_k: 64 for fp16 / bf16, 32 for tf32).", pybind11::arg("m"), pybind11::arg("n"), pybind11::arg("k"),
        pybind11::arg("num_sms"), pybind11::arg("rows_128b"), pybind11::arg("forced_cluster") = "",
        pybind11::arg("block_k") = 64);
  m.def("choose_sm90_split", [](int64_t m_, int64_t n, int64_t k, int num_sms, const std::string& config, int fill,
                                int block_k) {
    TORCH_CHECK_VALUE(config == "coop" || config == "pingpong" || config == "pingpong128" || config == "pingpong64",
                      "choose_sm90_split: config must be coop, pingpong, pingpong128 or pingpong64");
    const Sm90ConfigId id = config == "coop"          ? Sm90ConfigId::kCoop128x256
                            : config == "pingpong"    ? Sm90ConfigId::kPingpong64x256
                            : config == "pingpong128" ? Sm90ConfigId::kPingpong64x128
                                                      : Sm90ConfigId::kPingpong64x64;
    TORCH_CHECK_VALUE(block_k == 64 || block_k == 128, "choose_sm90_split: block_k must be 64 (16-bit) or 128 (8-bit)");
    const Sm90Split s = choose_sm90_split(id, int(m_), int(n), int(k), num_sms, fill, block_k);
    return std::make_pair(s.splits, s.k_chunk);
  }, "The sm90 split-K rule for one dense problem: (splits, k_chunk); (1, 0) means none. block_k: the "
     "K slice (64: fp16 / bf16; 128: scaled_mm's 8-bit operands).", pybind11::arg("m"),
        pybind11::arg("n"), pybind11::arg("k"), pybind11::arg("num_sms"), pybind11::arg("config"),
        pybind11::arg("fill") = 4, pybind11::arg("block_k") = 64);
  m.def("choose_sm90_streamk", [](int64_t tiles, int ctas, int k_blocks, const std::string& forced) {
    return choose_sm90_streamk(tiles, ctas, k_blocks, forced);
  }, "The sm90 stream-K rule: how many of the last tiles of a dense cooperative launch are cut along K "
     "(0: none; forced: CUTORCH_GEMM_SM90_STREAMK).", pybind11::arg("tiles"), pybind11::arg("ctas"),
        pybind11::arg("k_blocks"), pybind11::arg("forced") = "");
  m.def("sm90_streamk_plan", [](int64_t m_, int64_t n, int64_t k, int block_k, int num_sms, int64_t grid_cap,
                                const std::string& forced) {
    const Sm90StreamK p = sm90_streamk_plan(m_, n, k, block_k, num_sms, grid_cap, forced);
    return std::make_tuple(p.tiles, p.ctas, p.sk_tiles);
  }, "The binding's stream-K plan of a dense cooperative launch: (tiles, ctas, stream-K tiles).",
        pybind11::arg("m"), pybind11::arg("n"), pybind11::arg("k"), pybind11::arg("block_k"),
        pybind11::arg("num_sms"), pybind11::arg("grid_cap") = 0, pybind11::arg("forced") = "");
  m.def("choose_sm90_half_tiles", [](int64_t k, int64_t n, int elem_bytes, const std::string& forced) {
    return choose_sm90_half_tiles(k, n, elem_bytes, forced);
  }, "Whether a grouped-M cooperative sm90 launch skips the wgmma of a warpgroup whose rows lie past a "
     "group's end (k, n: one group's B; forced: CUTORCH_GEMM_SM90_HALF_TILES).", pybind11::arg("k"),
        pybind11::arg("n"), pybind11::arg("elem_bytes"), pybind11::arg("forced") = "");
  m.def("sm90_b_streams", [](int64_t tiles_m, const std::string& mode, int64_t batch, bool b_3d, int64_t k_chunk) {
    const GroupMode gm = mode == "grouped_m" ? GroupMode::kGroupedM
                         : mode == "grouped_n" ? GroupMode::kGroupedN
                         : mode == "grouped_k" ? GroupMode::kGroupedK
                                               : GroupMode::kBatched;
    return sm90_b_streams(int(tiles_m), gm, int(batch), b_3d, int(k_chunk));
  }, "Whether an sm90 launch streams B from DRAM (its TMA loads then carry the L2 evict-first policy); "
     "mode: batched | grouped_m | grouped_n | grouped_k.", pybind11::arg("tiles_m"), pybind11::arg("mode"),
        pybind11::arg("batch") = 1, pybind11::arg("b_3d") = false, pybind11::arg("k_chunk") = 0);
  m.def("choose_sm90_cluster", [](bool cooperative, bool fixed_grid, bool swiglu, int64_t tiles_m, bool rows_128b,
                                  const std::string& forced, bool dense, int64_t k, int64_t tiles, int num_sms,
                                  int block_n, int block_m, int block_k) {
    TORCH_CHECK_VALUE(block_k == 64 || block_k == 32 || block_k == 128,
                      "choose_sm90_cluster: block_k must be 64 (fp16 / bf16), 32 (tf32) or 128 (8-bit)");
    return choose_sm90_cluster(cooperative, fixed_grid, swiglu, int(tiles_m), rows_128b, forced, dense, int(k),
                               (long long)tiles, num_sms, block_n, block_m, block_k);
  }, "CTAs per cluster (1 or 2) of one sm90 launch (rows_128b: both operands' TMA rows are 128-byte "
     "multiples; forced: CUTORCH_GEMM_SM90_CLUSTER; dense, k, tiles, num_sms: one dense 16-bit, tf32 or 8-bit problem's K, "
     "cooperative tiles and the SMs, for the K rules; block_n, block_m, block_k: the tiles' width, rows and K slice).",
        pybind11::arg("cooperative"), pybind11::arg("fixed_grid"), pybind11::arg("swiglu"), pybind11::arg("tiles_m"),
        pybind11::arg("rows_128b"), pybind11::arg("forced") = "", pybind11::arg("dense") = false,
        pybind11::arg("k") = 0, pybind11::arg("tiles") = 0, pybind11::arg("num_sms") = 0,
        pybind11::arg("block_n") = 256, pybind11::arg("block_m") = 128, pybind11::arg("block_k") = 64);
  m.def("sm90_rows_128b", &sm90_rows_128b,
        "Whether the stride between an operand's TMA rows (K-major: its M/N stride; MN-major: its K stride) "
        "is a multiple of 128 bytes.", pybind11::arg("k_stride"), pybind11::arg("mn_stride"),
        pybind11::arg("elem_bytes"));
  m.def("raster_tile", [](int linear, int tiles_m, int tiles_n, int group) {
    TORCH_CHECK_VALUE(tiles_m > 0 && tiles_n > 0 && group > 0 && linear >= 0 && linear < tiles_m * tiles_n,
                      "raster_tile: need 0 <= linear < tiles_m * tiles_n and group > 0");
    const TileCoord t = raster_tile(linear, tiles_m, tiles_n, group);
    return std::make_pair(t.m, t.n);
  }, "Threadblock rasterization swizzle: linear CTA id -> (tile_m, tile_n).");
  m.def("raster_tile_fast", [](int linear, int tiles_m, int tiles_n, int group) {
    TORCH_CHECK_VALUE(tiles_m > 0 && tiles_n > 0 && group > 0 && linear >= 0 && linear < tiles_m * tiles_n,
                      "raster_tile_fast: need 0 <= linear < tiles_m * tiles_n and group > 0");
    const TileCoord t = raster_tile_fast(linear, make_raster_divisors(tiles_m, tiles_n, group));
    return std::make_pair(t.m, t.n);
  }, "raster_tile through make_raster_divisors' constants (each quotient a multiply and a shift).");
  m.def("fast_divide", [](int64_t n, int64_t d) {
    TORCH_CHECK_VALUE(n >= 0 && n < (int64_t(1) << 31) && d >= 1 && d <= (int64_t(1) << 31),
                      "fast_divide: need 0 <= n < 2^31 and 1 <= d <= 2^31, got n = ", n, ", d = ", d);
    return int64_t(make_fast_divisor(uint32_t(d)).divide(uint32_t(n)));
  }, "floor(n / d) through make_fast_divisor's multiply and shift (core/fast_divide.h).");
  m.def("raster_group_for", &raster_group_for, "Band height the kernels use for a tile grid.");
  m.def("splitk_range", [](int k, int block_k, int splits, int idx) {
    TORCH_CHECK_VALUE(k >= 0 && block_k > 0 && splits > 0 && idx >= 0 && idx < splits,
                      "splitk_range: need k >= 0, block_k > 0, 0 <= split_idx < splits");
    const KRange r = splitk_range(k, block_k, splits, idx);
    return std::make_pair(r.begin, r.end);
  }, "Split-K slice of [0, k): (k_begin, k_end).");
  m.def("classify_layout", [](int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
    return std::string(layout_name(classify_layout(rows, cols, sr, sc)));
  }, "'row', 'col' or 'strided' for a 2-D operand.");
  m.def("epilogue_ref", [](const at::Tensor& acc, double alpha, double beta, std::optional<at::Tensor> c,
                           std::optional<at::Tensor> bias, const std::string& act) {
    return binding::epilogue_cpu(acc, alpha, beta, c, bias, binding::check_activation("epilogue_ref", act));
  }, "The fusion functor applied on the CPU: act(alpha * acc + beta * c + bias).",
        pybind11::arg("acc"), pybind11::arg("alpha"), pybind11::arg("beta"), pybind11::arg("c"),
        pybind11::arg("bias"), pybind11::arg("activation"));
  m.def("choose_simt_config", [](int major, int minor, const std::string& dtype, int64_t m_, int64_t n,
                                 int64_t k, int64_t batch, int num_sms, bool grouped) {
    const SimtPlan p = choose_simt_plan(major, minor, parse_dtype(dtype), int(m_), int(n), int(k),
                                        int(batch), num_sms, grouped);
    pybind11::dict d;
    d["config"] = std::string(simt_config_name(p.config));
    d["splits"] = p.splits;
    d["raster_group"] = p.raster_group;
    d["tiles_m"] = p.tiles_m;
    d["tiles_n"] = p.tiles_n;
    d["reason"] = p.reason;
    return d;
  }, "The SIMT heuristic's plan for a problem.", pybind11::arg("sm_major"), pybind11::arg("sm_minor"),
        pybind11::arg("dtype"), pybind11::arg("m"), pybind11::arg("n"), pybind11::arg("k"),
        pybind11::arg("batch"), pybind11::arg("num_sms"), pybind11::arg("grouped") = false);
}
