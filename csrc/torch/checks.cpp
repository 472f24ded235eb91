#include "checks.h"


namespace cutorch_gemm::binding {

DType to_dtype(at::ScalarType t) {
  switch (t) {
    case at::kHalf:     return DType::kFloat16;
    case at::kBFloat16: return DType::kBFloat16;
    case at::kFloat:    return DType::kFloat32;
    case at::kDouble:   return DType::kFloat64;
    case at::kChar:     return DType::kInt8;
    default:
      TORCH_CHECK_TYPE(false, "cutorch_gemm: unsupported dtype ", t,
                       "; expected float16, bfloat16, float32 or float64");
  }
  return DType::kFloat32;
}

at::ScalarType acc_dtype(at::ScalarType t) { return t == at::kDouble ? at::kDouble : at::kFloat; }

std::string shape_str(const at::Tensor& t) {
  std::string s = "(";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + (t.dim() == 1 ? ",)" : ")");
}

namespace {

void check_input(const char* op, const char* name, const at::Tensor& t, int64_t rank,
                 const char* expected_shape) {
  TORCH_CHECK_VALUE(t.dim() == rank, op, ": ", name, " must be a ", rank, "-D tensor ",
                    expected_shape, ", got shape ", shape_str(t));
  TORCH_CHECK_TYPE(t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16 ||
                       t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble,
                   op, ": ", name, " has dtype ", t.scalar_type(),
                   "; expected float16, bfloat16, float32 or float64",
                   t.scalar_type() == at::kChar             ? " (int8 x int8 -> int32 is gemm.mm only)"
                   : std::string(op) == "gemm.mm" ? " (or int8 x int8 -> int32)"
                                                            : "");
  TORCH_CHECK_VALUE(!t.is_complex(), op, ": ", name, " must be real");
}

void check_same(const char* op, const char* name, const at::Tensor& t, const at::Tensor& a) {
  TORCH_CHECK_TYPE(t.scalar_type() == a.scalar_type(), op, ": ", name, " has dtype ",
                   t.scalar_type(), " but a has dtype ", a.scalar_type(),
                   "; expected the same dtype");
  TORCH_CHECK_VALUE(t.device() == a.device(), op, ": ", name, " is on ", t.device(),
                    " but a is on ", a.device(), "; expected the same device");
}

// bias must be (n,) (rows < 0) or (rows, n).
void check_bias(const char* op, const at::Tensor& bias, const at::Tensor& a, int64_t rows, int64_t n) {
  check_same(op, "bias", bias, a);
  const bool ok = rows < 0 ? (bias.dim() == 1 && bias.size(0) == n)
                           : (bias.dim() == 2 && bias.size(0) == rows && bias.size(1) == n);
  const std::string want = rows < 0 ? "(" + std::to_string(n) + ",)"
                                    : "(" + std::to_string(rows) + ", " + std::to_string(n) + ")";
  TORCH_CHECK_VALUE(ok, op, ": bias must have shape ", want, ", got ", shape_str(bias));
}

}  // namespace

at::ScalarType check_out_dtype(const char* op, at::ScalarType in, std::optional<at::ScalarType> out) {
  if (!out.has_value() || *out == in) return in;
  const bool widen = (in == at::kHalf || in == at::kBFloat16) && *out == at::kFloat;
  TORCH_CHECK_TYPE(widen, op, ": unsupported out_dtype ", *out, " for inputs of dtype ", in,
                   "; expected None, ", in,
                   (in == at::kHalf || in == at::kBFloat16) ? " or float32" : "");
  return *out;
}

Activation check_activation(const char* op, const std::string& name) {
  Activation act;
  TORCH_CHECK_VALUE(parse_activation(name.c_str(), &act), op, ": unknown activation '", name,
                    "'; expected one of none, relu, gelu, gelu_tanh, silu");
  return act;
}

DenseSpec check_gemm(const char* op, const at::Tensor& a, const at::Tensor& b,
                     const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& c,
                     const std::string& activation, std::optional<at::ScalarType> out_dtype) {
  check_input(op, "a", a, 2, "(M, K)");
  check_input(op, "b", b, 2, "(K, N)");
  check_same(op, "b", b, a);
  TORCH_CHECK_VALUE(b.size(0) == a.size(1), op, ": b must have shape (K=", a.size(1),
                    ", N) to match a of shape ", shape_str(a), ", got ", shape_str(b));
  DenseSpec s{1, a.size(0), b.size(1), a.size(1), check_out_dtype(op, a.scalar_type(), out_dtype),
              check_activation(op, activation)};
  if (bias.has_value()) check_bias(op, *bias, a, -1, s.n);
  if (c.has_value()) {
    check_same(op, "c", *c, a);
    TORCH_CHECK_VALUE(c->dim() == 2 && c->size(0) == s.m && c->size(1) == s.n, op,
                      ": c must have shape (M=", s.m, ", N=", s.n, "), got ", shape_str(*c));
  }
  return s;
}

DenseSpec check_mm(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype) {
  const char* op = "gemm.mm";
  if (a.scalar_type() != at::kChar) return check_gemm(op, a, b, std::nullopt, std::nullopt, "none", out_dtype);
  TORCH_CHECK_VALUE(a.dim() == 2, op, ": a must be a 2-D tensor (M, K), got shape ", shape_str(a));
  TORCH_CHECK_VALUE(b.dim() == 2, op, ": b must be a 2-D tensor (K, N), got shape ", shape_str(b));
  TORCH_CHECK_TYPE(b.scalar_type() == at::kChar, op, ": b has dtype ", b.scalar_type(),
                   " but a has dtype int8; expected int8 (int8 x int8 -> int32)");
  TORCH_CHECK_VALUE(b.device() == a.device(), op, ": b is on ", b.device(), " but a is on ", a.device(),
                    "; expected the same device");
  TORCH_CHECK_VALUE(b.size(0) == a.size(1), op, ": b must have shape (K=", a.size(1), ", N) to match a of shape ",
                    shape_str(a), ", got ", shape_str(b));
  TORCH_CHECK_TYPE(!out_dtype.has_value() || *out_dtype == at::kInt, op, ": unsupported out_dtype ",
                   out_dtype.value_or(at::kInt), " for int8 inputs; expected None or int32 (int8 products are "
                   "accumulated and returned in int32, like torch._int_mm)");
  return DenseSpec{1, a.size(0), b.size(1), a.size(1), at::kInt, Activation::kNone};
}

DenseSpec check_bmm(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype) {
  const char* op = "gemm.bmm";
  check_input(op, "a", a, 3, "(B, M, K)");
  check_input(op, "b", b, 3, "(B, K, N)");
  check_same(op, "b", b, a);
  TORCH_CHECK_VALUE(b.size(0) == a.size(0) && b.size(1) == a.size(2), op,
                    ": b must have shape (B=", a.size(0), ", K=", a.size(2),
                    ", N) to match a of shape ", shape_str(a), ", got ", shape_str(b));
  return DenseSpec{a.size(0), a.size(1), b.size(2), a.size(2),
                   check_out_dtype(op, a.scalar_type(), out_dtype), Activation::kNone};
}

GroupedSpec check_grouped(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& offs,
                          const std::optional<at::Tensor>& bias, const std::string& activation,
                          std::optional<at::ScalarType> out_dtype) {
  const char* op = "gemm.grouped_mm";
  TORCH_CHECK_VALUE((a.dim() == 2 || a.dim() == 3) && (b.dim() == 2 || b.dim() == 3), op,
                    ": a and b must be 2-D or 3-D (2D x 3D, 3D x 2D, 2D x 2D or 3D x 3D), got a ",
                    shape_str(a), " and b ", shape_str(b));
  check_input(op, "a", a, a.dim(), a.dim() == 2 ? "(M, K)" : "(G, M, K)");
  check_input(op, "b", b, b.dim(), b.dim() == 2 ? "(K, N)" : "(G, K, N)");
  check_same(op, "b", b, a);
  GroupedSpec s;
  s.out_dtype = check_out_dtype(op, a.scalar_type(), out_dtype);
  s.swiglu = activation == "swiglu";
  Activation act = Activation::kNone;
  TORCH_CHECK_VALUE(s.swiglu || parse_activation(activation.c_str(), &act), op, ": unknown activation '", activation,
                    "'; expected one of none, relu, gelu, gelu_tanh, silu, swiglu");
  s.act = act;
  const int64_t ka = a.size(-1), kb = b.size(-2);
  TORCH_CHECK_VALUE(ka == kb, op, ": b's reduction dimension (size(-2)) must equal a's (size(-1)=",
                    ka, "), got b of shape ", shape_str(b), " for a of shape ", shape_str(a));

  if (a.dim() == 3 && b.dim() == 3) {
    TORCH_CHECK_VALUE(!offs.has_value(), op, ": offs must be None for 3D x 3D (batched) inputs");
    TORCH_CHECK_VALUE(a.size(0) == b.size(0), op, ": b must have shape (G=", a.size(0),
                      ", K, N) to match a of shape ", shape_str(a), ", got ", shape_str(b));
    s.mode = GroupMode::kBatched;
    s.groups = a.size(0);
    s.m = a.size(1); s.n = b.size(2); s.k = ka;
    s.out_shape = {s.groups, s.m, s.n};
  } else {
    TORCH_CHECK_VALUE(offs.has_value(), op, ": offs is required for ", a.dim(), "D x ", b.dim(),
                      "D inputs (int32 cumulative group ends)");
    const at::Tensor& o = *offs;
    TORCH_CHECK_TYPE(o.scalar_type() == at::kInt, op, ": offs must have dtype int32, got ",
                     o.scalar_type());
    TORCH_CHECK_VALUE(o.dim() == 1, op, ": offs must be 1-D (G,), got shape ", shape_str(o));
    TORCH_CHECK_VALUE(o.device() == a.device(), op, ": offs is on ", o.device(), " but a is on ",
                      a.device(), "; expected the same device");
    if (a.dim() == 2 && b.dim() == 3) {
      s.mode = GroupMode::kGroupedM;
      s.groups = b.size(0);
      s.m = a.size(0); s.n = b.size(2); s.k = ka;
      s.out_shape = {s.m, s.n};
    } else if (a.dim() == 3 && b.dim() == 2) {
      s.mode = GroupMode::kGroupedN;
      s.groups = a.size(0);
      s.m = a.size(1); s.n = b.size(1); s.k = ka;
      s.out_shape = {s.m, s.n};
    } else {
      s.mode = GroupMode::kGroupedK;
      s.groups = o.size(0);
      s.m = a.size(0); s.n = b.size(1); s.k = ka;
      s.out_shape = {s.groups, s.m, s.n};
    }
    TORCH_CHECK_VALUE(o.size(0) == s.groups, op, ": offs must have shape (G=", s.groups,
                      ",) (one cumulative end per group), got ", shape_str(o));
  }
  if (s.swiglu) {
    TORCH_CHECK_VALUE(s.mode == GroupMode::kGroupedM || s.mode == GroupMode::kBatched, op,
                      ": activation 'swiglu' needs 2D x 3D (groups along M) or 3D x 3D inputs, whose N is "
                      "[gate | up]; got a ", shape_str(a), " and b ", shape_str(b));
    TORCH_CHECK_VALUE(s.n % 2 == 0, op, ": activation 'swiglu' splits N into [gate | up] halves: N must be even, "
                      "got b of shape ", shape_str(b));
    s.out_shape.back() = s.n / 2;
  }
  if (bias.has_value()) {
    if (s.mode == GroupMode::kGroupedN) {
      check_bias(op, *bias, a, -1, s.n);
    } else {
      check_bias(op, *bias, a, s.groups, s.n);
    }
  }
  return s;
}

namespace {

bool is_fp8(at::ScalarType t) { return t == at::kFloat8_e4m3fn || t == at::kFloat8_e5m2; }

void check_fp8_operand(const char* op, const char* name, const at::Tensor& t, const char* expected_shape) {
  TORCH_CHECK_VALUE(t.dim() == 2, op, ": ", name, " must be a 2-D tensor ", expected_shape, ", got shape ",
                    shape_str(t));
  TORCH_CHECK_TYPE(is_fp8(t.scalar_type()), op, ": ", name, " has dtype ", t.scalar_type(),
                   "; expected torch.float8_e4m3fn or torch.float8_e5m2 (16-bit and wider inputs: gemm.mm)");
}

// scale must be float32 with one element, or of shape `per` (per row of a / per column of b).
bool check_scale(const char* op, const char* name, const at::Tensor& scale, const at::Tensor& a,
                 std::vector<int64_t> per, const char* per_what) {
  TORCH_CHECK_TYPE(scale.scalar_type() == at::kFloat, op, ": ", name, " has dtype ", scale.scalar_type(),
                   "; expected float32");
  TORCH_CHECK_VALUE(scale.device() == a.device(), op, ": ", name, " is on ", scale.device(), " but a is on ",
                    a.device(), "; expected the same device");
  if (scale.numel() == 1) return false;
  TORCH_CHECK_VALUE(scale.sizes() == at::IntArrayRef(per), op, ": ", name,
                    " must have one element (per-tensor scaling) or shape (", per[0], ", ", per[1], ") (one per ",
                    per_what, "), got shape ", shape_str(scale));
  return true;
}

}  // namespace

ScaledSpec check_scaled_mm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                           const at::Tensor& scale_b, const std::optional<at::Tensor>& bias,
                           at::ScalarType out_dtype) {
  const char* op = "gemm.scaled_mm";
  check_fp8_operand(op, "a", a, "(M, K)");
  check_fp8_operand(op, "b", b, "(K, N)");
  TORCH_CHECK_VALUE(b.device() == a.device(), op, ": b is on ", b.device(), " but a is on ", a.device(),
                    "; expected the same device");
  TORCH_CHECK_VALUE(b.size(0) == a.size(1), op, ": b must have shape (K=", a.size(1), ", N) to match a of shape ",
                    shape_str(a), ", got ", shape_str(b));
  ScaledSpec s;
  s.m = a.size(0); s.n = b.size(1); s.k = a.size(1);
  s.ka = a.scalar_type() == at::kFloat8_e4m3fn ? Fp8Kind::kE4M3 : Fp8Kind::kE5M2;
  s.kb = b.scalar_type() == at::kFloat8_e4m3fn ? Fp8Kind::kE4M3 : Fp8Kind::kE5M2;
  s.scale_a_rows = check_scale(op, "scale_a", scale_a, a, {s.m, 1}, "row of a");
  s.scale_b_cols = check_scale(op, "scale_b", scale_b, a, {1, s.n}, "column of b");
  TORCH_CHECK_TYPE(out_dtype == at::kBFloat16 || out_dtype == at::kHalf || out_dtype == at::kFloat, op,
                   ": unsupported out_dtype ", out_dtype, "; expected bfloat16, float16 or float32");
  s.out_dtype = out_dtype;
  if (bias.has_value()) {
    const at::ScalarType bt = bias->scalar_type();
    TORCH_CHECK_TYPE(bt == at::kBFloat16 || bt == at::kHalf || bt == at::kFloat, op, ": bias has dtype ", bt,
                     "; expected bfloat16, float16 or float32");
    TORCH_CHECK_VALUE(bias->device() == a.device(), op, ": bias is on ", bias->device(), " but a is on ",
                      a.device(), "; expected the same device");
    TORCH_CHECK_VALUE(bias->dim() == 1 && bias->size(0) == s.n, op, ": bias must have shape (", s.n, ",), got ",
                      shape_str(*bias));
  }
  return s;
}

