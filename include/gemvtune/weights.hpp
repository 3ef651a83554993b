// Weight formats of W: dense (the activation dtype) or quantized (int8, fp8 e4m3, group-wise
// int4), their packed host layout, a quantizer, a dequantizer (for the float64 reference) and
// converters from GPTQ, AWQ and plain checkpoint tensors. docs/weights.md draws the layouts.
//
// Text forms (logs, CLI, cache), parsed strictly: to_string(parse_weight_format(s)) == s.
//   dense     W in the activation dtype itself (bf16, fp16 or fp32)
//   int8      symmetric int8, one fp32 scale per output channel (row)
//   fp8       OCP FP8 E4M3FN (torch.float8_e4m3fn), one fp32 scale per output channel
//   fp8t      FP8 E4M3FN, one fp32 scale for the whole tensor
//   int4g32   asymmetric 4-bit, a scale and a zero per group of 32 along K (also g64, g128),
//   int4g64   scales and zeros in the activation dtype
//   int4g128
//
// Packed layout, N rows (output channels), K columns, row stride ld >= K in elements:
//   dense   q: N x ld elements of the activation dtype; no scales
//   int8    q: int8 [N][ld];  scales fp32 [N];            w[n][k] = q[n][k] * s[n]
//   fp8     q: e4m3 [N][ld];  scales fp32 [N];            w[n][k] = e4m3(q[n][k]) * s[n]
//   fp8t    q: e4m3 [N][ld];  scales fp32 [1];            w[n][k] = e4m3(q[n][k]) * s[0]
//   int4gG  q: bytes [N][ld/2] (ld even); element k in byte k/2, low nibble for even k, high
//           for odd k, unsigned 0..15; scales and zeros: activation dtype [N][K/G] row-major;
//           w[n][k] = (q[n][k] - z[n][k/G]) * s[n][k/G]
// Every row starts at a multiple of its row bytes, so a kernel reads 16 consecutive bytes of
// one row along K with one load (16 int8/fp8 weights or 32 int4 weights).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gemvtune/dtype.hpp"

namespace gemvtune {

// ---------------------------------------------------------------------------------------------
// The format

enum class WeightFormat { dense, int8, fp8, fp8_tensor, int4_g32, int4_g64, int4_g128 };

inline constexpr WeightFormat kAllWeightFormats[] = {
    WeightFormat::dense,    WeightFormat::int8,     WeightFormat::fp8,      WeightFormat::fp8_tensor,
    WeightFormat::int4_g32, WeightFormat::int4_g64, WeightFormat::int4_g128};

// "dense", "int8", "fp8", "fp8t", "int4g32", "int4g64", "int4g128".
std::string_view to_string(WeightFormat f);
// Exactly the names above; anything else throws InvalidArgument naming the text and listing
// the accepted names.
WeightFormat parse_weight_format(std::string_view text);
// For a command line's --weights: the names above, and also a dtype name (bf16, fp16, fp32 and
// their spellings that parse_dtype accepts) meaning dense, which must then be the activation
// dtype `activation` (dense weights are in the activation dtype); throws InvalidArgument
// otherwise.
WeightFormat parse_weights_option(std::string_view text, DType activation);

bool is_int4(WeightFormat f);
bool is_fp8(WeightFormat f);        // fp8 and fp8t
bool is_quantized(WeightFormat f);  // all but dense
// Elements of K that share one scale and zero: 32, 64 or 128 for int4; 0 for the others (their
// scale covers a whole row, or the whole tensor for fp8t).
int group_size(WeightFormat f);
// The int4 format of a group size; throws InvalidArgument unless it is 32, 64 or 128.
WeightFormat int4_format(int group);
// Bits of one stored weight: 16 or 32 for dense (the activation dtype), 8 for int8/fp8, 4 for
// int4. Scales and zeros are not included; see weight_bytes.
int weight_bits(WeightFormat f, DType activation);
// Bytes of one scale or zero value: fp32 (4) for int8/fp8/fp8t, the activation dtype for int4,
// 0 for dense.
std::size_t scale_bytes(WeightFormat f, DType activation);

// Bytes a GEMV reads for an N x K matrix in format f: packed weights of K columns (no ld
// padding), scales and zeros. Divide by time for effective GB/s. int4g128 with bf16 activations
// moves 0.53125 bytes per weight: 3.76x fewer than bf16.
struct WeightBytes {
  std::int64_t weights = 0, scales = 0, zeros = 0;
  std::int64_t total() const { return weights + scales + zeros; }
};
// Throws InvalidArgument as check_weight_layout does (with ld = k).
WeightBytes weight_bytes(WeightFormat f, DType activation, std::int64_t n, std::int64_t k);
// weight_bytes(...).total() / (n * k).
double bytes_per_weight(WeightFormat f, DType activation, std::int64_t n, std::int64_t k);

// Throws InvalidArgument with a message naming the values when a matrix of this format cannot
// be stored: N or K outside 1..kMaxDim, ld < K or ld > kMaxDim, K not a multiple of the int4
// group ("K = 4000 is not a multiple of the group size 128 of int4g128"), odd ld for int4, or
// a byte count that does not fit in int64/size_t.
void check_weight_layout(WeightFormat f, DType activation, std::int64_t n, std::int64_t k,
                         std::int64_t ld);

// ---------------------------------------------------------------------------------------------
// FP8 E4M3FN (OCP; torch.float8_e4m3fn): 1 sign, 4 exponent (bias 7), 3 mantissa bits; no
// infinities; 0x7f and 0xff are NaN; largest finite 448 (0x7e); smallest subnormal 2^-9.

double e4m3_to_double(std::uint8_t code);
float e4m3_to_float(std::uint8_t code);
// Round to nearest, ties to even; magnitudes above 448 (and infinities) saturate to +-448;
// NaN gives 0x7f (0xff with the sign bit set); -0.0 gives 0x80. (torch's non-saturating cast
// gives NaN above 448; this encoder is for quantizing, where saturating is what one wants.)
std::uint8_t double_to_e4m3(double x);

// ---------------------------------------------------------------------------------------------
// Packed weights on the host: the common currency of the quantizer, the converters, the
// dequantizer and whatever uploads W, its scales and zeros to a GPU.

struct PackedWeights {
  WeightFormat format = WeightFormat::dense;
  DType activation = DType::bf16;  // x and y; also dense W and int4 scales and zeros
  std::int64_t n = 0, k = 0;
  std::int64_t ld = 0;             // row stride in elements (bytes for int8/fp8, nibbles for int4)

