#include "server/dp/accounting/accountant.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/accounting/advanced.h"
#include "server/dp/accounting/rdp.h"
#include "server/dp/accounting/zcdp.h"

namespace dpq::dp::accounting {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr absl::string_view kMagic = "dpq-accountant/1";

std::string Num(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return absl::StrFormat("%.17g", v);
}

absl::StatusOr<double> ParseNum(absl::string_view s, absl::string_view key) {
  if (s == "inf") return kInf;
  double v = 0;
  if (!absl::SimpleAtod(s, &v) || std::isnan(v)) {
    return absl::InvalidArgumentError(absl::StrCat("accountant state: bad number for ", key));
  }
  return v;
}

absl::Status ValidateDelta(double delta) { return ValidateInOpenRange(delta, 0.0, 1.0, "delta"); }

// Parsed key=value lines of a state blob.
using StateMap = std::map<std::string, std::string>;

absl::StatusOr<double> GetNum(const StateMap& m, absl::string_view key) {
  auto it = m.find(std::string(key));
  if (it == m.end())
    return absl::InvalidArgumentError(absl::StrCat("accountant state: missing ", key));
  return ParseNum(it->second, key);
}

bool IsPureOrApprox(const PrivacyEvent& e) {
  return e.kind == EventKind::kLaplace || e.kind == EventKind::kDiscreteLaplace ||
         e.kind == EventKind::kPureDp || e.kind == EventKind::kApproxDp;
}

// (eps, delta) of one pure or approximate event. The discrete Laplace with integer sensitivity D
// and scale T is pure (D/T)-DP (Canonne, Kamath & Steinke 2020, Sec. 2).
std::pair<double, double> EpsDelta(const PrivacyEvent& e) {
  if (e.kind == EventKind::kLaplace) return {e.LaplaceEpsilon(), 0.0};
  if (e.kind == EventKind::kDiscreteLaplace) return {e.DiscreteLaplaceEpsilon(), 0.0};
  if (e.kind == EventKind::kPureDp) return {e.epsilon, 0.0};
  return {e.epsilon, e.delta};
}

absl::Status NeedsPureOrApprox(const PrivacyEvent& e, absl::string_view accountant) {
  if (IsPureOrApprox(e)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "event: the ", accountant, " accountant composes pure or (epsilon, delta) events only; ",
      e.ToSpec(),
      " has no single (epsilon, delta): submit it as approx:epsilon=..,delta=.. or use "
      "the rdp, zcdp or pld accountant"));
}

// ---------------------------------------------------------------------------------------------
// basic: eps and delta add (Dwork, Kenthapadi, McSherry, Mironov & Naor 2006; Dwork & Roth 2014,
// Thm 3.16).
class BasicAccountant final : public Accountant {
 public:
  AccountantKind kind() const override { return AccountantKind::kBasic; }
  bool valid_for_adaptive_filter() const override { return true; }
  absl::Status Compose(const PrivacyEvent& e) override {
    RETURN_IF_ERROR(e.Validate());
    RETURN_IF_ERROR(NeedsPureOrApprox(e, name()));
    auto [eps, del] = EpsDelta(e);
    sum_eps_ += e.count * eps;
    sum_delta_ += e.count * del;
    return absl::OkStatus();
  }
  absl::StatusOr<double> Epsilon(double delta) const override {
    RETURN_IF_ERROR(ValidateDelta(delta));
    return sum_delta_ <= delta ? sum_eps_ : kInf;
  }
  std::string SerializeState() const override {
    return absl::StrCat(kMagic, " basic\nsum_eps=", Num(sum_eps_), "\nsum_delta=", Num(sum_delta_),
                        "\n");
  }
  std::unique_ptr<Accountant> Clone() const override {
    return std::make_unique<BasicAccountant>(*this);
  }
  absl::Status Load(const StateMap& m) {
    ASSIGN_OR_RETURN(sum_eps_, GetNum(m, "sum_eps"));
    ASSIGN_OR_RETURN(sum_delta_, GetNum(m, "sum_delta"));
    return absl::OkStatus();
  }

 private:
  double sum_eps_ = 0, sum_delta_ = 0;
};