void check_grouped_gemm_lists(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b,
                              const std::optional<std::vector<at::Tensor>>& bias,
                              const std::string& activation, std::optional<at::ScalarType> out_dtype) {
  const char* op = "gemm.grouped_gemm";
  TORCH_CHECK_VALUE(a.size() == b.size(), op, ": a and b must be lists of the same length, got ",
                    a.size(), " and ", b.size());
  if (bias.has_value()) {
    TORCH_CHECK_VALUE(bias->size() == a.size(), op,
                      ": bias must be a list of the same length as a (", a.size(), "), got ",
                      bias->size());
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string name = std::string(op) + " (problem " + std::to_string(i) + ")";
    std::optional<at::Tensor> bi;
    if (bias.has_value()) bi = (*bias)[i];
    check_gemm(name.c_str(), a[i], b[i], bi, std::nullopt, activation, out_dtype);
    TORCH_CHECK_TYPE(a[i].scalar_type() == a[0].scalar_type(), name, ": a has dtype ",
                     a[i].scalar_type(), " but problem 0 has ", a[0].scalar_type(),
                     "; expected one dtype for all problems");
    TORCH_CHECK_VALUE(a[i].device() == a[0].device(), name, ": a is on ", a[i].device(),
                      " but problem 0 is on ", a[0].device(), "; expected one device for all problems");
  }
}

