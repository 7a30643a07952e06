#include "server/sql/analyzer_clauses.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/query/filter/type_checker.h"
#include "server/query/planner.h"
#include "server/query/privacy_units.h"
#include "server/sql/diagnostics.h"
#include "server/sql/number_literal.h"
#include "server/sql/width_bucket.h"

namespace dpq::sql::internal {

absl::Status Analyzer::Options() {
  std::set<std::string> seen;
  bool has_epsilon = false;
  for (const DpOption& o : st_.options) {
    if (!seen.insert(o.name).second) {
      return Invalid(o.pos, absl::StrCat("option ", o.name, " is given twice"));
    }
    if (o.name == "epsilon" || o.name == "delta" || o.name == "max_groups_contributed") {
      absl::optional<double> v = NumberOf(o.value);
      if (!v) return Invalid(o.value.pos, absl::StrCat("option ", o.name, " must be a number"));
      if (o.name == "epsilon") {
        if (!(*v > 0)) return Invalid(o.value.pos, "epsilon must be > 0");
        out_.epsilon = *v;
        has_epsilon = true;
      } else if (o.name == "delta") {
        if (!(*v >= 0 && *v < 1)) return Invalid(o.value.pos, "delta must lie in [0, 1)");
        out_.delta = *v;
      } else {
        if (*v != std::floor(*v) || *v < 1 || *v > 10000) {
          return Invalid(o.value.pos,
                         "max_groups_contributed must be a whole number in [1, 10000]");
        }
        max_groups_ = static_cast<int>(*v);
      }
    } else if (o.name == "mechanism") {
      RETURN_IF_ERROR(MechanismOption(o));
    } else if (o.name == "max_rows_per_group") {
      RETURN_IF_ERROR(MaxRowsOption(o));
    } else if (o.name == "max_rows_contributed") {
      RETURN_IF_ERROR(MaxRowsContributedOption(o));
    } else if (o.name == "privacy_unit_column") {
      std::string name;
      if (o.value.kind == Expr::Kind::kColumn && o.value.qualifier.empty()) {
        name = o.value.name;
      } else if (o.value.kind == Expr::Kind::kString) {
        name = o.value.text;
      } else {
        return Invalid(o.value.pos, "privacy_unit_column must name a column");
      }
      if (name != schema_.privacy_unit) {
        return Invalid(
            o.value.pos,
            absl::StrCat("privacy_unit_column ", name, " is not the privacy unit of ", schema_.name,
                         ", which is ", schema_.privacy_unit, " (declared with the dataset)"));
      }
    } else {
      return Invalid(o.pos, absl::StrCat("option ", o.name,
                                         " is not supported: the options are epsilon, delta, "
                                         "max_groups_contributed, max_rows_contributed, "
                                         "privacy_unit_column and dpq's mechanism and "
                                         "max_rows_per_group"));
    }
  }
  if (!has_epsilon) {
    return Invalid(st_.options_pos, "OPTIONS must give epsilon, e.g. OPTIONS (epsilon = 1)");
  }
  if (max_rows_contributed_ > 0 && seen.count("max_groups_contributed") > 0) {
    return Invalid(max_rows_contributed_pos_,
                   "give max_groups_contributed or max_rows_contributed, not both (as ZetaSQL)");
  }
  if (mechanism_ == query::MechanismKind::kGaussian && !(out_.delta > 0)) {
    return Invalid(mechanism_pos_,
                   "mechanism 'gaussian' needs delta > 0 in OPTIONS (it is "
                   "(epsilon, delta)-DP); use 'laplace' for delta = 0");
  }
  return absl::OkStatus();
}

absl::Status Analyzer::MechanismOption(const DpOption& o) {
  std::string word;
  if (o.value.kind == Expr::Kind::kColumn && o.value.qualifier.empty()) {
    word = o.value.name;
  } else if (o.value.kind == Expr::Kind::kString) {
    word = absl::AsciiStrToLower(o.value.text);
  }
  if (word == "laplace") {
    mechanism_ = query::MechanismKind::kLaplace;
  } else if (word == "gaussian") {
    mechanism_ = query::MechanismKind::kGaussian;
  } else {
    return Invalid(o.value.pos, "mechanism must be 'laplace' or 'gaussian'");
  }
  mechanism_pos_ = o.pos;
  return absl::OkStatus();
}

absl::Status Analyzer::MaxRowsOption(const DpOption& o) {
  ASSIGN_OR_RETURN(max_rows_, RowCountOption(o));
  return absl::OkStatus();
}

absl::StatusOr<int> Analyzer::RowCountOption(const DpOption& o) {
  absl::optional<double> v = NumberOf(o.value);
  if (!v || *v != std::floor(*v) || *v < 1 || *v > kMaxRowsPerGroup) {
    return Invalid(o.value.pos,
                   absl::StrCat(o.name, " must be a whole number in [1, ", kMaxRowsPerGroup, "]"));
  }
  return static_cast<int>(*v);
}

absl::Status Analyzer::MaxRowsContributedOption(const DpOption& o) {
  ASSIGN_OR_RETURN(max_rows_contributed_, RowCountOption(o));
  max_rows_contributed_pos_ = o.pos;
  return absl::OkStatus();
}

}  // namespace dpq::sql::internal
