#include "server/api/sql_convert.h"

#include "server/api/plan_report_convert.h"
#include "server/api/proto_convert.h"

namespace dpq::api {
namespace {

v1::Aggregate AggregateOf(query::AggregateKind kind) {
  switch (kind) {
    case query::AggregateKind::kCount: return v1::AGGREGATE_COUNT;
    case query::AggregateKind::kSum: return v1::AGGREGATE_SUM;
    case query::AggregateKind::kMean: return v1::AGGREGATE_MEAN;
    case query::AggregateKind::kVariance: return v1::AGGREGATE_VARIANCE;
    case query::AggregateKind::kStddev: return v1::AGGREGATE_STDDEV;
    case query::AggregateKind::kQuantile: return v1::AGGREGATE_QUANTILE;
    case query::AggregateKind::kHistogram: return v1::AGGREGATE_HISTOGRAM;
  }
  return v1::AGGREGATE_UNSPECIFIED;
}

void ToProto(const query::QuerySpec& s, v1::QueryRequest* out) {
  out->set_dataset(s.dataset);
  out->set_aggregate(AggregateOf(s.aggregate));
  out->set_column(s.column);
  if (s.lower) out->set_lower(*s.lower);
  if (s.upper) out->set_upper(*s.upper);
  out->set_epsilon(s.epsilon);
  out->set_delta(s.delta);
  out->set_mechanism(s.mechanism == query::MechanismKind::kGaussian ? v1::MECHANISM_GAUSSIAN
                                                                    : v1::MECHANISM_LAPLACE);
  out->set_max_contributions(s.max_contributions);
  out->set_confidence(s.confidence);
  out->set_where(s.where);
  for (double q : s.quantiles) out->add_quantiles(q);
  for (double edge : s.bins) out->add_bins(edge);
  for (const std::string& g : s.group_by) out->add_group_by(g);
  out->set_max_partitions(s.max_partitions);
}

}  // namespace

void ToProto(const engine::SqlOutcome& o, v1::SqlResponse* out) {
  out->set_request_id(o.request_id);
  out->set_dataset(o.dataset);
  out->set_epsilon(o.epsilon);
  out->set_delta(o.delta);
  out->set_epsilon_sum(o.epsilon_sum);
  out->set_delta_sum(o.delta_sum);
  ToProto(o.budget, out->mutable_budget());
  out->set_cached(o.cached);
  out->set_replayed(o.replayed);
  for (const engine::SqlResultSet& r : o.results) {
    v1::SqlResultSet* set = out->add_results();
    for (const sql::OutputColumn& c : r.columns) {
      v1::SqlColumn* col = set->add_columns();
      col->set_name(c.name);
      col->set_type(c.type);
    }
    for (const std::vector<engine::SqlCell>& row : r.rows) {
      v1::SqlRow* pr = set->add_rows();
      for (const engine::SqlCell& c : row) {
        v1::SqlCell* pc = pr->add_cells();
        switch (c.kind) {
          case engine::SqlCell::Kind::kNull: pc->set_null(true); break;
          case engine::SqlCell::Kind::kNumber: pc->set_number(c.number); break;
          case engine::SqlCell::Kind::kText: pc->set_text(c.text); break;
          case engine::SqlCell::Kind::kArray:
            for (double v : c.array) pc->add_array(v);
            break;
        }
        if (c.released) {
          pc->set_released(true);
          pc->set_noise_scale(c.noise_scale);
          ToProto(c.components, pc->mutable_components());
          v1::ConfidenceInterval* ci = pc->mutable_interval();
          ci->set_confidence(o.confidence);
          ci->set_lower(c.ci_lower);
          ci->set_upper(c.ci_upper);
        }
      }
    }
  }
}

void ToProto(const engine::SqlExplanation& e, v1::ExplainSqlResponse* out) {
  out->set_dataset(e.dataset);
  out->set_epsilon(e.epsilon);
  out->set_delta(e.delta);
  out->set_epsilon_sum(e.epsilon_sum);
  out->set_delta_sum(e.delta_sum);
  out->set_confidence(e.confidence);
  out->set_population(e.population);
  if (e.join.present) ToProto(e.join, out->mutable_join());
  for (const engine::SqlPlanPart& p : e.parts) {
    v1::SqlPlanPart* pp = out->add_parts();
    pp->set_statement(p.statement);
    pp->set_function(p.function);
    ToProto(p.spec, pp->mutable_query());
    // The planner's normalised values: the epsilon and delta charged for this part.
    pp->mutable_query()->set_epsilon(p.accuracy.epsilon);
    pp->mutable_query()->set_delta(p.accuracy.delta);
    pp->set_pre_aggregate(p.spec.pre_aggregate);
    pp->set_mechanism(MechanismOf(p.accuracy));
    pp->set_sensitivity(p.accuracy.sensitivity);
    pp->set_noise_scale(p.accuracy.noise_scale);
    pp->set_error(p.accuracy.error);
    pp->set_rank_error(p.accuracy.rank_error);
    pp->set_error_basis(std::string(engine::ErrorBasisName(p.error_basis)));
    ReportToProto(p.accuracy.report, pp);
  }
}

}  // namespace dpq::api