void check_offsets_values_cpu(const at::Tensor& offs, int64_t extent, const char* along) {
  const at::Tensor o = offs.contiguous();
  const int32_t* p = o.data_ptr<int32_t>();
  int64_t prev = 0;
  for (int64_t g = 0; g < o.numel(); ++g) {
    TORCH_CHECK_VALUE(p[g] >= prev, "gemm.grouped_mm: offs must be non-decreasing and >= 0, got offs[",
                      g, "]=", p[g], " after ", prev);
    TORCH_CHECK_VALUE(p[g] <= extent, "gemm.grouped_mm: offs[", g, "]=", p[g], " exceeds the ",
                      along, " extent ", extent);
    prev = p[g];
  }
}

SwigluSpec check_swiglu(const char* op, const at::Tensor& gate_up, const at::Tensor* grad) {
  TORCH_CHECK_VALUE(gate_up.dim() >= 1, op, ": gate_up must have at least one dimension (..., 2F), got a scalar");
  TORCH_CHECK_TYPE(gate_up.scalar_type() == at::kHalf || gate_up.scalar_type() == at::kBFloat16 ||
                       gate_up.scalar_type() == at::kFloat || gate_up.scalar_type() == at::kDouble,
                   op, ": gate_up has dtype ", gate_up.scalar_type(), "; expected float16, bfloat16, float32 or float64");
  const int64_t w = gate_up.size(-1);
  TORCH_CHECK_VALUE(w % 2 == 0, op, ": gate_up's last dimension must be even ([gate | up], 2F), got shape ",
                    shape_str(gate_up));
  SwigluSpec s{1, w / 2};
  for (int64_t i = 0; i + 1 < gate_up.dim(); ++i) s.rows *= gate_up.size(i);
  if (grad != nullptr) {
    std::vector<int64_t> want(gate_up.sizes().begin(), gate_up.sizes().end());
    want.back() = s.f;
    TORCH_CHECK_VALUE(grad->sizes().vec() == want, op, ": grad must have shape ", shape_str(gate_up.new_empty(want, at::kMeta)),
                      " (gate_up's with half its last extent), got ", shape_str(*grad));
    TORCH_CHECK_TYPE(grad->scalar_type() == gate_up.scalar_type(), op, ": grad has dtype ", grad->scalar_type(),
                     " but gate_up has dtype ", gate_up.scalar_type(), "; expected the same dtype");
    TORCH_CHECK_VALUE(grad->device() == gate_up.device(), op, ": grad is on ", grad->device(), " but gate_up is on ",
                      gate_up.device(), "; expected the same device");
  }
  return s;
}