// ---------------------------------------------------------------------------------------------
// advanced: min(basic, WRRW 2023 filter bound), with delta = delta' (slack, share f) + delta''
// (cap on sum delta_i, share 1 - f), f fixed at construction.
//
// Why "stop only when both bounds exceed the budget" is a valid (eps, delta) filter. Let N_c be
// the combined stopping time and N_a that of the advanced filter alone; both bounds are
// non-decreasing in the history, so N_c >= N_a, and on the event E = {basic bound at N_c > eps} the
// advanced bound still held at N_c, hence N_a = N_c on E. Off the failure events of the approximate
// mechanisms (total probability <= sum delta_i, the standard decomposition of an (eps_i, delta_i)
// mechanism, Kasiviswanathan & Smith 2014 Lemma 3.3 / Murtagh & Vadhan 2016 Lemma 3.2), each
// event's privacy loss is bounded by eps_i pointwise. On E^c the loss at N_c is therefore <= sum
// eps_i <= eps and contributes nothing to E[(1 - e^{eps - L})_+]; on E the loss equals the loss of
// the advanced filter's own run, whose hockey-stick divergence is <= delta by WRRW 2023. So the
// combined hockey-stick divergence is <= delta: the combination is as valid as the advanced filter.
class AdvancedAccountant final : public Accountant {
 public:
  explicit AdvancedAccountant(double slack_fraction) : slack_fraction_(slack_fraction) {}
  AccountantKind kind() const override { return AccountantKind::kAdvanced; }
  bool valid_for_adaptive_filter() const override { return true; }
  absl::Status Compose(const PrivacyEvent& e) override {
    RETURN_IF_ERROR(e.Validate());
    RETURN_IF_ERROR(NeedsPureOrApprox(e, name()));
    auto [eps, del] = EpsDelta(e);
    sums_.Add(eps, del, e.count);
    return absl::OkStatus();
  }
  absl::StatusOr<double> Epsilon(double delta) const override {
    RETURN_IF_ERROR(ValidateDelta(delta));
    const double basic = sums_.sum_delta <= delta ? sums_.sum_eps : kInf;
    const double slack = slack_fraction_ * delta;
    const double cap = delta - slack;
    const double adv = sums_.sum_delta <= cap ? FilterEpsilon(sums_, slack) : kInf;
    return std::min(basic, adv);
  }
  std::string SerializeState() const override {
    return absl::StrCat(kMagic, " advanced\nslack_fraction=", Num(slack_fraction_),
                        "\nsum_eps=", Num(sums_.sum_eps), "\nsum_eps_sq=", Num(sums_.sum_eps_sq),
                        "\nsum_eps_tanh=", Num(sums_.sum_eps_tanh),
                        "\nsum_delta=", Num(sums_.sum_delta), "\n");
  }
  std::unique_ptr<Accountant> Clone() const override {
    return std::make_unique<AdvancedAccountant>(*this);
  }
  absl::Status Load(const StateMap& m) {
    ASSIGN_OR_RETURN(slack_fraction_, GetNum(m, "slack_fraction"));
    if (!(slack_fraction_ > 0 && slack_fraction_ <= 1)) {
      return absl::InvalidArgumentError("accountant state: slack_fraction must be in (0, 1]");
    }
    ASSIGN_OR_RETURN(sums_.sum_eps, GetNum(m, "sum_eps"));
    ASSIGN_OR_RETURN(sums_.sum_eps_sq, GetNum(m, "sum_eps_sq"));
    ASSIGN_OR_RETURN(sums_.sum_eps_tanh, GetNum(m, "sum_eps_tanh"));
    ASSIGN_OR_RETURN(sums_.sum_delta, GetNum(m, "sum_delta"));
    return absl::OkStatus();
  }

 private:
  double slack_fraction_;
  AdvancedSums sums_;
};