  std::vector<std::uint8_t> q;       // n * row_bytes(): the weights; padding columns are zero
  std::vector<std::uint8_t> scales;  // raw bytes as the GPU reads them; empty for dense
  std::vector<std::uint8_t> zeros;   // int4 only; empty otherwise

  std::int64_t row_bytes() const;     // bytes from one row of q to the next
  std::int64_t groups_per_row() const;  // int4: K / G; 1 for int8/fp8; 0 for dense and fp8t

  bool operator==(const PackedWeights& o) const;
  bool operator!=(const PackedWeights& o) const { return !(*this == o); }
};

// An empty (all-zero) PackedWeights of the right sizes; check_weight_layout first. ld = 0
// means ld = k.
PackedWeights make_packed_weights(WeightFormat f, DType activation, std::int64_t n,
                                  std::int64_t k, std::int64_t ld = 0);
// Throws InvalidArgument unless the layout is valid and the vectors have the sizes it implies.
void check_packed_weights(const PackedWeights& w);

// Element access (no bounds checks).
// The stored code: the int8 value -128..127, the fp8 byte 0..255, the int4 nibble 0..15;
// dense has none (throws InvalidArgument).
int weight_code(const PackedWeights& w, std::int64_t row, std::int64_t col);
double weight_scale(const PackedWeights& w, std::int64_t row, std::int64_t col);  // dense: 1
double weight_zero(const PackedWeights& w, std::int64_t row, std::int64_t col);   // non-int4: 0
// The exact value the packed data stand for, in float64 (products of a code and a scale in
// these dtypes are exact in double).
double dequantize(const PackedWeights& w, std::int64_t row, std::int64_t col);
// Row `row`, K values, into out[0..k).
void dequantize_row(const PackedWeights& w, std::int64_t row, double* out);
// The whole matrix, N x K row-major (no padding): for tests and small shapes.
std::vector<double> dequantize(const PackedWeights& w);

// ---------------------------------------------------------------------------------------------
// Host matrices to read from: a view of rows x cols values, row stride ld (elements; 0 = cols).

enum class HostElement { f64, f32, f16, bf16 };

struct HostMatrix {
  const void* data = nullptr;
  HostElement element = HostElement::f32;
  std::int64_t rows = 0, cols = 0, ld = 0;