MoeCombineSpec check_moe_combine(const char* op, const at::Tensor& y, const at::Tensor& inv,
                                 const std::optional<at::Tensor>& weights, int64_t k, const at::Tensor* grad) {
  TORCH_CHECK_VALUE(k >= 1, op, ": k (slots per token) must be >= 1, got ", k);
  TORCH_CHECK_VALUE(y.dim() == 2, op, ": y must be 2-D (T * k, H), got shape ", shape_str(y));
  TORCH_CHECK_TYPE(y.scalar_type() == at::kHalf || y.scalar_type() == at::kBFloat16 || y.scalar_type() == at::kFloat ||
                       y.scalar_type() == at::kDouble,
                   op, ": y has dtype ", y.scalar_type(), "; expected float16, bfloat16, float32 or float64");
  TORCH_CHECK_VALUE(y.size(0) % k == 0, op, ": y's rows (", y.size(0), ") must be a multiple of k=", k,
                    " (T * k pairs)");
  const MoeCombineSpec s{y.size(0) / k, k, y.size(1)};
  TORCH_CHECK_VALUE(inv.dim() == 1 && inv.size(0) == y.size(0), op, ": inv must be 1-D of length T * k = ", y.size(0),
                    ", got shape ", shape_str(inv));
  TORCH_CHECK_TYPE(inv.scalar_type() == at::kLong || inv.scalar_type() == at::kInt, op, ": inv has dtype ",
                   inv.scalar_type(), "; expected int64 or int32");
  TORCH_CHECK_VALUE(inv.device() == y.device(), op, ": inv is on ", inv.device(), " but y is on ", y.device(),
                    "; expected the same device");
  if (weights.has_value()) {
    TORCH_CHECK_VALUE(weights->dim() == 2 && weights->size(0) == s.tokens && weights->size(1) == k, op,
                      ": weights must have shape (T=", s.tokens, ", k=", k, "), got ", shape_str(*weights));
    TORCH_CHECK_TYPE(at::isFloatingType(weights->scalar_type()), op, ": weights has dtype ", weights->scalar_type(),
                     "; expected a floating dtype");
    TORCH_CHECK_VALUE(weights->device() == y.device(), op, ": weights is on ", weights->device(), " but y is on ",
                      y.device(), "; expected the same device");
  }
  if (grad != nullptr) {
    TORCH_CHECK_VALUE(grad->dim() == 2 && grad->size(0) == s.tokens && grad->size(1) == s.h, op,
                      ": grad must have shape (T=", s.tokens, ", H=", s.h, "), got ", shape_str(*grad));
    TORCH_CHECK_TYPE(grad->scalar_type() == y.scalar_type(), op, ": grad has dtype ", grad->scalar_type(),
                     " but y has dtype ", y.scalar_type(), "; expected the same dtype");
    TORCH_CHECK_VALUE(grad->device() == y.device(), op, ": grad is on ", grad->device(), " but y is on ", y.device(),
                      "; expected the same device");
  }
  return s;
}

}  // namespace cutorch_gemm::binding