// Pure-DP sum (order infinity) and the additive (eps, delta) part shared by rdp and zcdp.
struct PureAndAdditive {
  double d_inf = 0;      // sum of D_inf (pure eps) of the events; +inf once a non-pure event came
  double add_eps = 0;    // ApproxDp events with delta > 0: eps adds
  double add_delta = 0;  //                                   delta adds
  // Returns true if the event went to the additive part.
  bool Add(const PrivacyEvent& e) {
    if (e.kind == EventKind::kApproxDp && e.delta > 0) {
      add_eps += e.count * e.epsilon;
      add_delta += e.count * e.delta;
      return true;
    }
    d_inf += e.count * EventMaxDivergence(e);
    return false;
  }
  std::string Serialize() const {
    return absl::StrCat("d_inf=", Num(d_inf), "\nadd_eps=", Num(add_eps),
                        "\nadd_delta=", Num(add_delta), "\n");
  }
  absl::Status Load(const StateMap& m) {
    ASSIGN_OR_RETURN(d_inf, GetNum(m, "d_inf"));
    ASSIGN_OR_RETURN(add_eps, GetNum(m, "add_eps"));
    ASSIGN_OR_RETURN(add_delta, GetNum(m, "add_delta"));
    return absl::OkStatus();
  }
};

// ---------------------------------------------------------------------------------------------
class RdpAccountant final : public Accountant {
 public:
  RdpAccountant() : rdp_(DefaultRdpOrders().size(), 0.0) {}
  AccountantKind kind() const override { return AccountantKind::kRdp; }
  bool valid_for_adaptive_filter() const override { return true; }
  absl::Status Compose(const PrivacyEvent& e) override {
    RETURN_IF_ERROR(e.Validate());
    if (extra_.Add(e)) return absl::OkStatus();
    const auto& orders = DefaultRdpOrders();
    for (size_t i = 0; i < orders.size(); ++i) rdp_[i] += e.count * EventRdp(e, orders[i]);
    return absl::OkStatus();
  }
  absl::StatusOr<double> Epsilon(double delta) const override {
    RETURN_IF_ERROR(ValidateDelta(delta));
    if (extra_.add_delta >= delta) return kInf;
    ASSIGN_OR_RETURN(RdpConversion c,
                     RdpToEpsilon(DefaultRdpOrders(), rdp_, delta - extra_.add_delta));
    return std::min(c.epsilon, extra_.d_inf) + extra_.add_eps;
  }
  std::string SerializeState() const override {
    std::vector<std::string> v;
    for (double r : rdp_) v.push_back(Num(r));
    return absl::StrCat(kMagic, " rdp\ngrid=dp_accounting_default\nrdp=", absl::StrJoin(v, ","),
                        "\n", extra_.Serialize());
  }
  std::unique_ptr<Accountant> Clone() const override {
    return std::make_unique<RdpAccountant>(*this);
  }
  absl::Status Load(const StateMap& m) {
    auto g = m.find("grid");
    if (g == m.end() || g->second != "dp_accounting_default") {
      return absl::InvalidArgumentError("accountant state: unknown RDP grid");
    }
    auto it = m.find("rdp");
    if (it == m.end()) return absl::InvalidArgumentError("accountant state: missing rdp");
    std::vector<absl::string_view> parts = absl::StrSplit(it->second, ',');
    if (parts.size() != rdp_.size())
      return absl::InvalidArgumentError("accountant state: rdp size");
    for (size_t i = 0; i < parts.size(); ++i) {
      ASSIGN_OR_RETURN(rdp_[i], ParseNum(parts[i], "rdp"));
      if (!(rdp_[i] >= 0)) return absl::InvalidArgumentError("accountant state: negative rdp");
    }
    return extra_.Load(m);
  }
  absl::Span<const double> curve() const { return rdp_; }

 private:
  std::vector<double> rdp_;
  PureAndAdditive extra_;
};

