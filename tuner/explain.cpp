// `gemvtune explain` (see tuner/explain.hpp).
#include "tuner/explain.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "gemvtune/error.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/search_space.hpp"
#include "jit/nvrtc_compiler.hpp"

namespace gemvtune {

const char* to_string(Limiter l) {
  switch (l) {
    case Limiter::grid: return "grid";
    case Limiter::bytes_in_flight: return "bytes in flight";
    case Limiter::launch: return "launch and ramp";
    case Limiter::issue: return "issue";
    case Limiter::split_k: return "split-K fix-up";
    case Limiter::repeated_loads: return "repeated loads";
    case Limiter::bandwidth: return "bandwidth";
    case Limiter::unmodelled: return "not modelled";
  }
  return "?";
}

namespace {
// What the model says one cause adds, in us (bandwidth and unmodelled are not costs: 0).
double cost_of(const LimiterCosts& c, Limiter l) {
  switch (l) {
    case Limiter::grid: return c.grid;
    case Limiter::bytes_in_flight: return c.bytes_in_flight;
    case Limiter::launch: return c.launch;
    case Limiter::issue: return c.issue;
    case Limiter::split_k: return c.split_k;
    case Limiter::repeated_loads: return c.repeated_loads;
    case Limiter::bandwidth:
    case Limiter::unmodelled: break;
  }
  return 0;
}

// What a measured PDL saving says of launch and ramp (choose_limiter): nothing without a measured
// time and saving, or with a saving past kPdlOverlapMaxUs (not the overlap); else whether they bind.
std::optional<bool> launch_by_pdl(std::optional<double> measured_share, std::optional<double> pdl_saving,
                                  double pdl_saved_us) {
  if (!measured_share || !pdl_saving || pdl_saved_us > kPdlOverlapMaxUs) return std::nullopt;
  return *pdl_saving >= kPdlSavingShare;
}

// The costs the limiter is chosen among: the model's, less launch and ramp where PDL's measured
// saving rules them out.
LimiterCosts considered_costs(const LimiterCosts& costs, std::optional<bool> launch_binds) {
  LimiterCosts c = costs;
  if (launch_binds == false) c.launch = 0;
  return c;
}
}  // namespace

Limiter largest_cost(const LimiterCosts& c) {
  Limiter top = Limiter::grid;
  for (Limiter l : {Limiter::bytes_in_flight, Limiter::launch, Limiter::issue, Limiter::split_k, Limiter::repeated_loads})
    if (cost_of(c, l) > cost_of(c, top)) top = l;
  return top;
}

Limiter choose_limiter(const LimiterCosts& costs, double model_share, std::optional<double> measured_share,
                       double unexplained_us, std::optional<double> pdl_saving, double pdl_saved_us) {
  const double share = measured_share ? *measured_share : model_share;
  if (share >= kBandwidthShare) return Limiter::bandwidth;
  const std::optional<bool> by_pdl = launch_by_pdl(measured_share, pdl_saving, pdl_saved_us);
  if (by_pdl == true) return Limiter::launch;
  const LimiterCosts considered = considered_costs(costs, by_pdl);
  const Limiter largest = largest_cost(considered);
  return measured_share && unexplained_us > cost_of(considered, largest) ? Limiter::unmodelled : largest;
}

double parse_measured_us(const std::string& text, const std::string& option) {
  const std::string usage = "give microseconds per call of this config, a number > 0, e.g. " + option + " 27.9";
  const std::string said = option + " '" + text + "'";
  char* end = nullptr;
  const double us = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0') throw InvalidArgument(said + " is not a number: " + usage);
  if (!std::isfinite(us)) throw InvalidArgument(said + " is not finite: " + usage);
  if (!(us > 0)) throw InvalidArgument(said + " is not > 0: " + usage);
  return us;
}

namespace {
std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}
}  // namespace

