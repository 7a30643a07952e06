#include "server/api/plan_report_convert.h"

#include <string>

namespace dpq::api {
namespace {

v1::Mechanism AdditiveMechanism(query::MechanismKind kind) {
  return kind == query::MechanismKind::kGaussian ? v1::MECHANISM_GAUSSIAN : v1::MECHANISM_LAPLACE;
}

}  // namespace

void ToProto(const engine::ComponentReport& c, v1::NoiseComponent* out) {
  out->set_statistic(std::string(engine::StatisticName(c.statistic)));
  out->set_mechanism(AdditiveMechanism(c.mechanism));
  out->set_epsilon(c.epsilon);
  out->set_delta(c.delta);
  out->set_sensitivity(c.sensitivity);
  out->set_noise_scale(c.noise_scale);
}

void ToProto(const std::vector<engine::ComponentReport>& components,
             google::protobuf::RepeatedPtrField<v1::NoiseComponent>* out) {
  for (const engine::ComponentReport& c : components) ToProto(c, out->Add());
}

void ToProto(const engine::KeysReport& k, v1::ReleasedKeys* out) {
  out->set_source(std::string(engine::KeySourceName(k.source)));
  for (const std::vector<std::string>& key : k.declared) {
    v1::GroupKey* g = out->add_keys();
    for (const std::string& v : key) g->add_values(v);
  }
  out->set_selection_epsilon(k.selection_epsilon);
  out->set_selection_delta(k.selection_delta);
  out->set_max_partitions(k.max_partitions);
}

void ToProto(const engine::ExpressionReport& e, v1::ValueExpression* out) {
  out->set_canonical(e.canonical);
  out->set_lower(e.clamp_lower);
  out->set_upper(e.clamp_upper);
  out->set_derived(e.derived);
  for (const std::string& line : e.derivation) out->add_derivation(line);
  out->set_counted_only(e.counted_only);
}

void ToProto(const engine::JoinReport& j, v1::JoinPlan* out) {
  for (const engine::JoinReport::Table& t : j.tables) {
    v1::JoinPlan::Table* table = out->add_tables();
    table->set_dataset(t.dataset);
    table->set_alias(t.alias);
    table->set_is_public(t.is_public);
  }
  for (const std::string& c : j.conditions) out->add_conditions(c);
  out->set_privacy_unit(j.privacy_unit);
  out->set_bounding(j.bounding);
}

v1::Mechanism MechanismOf(const engine::AccuracyPlan& plan) {
  if (plan.report.quantile.exponential) return v1::MECHANISM_EXPONENTIAL;
  return AdditiveMechanism(plan.mechanism);
}

}  // namespace dpq::api