// ---------------------------------------------------------------------------------------------
class ZcdpAccountant final : public Accountant {
 public:
  AccountantKind kind() const override { return AccountantKind::kZcdp; }
  bool valid_for_adaptive_filter() const override { return true; }
  absl::Status Compose(const PrivacyEvent& e) override {
    RETURN_IF_ERROR(e.Validate());
    if (extra_.Add(e)) return absl::OkStatus();
    rho_ += e.count * EventRho(e);
    return absl::OkStatus();
  }
  absl::StatusOr<double> Epsilon(double delta) const override {
    RETURN_IF_ERROR(ValidateDelta(delta));
    if (extra_.add_delta >= delta) return kInf;
    return std::min(ZcdpEpsilonCks(rho_, delta - extra_.add_delta), extra_.d_inf) + extra_.add_eps;
  }
  std::string SerializeState() const override {
    return absl::StrCat(kMagic, " zcdp\nrho=", Num(rho_), "\n", extra_.Serialize());
  }
  std::unique_ptr<Accountant> Clone() const override {
    return std::make_unique<ZcdpAccountant>(*this);
  }
  absl::Status Load(const StateMap& m) {
    ASSIGN_OR_RETURN(rho_, GetNum(m, "rho"));
    return extra_.Load(m);
  }

 private:
  double rho_ = 0;
  PureAndAdditive extra_;
};