Explanation explain(const KernelConfig& c, DType t, const Shape& s, int m, WeightFormat w,
                    const GpuModelParams& gpu, const std::optional<KernelResources>& cubin,
                    const std::optional<MeasuredTime>& measured) {
  check_config(c, t, s, m, w);
  if (measured && !(std::isfinite(measured->us) && measured->us > 0))
    throw InvalidArgument("the measured time must be > 0 and finite (microseconds per call), not " +
                          std::to_string(measured->us));
  Explanation x;
  x.config = c;
  x.dtype = t;
  x.shape = s;
  x.batch = m;
  x.weights = w;
  x.warp_steps = warp_steps(c, t, w, s);
  x.gpu = gpu;
  x.model = estimate(c, t, s, gpu, w);
  const ModelEstimate& e = x.model;
  const int sms = gpu.sm_count;

  x.block_rows = c.block_rows();
  x.row_blocks = static_cast<long long>(e.row_blocks);
  x.blocks = static_cast<long long>(e.blocks);

  x.model_residency = resident_blocks_per_sm(c.threads, e.registers, gpu, e.shared_bytes);
  x.resident_per_sm = x.model_residency.blocks;
  x.cubin = cubin;
  if (cubin && cubin->registers > 0) {
    x.cubin_residency = resident_blocks_per_sm(c.threads, cubin->registers, gpu, cubin->shared_bytes);
    x.resident_per_sm = x.cubin_residency->blocks;
    // The model's in-flight bytes per SM with the compiled kernel's residency instead.
    const double resident = std::min(static_cast<double>(x.blocks) / sms, double(x.resident_per_sm));
    x.cubin_in_flight_per_sm = std::max(1.0, resident) * c.warps() * e.warp_bytes;
    x.capped_twin = cuda_core_capped_twin(c, t, s, m, cubin->registers, w);
    if (x.capped_twin) {
      x.capped_residency = resident_blocks_per_sm(c.threads, x.capped_twin->reg_cap, gpu, cubin->shared_bytes);
      x.capped_waves = static_cast<double>(x.blocks) / (static_cast<double>(x.capped_residency.blocks) * sms);
    }
  }
  x.wave_slots = static_cast<long long>(x.resident_per_sm) * sms;
  x.waves = static_cast<double>(x.blocks) / x.wave_slots;
  x.wave_count = (x.blocks + x.wave_slots - 1) / x.wave_slots;
  x.last_wave_blocks = x.blocks - (x.wave_count - 1) * x.wave_slots;
  x.last_wave_fill = static_cast<double>(x.last_wave_blocks) / x.wave_slots;

  x.in_flight_per_sm = e.in_flight_per_sm;
  x.needed_per_sm = e.needed_per_sm;
  x.split_partial_bytes = c.split_k > 1 ? 4.0 * c.split_k * c.m_tile * static_cast<double>(s.n) : 0;
  x.split_us = e.split_us;

  const double esize = static_cast<double>(dtype_size(t));
  const double wbytes = is_quantized(w) ? static_cast<double>(weight_bytes(w, t, s.n, s.k).total())
                                        : esize * static_cast<double>(s.n) * static_cast<double>(s.k);
  x.moved_bytes = wbytes + esize * m * static_cast<double>(s.k + s.n);
  x.predicted_us = e.time_us;
  x.predicted_gbps = x.moved_bytes / (e.time_us * 1e-6) / 1e9;

  // The verdict (docs/performance.md, "gemvtune explain"): the model's time is the weights'
  // stream at the read ceiling plus what each cause adds to it; the limiter is the cause that
  // adds the most, unless the stream is within kBandwidthShare of the call's time: then it is
  // bandwidth. The call's time is the measured one when there is one (choose_limiter).
  const double sm_share_gbps = gpu.read_ceiling_gbps / sms;
  const double issued = e.transfer_us / e.issued_loads;  // without the repeated loads
  const double at_sm_rate = issued * e.balance * e.turnover;  // bytes / (SM rate x SMs)
  const double ideal = at_sm_rate * e.sm_gbps / sm_share_gbps;  // bytes / ceiling
  x.costs.repeated_loads = e.transfer_us - issued;
  x.costs.grid = issued - at_sm_rate;
  x.costs.bytes_in_flight = at_sm_rate - ideal;
  x.costs.launch = e.launch_us;
  x.costs.issue = e.stream_us - e.transfer_us;
  x.costs.split_k = e.split_us + e.reduce_us;
  x.largest = largest_cost(x.costs);
  x.model_share = ideal / e.time_us;
  if (measured) {
    x.measured = measured;
    x.measured_gbps = x.moved_bytes / (measured->us * 1e-6) / 1e9;
    x.measured_share = x.measured_gbps / gpu.read_ceiling_gbps;
    if (measured->no_pdl_us) {
      if (!(std::isfinite(*measured->no_pdl_us) && *measured->no_pdl_us > 0))
        throw InvalidArgument("the measured time without PDL must be > 0 and finite (microseconds per call), not " +
                              std::to_string(*measured->no_pdl_us));
      if (!c.pdl)
        throw InvalidArgument("a time without PDL belongs to a PDL config's twin; " + to_string(c) + " has no PDL");
      x.pdl_saving = (*measured->no_pdl_us - measured->us) / *measured->no_pdl_us;
    }
  }
  const double pdl_saved_us = measured && measured->no_pdl_us ? *measured->no_pdl_us - measured->us : 0.0;
  x.limiter = choose_limiter(x.costs, x.model_share, x.measured_share, measured ? measured->us - e.time_us : 0.0,
                             x.pdl_saving, pdl_saved_us);

  // What the model says of the largest cost, after "<limiter>: ".
  const double idle_sms = std::max(0.0, double(sms) - double(x.blocks));
  const auto cause_of = [&](Limiter l) {
  std::string cause;
  switch (l) {
    case Limiter::grid:
      if (x.blocks < sms)
        cause = format("%.0f blocks on %.0f SMs leave %.0f SMs idle (model keeps %.0f%% of the stream rate)",
                       double(x.blocks), sms, idle_sms, 100 * e.balance);
      else if (x.waves <= 1)  // one wave: every block resident at once, some SMs with one more
        cause = format("%.0f blocks in one wave: the busiest SMs hold %.0f of them against %.2f an SM on average "
                       "(model keeps %.0f%% of the stream rate)",
                       double(x.blocks), std::ceil(double(x.blocks) / sms), double(x.blocks) / sms,
                       100 * e.balance * e.turnover);
      else
        cause = format("past one wave, the busiest SM's extra blocks, the last wave's empty slots and each "
                       "block's turnover (%.2f blocks an SM, %.2f waves; model keeps %.0f%% of the stream rate)",
                       double(x.blocks) / sms, x.waves, 100 * e.balance * e.turnover);
      break;
    case Limiter::bytes_in_flight:
      cause = format("%.1f KB per SM of the %.1f KB Little's law needs at %.0f GB/s and %.0f ns",
                     e.in_flight_per_sm / 1024, e.needed_per_sm / 1024, gpu.read_ceiling_gbps, e.latency_ns);
      break;
    case Limiter::launch:
      cause = format("the model's %.2f us launch term against %.2f us of transfer (%.0f%%)", e.launch_us,
                     e.transfer_us, 100 * e.launch_us / e.transfer_us);
      break;
    case Limiter::issue:
      cause = format("the arithmetic per weight (%.2f us) outlasts the stream (%.2f us)", e.compute_us, e.transfer_us);
      break;
    case Limiter::split_k:
      cause = format("%.2f us of partials and fix-up against %.2f us of transfer (%.0f%%)", e.split_us + e.reduce_us,
                     e.transfer_us, 100 * (e.split_us + e.reduce_us) / e.transfer_us);
      break;
    case Limiter::repeated_loads:
      cause = format("each warp's last trip of %.0f loads repeats some past its share of a row: %.0f%% more loads "
                     "than the row's chunks (%.2f us)",
                     double(c.unroll), 100 * (e.issued_loads - 1), x.costs.repeated_loads);
      break;
    case Limiter::bandwidth:
    case Limiter::unmodelled: break;  // never the largest cost
  }
  return cause;
  };
  const std::string in_flight =
      format("%.1f KB in flight per SM ", e.in_flight_per_sm / 1024) +
      (e.in_flight_per_sm >= e.needed_per_sm ? "covers" : "against") + format(" the %.1f KB needed", e.needed_per_sm / 1024);
  const std::string name = to_string(x.limiter);
  if (!x.measured_share) {
    if (x.limiter == Limiter::bandwidth)
      x.verdict = format("bandwidth: the stream at the ceiling is %.0f%% of the %.2f us predicted; ", 100 * x.model_share,
                         e.time_us) +
                  in_flight;
    else
      x.verdict = name + ": " + cause_of(x.limiter);
  } else if (x.limiter == Limiter::bandwidth) {
    x.verdict = format("bandwidth: measured %.1f%% of the read ceiling (%.2f us, %.0f GB/s of %.0f); ",
                       100 * *x.measured_share, measured->us, x.measured_gbps, gpu.read_ceiling_gbps) +
                in_flight;
    if (x.model_share < kBandwidthShare)
      x.verdict += format("; the model predicted %.0f%% (%.2f us), its largest cost ", 100 * x.model_share, e.time_us) +
                   to_string(x.largest);
  } else {
    const std::string measured_text = format(": measured %.1f%% of the read ceiling (%.2f us, %.0f GB/s of %.0f); ",
                                             100 * *x.measured_share, measured->us, x.measured_gbps,
                                             gpu.read_ceiling_gbps);
    // What PDL saves, measured, where it decided launch and ramp (choose_limiter), and the largest
    // cost the limiter was chosen from.
    const std::optional<bool> by_pdl = launch_by_pdl(x.measured_share, x.pdl_saving, pdl_saved_us);
    const std::string pdl_text =
        by_pdl ? format("PDL hides %.2f us (%.1f%%) of the %.2f us call without PDL", pdl_saved_us,
                        100 * *x.pdl_saving, *measured->no_pdl_us)
               : std::string();
    const Limiter named = largest_cost(considered_costs(x.costs, by_pdl));
    const std::string ruled_out = named != x.largest ? "; not launch and ramp, the model's largest cost: " + pdl_text
                                                     : std::string();
    if (x.limiter == Limiter::launch && by_pdl == true) {
      x.verdict = name + measured_text + pdl_text +
                  ": launch, ramp and drain, which PDL overlaps with the neighbouring calls, are a large share of "
                  "the call; the model's largest cost beyond the stream is " +
                  to_string(x.largest) + ": " + cause_of(x.largest);
    } else if (x.limiter == Limiter::unmodelled) {
      x.verdict = name + measured_text +
                  format("%.2f us beyond the model's %.2f us, more than its largest cost, ", measured->us - e.time_us,
                         e.time_us) +
                  to_string(named) + ": " + cause_of(named) + ruled_out;
    } else {
      x.verdict = name + measured_text + "the model's largest cost beyond the stream is " + name + ": " +
                  cause_of(x.limiter) + ruled_out;
    }
  }
  return x;
}

KernelResources compile_resources(const KernelConfig& c, DType t, WeightFormat w, const std::string& arch) {
  const jit::CompiledKernel k = jit::compile_kernel(generate_source(c, t, w), kernel_name(c, t, w), arch);
  KernelResources r;
  r.registers = k.registers;
  r.stack_frame_bytes = k.stack_frame_bytes;
  r.shared_bytes = k.shared_bytes;
  r.spill_store_bytes = k.spill_store_bytes;
  r.spill_load_bytes = k.spill_load_bytes;
  return r;
}

}  // namespace gemvtune