  double at(std::int64_t r, std::int64_t c) const;  // exact value of element (r, c)
};
HostMatrix host_matrix(const double* p, std::int64_t rows, std::int64_t cols, std::int64_t ld = 0);
HostMatrix host_matrix(const float* p, std::int64_t rows, std::int64_t cols, std::int64_t ld = 0);
// bf16 or fp16 bit patterns; throws InvalidArgument for DType::f32.
HostMatrix host_matrix(const std::uint16_t* bits, DType t, std::int64_t rows, std::int64_t cols,
                       std::int64_t ld = 0);

// ---------------------------------------------------------------------------------------------
// Quantizer: round to nearest, for users without a checkpoint. w is N x K (rows = N).
//   dense   each value rounded to the activation dtype (nearest even)
//   int8    per row: s = absmax / 127 (fp32), q = round(w / s) clamped to -127..127
//   fp8     per row: s = absmax / 448 (fp32), q = double_to_e4m3(w / s)
//   fp8t    the same with the absmax of the whole matrix
//   int4gG  per group of G along K: lo = min(min w, 0), hi = max(max w, 0);
//           s = (hi - lo) / 15 rounded down to the activation dtype, z = round(-lo / s) with
//           ties up, in 0..15 (an integer, as GPTQ and AWQ store), q = clamp(round(w / s + z),
//           0, 15) with ties to even
// An all-zero row or group gets scale 1 (codes 0, zero 0). Rounding the int4 scale down (rather
// than to nearest) keeps every code of the group's range in use, which makes quantize a fixed
// point: quantize(dequantize(quantize(w))) has the codes, scales and zeros of quantize(w).
// Throws InvalidArgument for non-finite weights, an int4 scale that overflows the activation
// dtype, and the layout errors of check_weight_layout. ld = 0 means ld = k.
PackedWeights quantize(const HostMatrix& w, WeightFormat f, DType activation, std::int64_t ld = 0);

// ---------------------------------------------------------------------------------------------
// Converters from checkpoint tensors (int4 results; ld = 0 means ld = k). int32 tensors are
// read as their bit patterns (uint32 works alike). Each throws InvalidArgument naming the
// tensor and the problem (sizes, group size, out-of-range values, act order).

// GPTQ zero points. v1: the classic AutoGPTQ checkpoints (checkpoint_format "gptq", what most
// published GPTQ models are) store zero - 1, so the zero is the stored nibble + 1 (1..16);
// v2: GPTQModel's "gptq_v2" stores the zero as it is (0..15).
enum class GptqZeros { v1, v2 };

// GPTQ (AutoGPTQ/GPTQModel, 4 bits, sym or not) for nn.Linear(K -> N):
//   qweight int32 [K/8][N]   weight k of column n in word [k/8][n], bits 4*(k%8) (low first)
//   qzeros  int32 [K/G][N/8] zero of group g, column n in word [g][n/8], bits 4*(n%8)
//   scales  [K/G][N] (fp16 in checkpoints; any HostMatrix element), converted to the activation
//           dtype with round to nearest (exact when they are already of that dtype)
//   g_idx   int32 [K] or null: must be the trivial k / G (desc_act / act-order checkpoints that
//           permute K are refused)
// Dequantized: w[n][k] = (q - zero) * scale, zero per GptqZeros.
struct GptqTensors {
  const std::int32_t* qweight = nullptr;
  const std::int32_t* qzeros = nullptr;
  HostMatrix scales;
  const std::int32_t* g_idx = nullptr;
  std::int64_t n = 0, k = 0;
  int group = 128;
  GptqZeros zeros_format = GptqZeros::v1;
};
PackedWeights from_gptq(const GptqTensors& t, DType activation, std::int64_t ld = 0);

// AWQ (AutoAWQ WQLinear_GEMM, "gemm" version) for nn.Linear(K -> N):
//   qweight int32 [K][N/8]   columns 8j..8j+7 of row k in word [k][j], nibble i (bits 4i)
//                            holding column 8j + {0,2,4,6,1,3,5,7}[i]
//   qzeros  int32 [K/G][N/8] the same order; zeros stored as they are (0..15)
//   scales  [K/G][N] (fp16 in checkpoints), converted as for GPTQ
// Dequantized: w[n][k] = (q - zero) * scale.
struct AwqTensors {
  const std::int32_t* qweight = nullptr;
  const std::int32_t* qzeros = nullptr;
  HostMatrix scales;
  std::int64_t n = 0, k = 0;
  int group = 128;
};
PackedWeights from_awq(const AwqTensors& t, DType activation, std::int64_t ld = 0);

// Plain int4: values [N][K] (one per byte, 0..15, row stride values_ld, 0 = K), scales and
// zeros [N][K/G] as HostMatrix (rows N, cols K/G; zeros may be any value, e.g. 8 or 7.5),
// converted to the activation dtype with round to nearest.
PackedWeights from_plain_int4(const std::uint8_t* values, std::int64_t values_ld,
                              const HostMatrix& scales, const HostMatrix& zeros, std::int64_t n,
                              std::int64_t k, int group, DType activation, std::int64_t ld = 0);
// Plain int8: values [N][K] (row stride values_ld, 0 = K; all of -128..127 are kept as they
// are, though the quantizer itself uses -127..127), scales fp32 [N].
PackedWeights from_plain_int8(const std::int8_t* values, std::int64_t values_ld,
                              const float* scales, std::int64_t n, std::int64_t k,
                              DType activation, std::int64_t ld = 0);
// Plain fp8 (e.g. a float8_e4m3fn weight with its weight_scale): codes [N][K] (row stride
// codes_ld, 0 = K), scales fp32 [N] for WeightFormat::fp8 or [1] for fp8_tensor. NaN codes are
// refused.
PackedWeights from_plain_fp8(const std::uint8_t* codes, std::int64_t codes_ld, const float* scales,
                             WeightFormat f, std::int64_t n, std::int64_t k, DType activation,
                             std::int64_t ld = 0);

}  // namespace gemvtune