// ---------------------------------------------------------------------------------------------
// pld: state is the multiset of distinct mechanisms with their total counts (exact and compact for
// declared workloads); the composed distributions are computed on demand and cached.
class PldAccountant final : public Accountant {
 public:
  explicit PldAccountant(double interval) : interval_(interval) {}
  PldAccountant(const PldAccountant& o) : interval_(o.interval_), events_(o.events_) {}
  AccountantKind kind() const override { return AccountantKind::kPld; }
  bool valid_for_adaptive_filter() const override { return false; }
  absl::Status Compose(const PrivacyEvent& e) override {
    RETURN_IF_ERROR(e.Validate());
    for (auto& have : events_) {
      if (have.SameMechanism(e)) {
        if (have.count > kMaxEventCount - e.count) {
          return absl::InvalidArgumentError(
              "count: total count of one mechanism exceeds the limit");
        }
        have.count += e.count;
        cache_valid_ = false;
        return absl::OkStatus();
      }
    }
    events_.push_back(e);
    cache_valid_ = false;
    return absl::OkStatus();
  }
  absl::StatusOr<double> Epsilon(double delta) const override {
    RETURN_IF_ERROR(ValidateDelta(delta));
    RETURN_IF_ERROR(Build());
    double eps = 0;
    for (const PldPmf& p : composed_) eps = std::max(eps, PldEpsilon(p, delta));
    // Grid rounding can put a single pure event slightly above its eps; for workloads of pure and
    // (eps, delta) events basic composition is also a valid bound for the same (fixed) workload.
    double basic_eps = 0, basic_delta = 0;
    for (const auto& e : events_) {
      if (!IsPureOrApprox(e)) return eps;
      auto [ei, di] = EpsDelta(e);
      basic_eps += e.count * ei;
      basic_delta += e.count * di;
    }
    return basic_delta <= delta ? std::min(eps, basic_eps) : eps;
  }
  std::string SerializeState() const override {
    std::string s = absl::StrCat(kMagic, " pld\ninterval=", Num(interval_), "\n");
    for (const auto& e : events_) absl::StrAppend(&s, "event=", e.ToSpec(), "\n");
    return s;
  }
  std::unique_ptr<Accountant> Clone() const override {
    return std::make_unique<PldAccountant>(*this);
  }
  absl::Status LoadEvents(absl::Span<const std::string> specs) {
    for (const auto& spec : specs) {
      ASSIGN_OR_RETURN(PrivacyEvent e, ParsePrivacyEvent(spec));
      RETURN_IF_ERROR(Compose(e));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Build() const {
    if (cache_valid_) return absl::OkStatus();
    bool asymmetric = false;
    for (const auto& e : events_)
      asymmetric |= e.kind == EventKind::kPoissonSubsampledGaussian && e.sampling_rate < 1;
    std::vector<PldDirection> dirs = {PldDirection::kRemove};
    if (asymmetric) dirs.push_back(PldDirection::kAdd);
    std::vector<PldPmf> out;
    for (PldDirection dir : dirs) {
      std::vector<PldPmf> parts;
      parts.reserve(events_.size());
      for (const auto& e : events_) {
        ASSIGN_OR_RETURN(PldPmf one, PldForEvent(e, interval_, dir));
        ASSIGN_OR_RETURN(PldPmf many, SelfComposePld(one, e.count));
        parts.push_back(std::move(many));
      }
      ASSIGN_OR_RETURN(PldPmf all, ComposeAllPld(std::move(parts), interval_));
      out.push_back(std::move(all));
    }
    composed_ = std::move(out);
    cache_valid_ = true;
    return absl::OkStatus();
  }

  double interval_;
  std::vector<PrivacyEvent> events_;
  mutable bool cache_valid_ = false;
  mutable std::vector<PldPmf> composed_;
};

// `accountant` with its state restored from the key=value lines `m`.
template <typename Kind>
absl::StatusOr<std::unique_ptr<Accountant>> Loaded(std::unique_ptr<Kind> accountant,
                                                   const StateMap& m) {
  RETURN_IF_ERROR(accountant->Load(m));
  return std::unique_ptr<Accountant>(std::move(accountant));
}

}  // namespace

std::unique_ptr<Accountant> CreateAccountant(AccountantKind kind) {
  switch (kind) {
    case AccountantKind::kBasic: return std::make_unique<BasicAccountant>();
    case AccountantKind::kAdvanced:
      return std::make_unique<AdvancedAccountant>(kDefaultAdvancedSlackFraction);
    case AccountantKind::kRdp: return std::make_unique<RdpAccountant>();
    case AccountantKind::kZcdp: return std::make_unique<ZcdpAccountant>();
    case AccountantKind::kPld: return std::make_unique<PldAccountant>(kDefaultPldInterval);
  }
  return std::make_unique<BasicAccountant>();  // unreachable: the switch covers every kind
}

absl::StatusOr<std::unique_ptr<Accountant>> CreateAccountant(absl::string_view name) {
  ASSIGN_OR_RETURN(const AccountantKind kind, ParseAccountantKind(name));
  return CreateAccountant(kind);
}

absl::StatusOr<std::unique_ptr<Accountant>> CreateAdvancedAccountant(double slack_fraction) {
  if (!(slack_fraction > 0 && slack_fraction <= 1)) {
    return absl::InvalidArgumentError("slack_fraction must be in (0, 1]");
  }
  return std::unique_ptr<Accountant>(new AdvancedAccountant(slack_fraction));
}

absl::StatusOr<std::unique_ptr<Accountant>> CreatePldAccountant(double interval) {
  if (!(interval >= 1e-6 && interval <= 1)) {
    return absl::InvalidArgumentError("interval must be in [1e-6, 1]");
  }
  return std::unique_ptr<Accountant>(new PldAccountant(interval));
}

absl::StatusOr<std::unique_ptr<Accountant>> Accountant::Deserialize(absl::string_view state) {
  std::vector<absl::string_view> lines = absl::StrSplit(state, '\n', absl::SkipEmpty());
  if (lines.empty()) return absl::InvalidArgumentError("accountant state is empty");
  std::vector<absl::string_view> head = absl::StrSplit(lines[0], ' ');
  if (head.size() != 2 || head[0] != kMagic) {
    return absl::InvalidArgumentError("accountant state: unknown format or version");
  }
  StateMap m;
  std::vector<std::string> events;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<absl::string_view> kv = absl::StrSplit(lines[i], absl::MaxSplits('=', 1));
    if (kv.size() != 2) return absl::InvalidArgumentError("accountant state: expected key=value");
    if (kv[0] == "event") {
      events.emplace_back(kv[1]);
    } else if (!m.emplace(std::string(kv[0]), std::string(kv[1])).second) {
      return absl::InvalidArgumentError(absl::StrCat("accountant state: duplicate key ", kv[0]));
    }
  }
  const absl::StatusOr<AccountantKind> kind = ParseAccountantKind(head[1]);
  if (!kind.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("accountant state: unknown accountant ", head[1]));
  }
  switch (*kind) {
    case AccountantKind::kBasic: return Loaded(std::make_unique<BasicAccountant>(), m);
    case AccountantKind::kAdvanced:
      return Loaded(std::make_unique<AdvancedAccountant>(kDefaultAdvancedSlackFraction), m);
    case AccountantKind::kRdp: return Loaded(std::make_unique<RdpAccountant>(), m);
    case AccountantKind::kZcdp: return Loaded(std::make_unique<ZcdpAccountant>(), m);
    case AccountantKind::kPld: break;
  }
  ASSIGN_OR_RETURN(double interval, GetNum(m, "interval"));
  if (!(interval >= 1e-6 && interval <= 1))
    return absl::InvalidArgumentError("accountant state: interval");
  auto a = std::make_unique<PldAccountant>(interval);
  RETURN_IF_ERROR(a->LoadEvents(events));
  return std::unique_ptr<Accountant>(std::move(a));
}

absl::StatusOr<Price> PriceEvents(absl::string_view accountant, double delta,
                                  absl::Span<const PrivacyEvent> events) {
  RETURN_IF_ERROR(ValidateDelta(delta));
  ASSIGN_OR_RETURN(const AccountantKind kind, ParseAccountantKind(accountant));
  return PriceEvents(kind, delta, events);
}

absl::StatusOr<Price> PriceEvents(AccountantKind accountant, double delta,
                                  absl::Span<const PrivacyEvent> events) {
  RETURN_IF_ERROR(ValidateDelta(delta));
  std::unique_ptr<Accountant> acc = CreateAccountant(accountant);
  for (const auto& e : events) RETURN_IF_ERROR(acc->Compose(e));
  ASSIGN_OR_RETURN(double eps, acc->Epsilon(delta));
  return Price{eps, delta};
}

absl::StatusOr<double> CalibrateNoiseMultiplier(absl::string_view accountant, double target_epsilon,
                                                double delta, double sampling_rate, int64_t steps,
                                                double tolerance) {
  RETURN_IF_ERROR(ValidateIsPositive(target_epsilon, "target_epsilon"));
  RETURN_IF_ERROR(ValidateDelta(delta));
  RETURN_IF_ERROR(ValidateIsPositive(tolerance, "tolerance"));
  ASSIGN_OR_RETURN(const AccountantKind kind, ParseAccountantKind(accountant));
  return CalibrateNoiseMultiplier(kind, target_epsilon, delta, sampling_rate, steps, tolerance);
}

absl::StatusOr<double> CalibrateNoiseMultiplier(AccountantKind accountant, double target_epsilon,
                                                double delta, double sampling_rate, int64_t steps,
                                                double tolerance) {
  RETURN_IF_ERROR(ValidateIsPositive(target_epsilon, "target_epsilon"));
  RETURN_IF_ERROR(ValidateDelta(delta));
  RETURN_IF_ERROR(ValidateIsPositive(tolerance, "tolerance"));
  std::unique_ptr<Accountant> proto = CreateAccountant(accountant);
  const PrivacyEvent probe = PrivacyEvent::PoissonSubsampledGaussian(sampling_rate, 1.0, steps);
  RETURN_IF_ERROR(probe.Validate());
  RETURN_IF_ERROR(proto->Compose(probe));  // rejects accountants that cannot take the event
  auto eps_at = [&](double z) -> absl::StatusOr<double> {
    std::unique_ptr<Accountant> acc = CreateAccountant(accountant);
    RETURN_IF_ERROR(acc->Compose(PrivacyEvent::PoissonSubsampledGaussian(sampling_rate, z, steps)));
    return acc->Epsilon(delta);
  };
  // epsilon is non-increasing in z; bracket [lo, hi] with eps(lo) > target >= eps(hi).
  double hi = 1.0;
  for (;;) {
    ASSIGN_OR_RETURN(double e, eps_at(hi));
    if (e <= target_epsilon) break;
    hi *= 2;
    if (hi > 1e6) return absl::OutOfRangeError("no noise multiplier <= 1e6 meets target_epsilon");
  }
  double lo = hi / 2;
  for (;;) {
    ASSIGN_OR_RETURN(double e, eps_at(lo));
    if (e > target_epsilon) break;
    hi = lo;
    lo /= 2;
    if (lo < 1e-6) return hi;
  }
  while ((hi - lo) > tolerance * hi) {
    const double mid = 0.5 * (lo + hi);
    ASSIGN_OR_RETURN(double e, eps_at(mid));
    if (e <= target_epsilon)
      hi = mid;
    else
      lo = mid;
  }
  return hi;  // the private end of the bracket
}

}  // namespace dpq::dp::accounting
