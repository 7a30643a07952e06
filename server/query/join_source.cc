#include "server/query/join_source.h"

#include <map>
#include <memory>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/query/dataset_schema.h"

namespace dpq::query {
namespace {

std::string EqualityText(const JoinEquality& e) {
  return absl::StrCat(e.left_table, ".", e.left_column, "=", e.right_table, ".", e.right_column);
}

absl::Status Refuse(JoinRefusal* refusal, int table, std::string message) {
  if (refusal != nullptr) refusal->table = table;
  return absl::InvalidArgumentError(std::move(message));
}

// The first private table (the joined rows' privacy unit is its unit); -1 when none.
int AnchorOf(const std::vector<DatasetSchema>& schemas) {
  for (size_t i = 0; i < schemas.size(); ++i) {
    if (!schemas[i].is_public) return static_cast<int>(i);
  }
  return -1;
}

absl::Status CheckPopulations(const std::vector<DatasetSchema>& schemas, int anchor,
                              JoinRefusal* refusal) {
  const DatasetSchema& first = schemas[anchor];
  for (size_t i = 0; i < schemas.size(); ++i) {
    const DatasetSchema& s = schemas[i];
    if (s.is_public || s.population_id == first.population_id) continue;
    return Refuse(refusal, static_cast<int>(i),
                  absl::StrCat("datasets ", first.name, " and ", s.name, " belong to populations ",
                               first.population, " and ", s.population,
                               "; a query may read one population (one ledger pays for it)"));
  }
  return absl::OkStatus();
}

// One condition of the join (on[table - 1]): a private table joins a private one on both privacy
// units, so a joined row still holds one person's rows only; a public table joins on any key.
// The anchor (the first private table) may join a public table on any key: no private row precedes
// it.
absl::Status CheckEquality(const JoinRequest& request, const std::vector<DatasetSchema>& schemas,
                           int anchor, int table, JoinRefusal* refusal) {
  const JoinEquality& e = request.on[table - 1];
  if (e.right_table != table || e.left_table < 0 || e.left_table >= table) {
    return Refuse(refusal, table,
                  "a join condition must compare the joined table with an earlier one");
  }
  const DatasetSchema& left = schemas[e.left_table];
  const DatasetSchema& right = schemas[e.right_table];
  const ColumnSchema* l = left.FindColumn(e.left_column);
  const ColumnSchema* r = right.FindColumn(e.right_column);
  if (l == nullptr || r == nullptr) {
    const bool left_missing = l == nullptr;
    return Refuse(
        refusal, table,
        absl::StrCat("column ", left_missing ? e.left_column : e.right_column,
                     " does not exist in dataset ", left_missing ? left.name : right.name));
  }
  if (!left.is_public && !right.is_public) {
    if (e.left_column != left.privacy_unit || e.right_column != right.privacy_unit) {
      const std::string& off = e.left_column != left.privacy_unit ? e.left_column : e.right_column;
      return Refuse(refusal, table,
                    absl::StrCat("a join of private datasets must be on their privacy units (",
                                 left.name, ".", left.privacy_unit, " = ", right.name, ".",
                                 right.privacy_unit, "): joining on ", off,
                                 " would pair rows of different people and break the per-person "
                                 "bound"));
    }
  } else if (!right.is_public && table != anchor) {
    return Refuse(refusal, table,
                  absl::StrCat("private dataset ", right.name,
                               " must join another private dataset on their privacy units: "
                               "joined through public table ",
                               left.name, " its rows would pair with other people's"));
  }
  if (l->is_calendar() || r->is_calendar()) {
    // A join would compare stored values unclamped; dates are read only through the flag
    // interface's clamped --where and --group-by buckets for now.
    return Refuse(refusal, table,
                  absl::StrCat("join keys cannot be date or timestamp columns (",
                               (l->is_calendar() ? l : r)->name, ")"));
  }
  if (l->type != r->type) {
    return Refuse(refusal, table,
                  absl::StrCat("join keys ", left.name, ".", l->name, " (", ColumnTypeName(l->type),
                               ") and ", right.name, ".", r->name, " (", ColumnTypeName(r->type),
                               ") have different types"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string JoinRequest::CanonicalText() const {
  std::string out;
  for (const Table& t : tables) absl::StrAppend(&out, t.dataset, " ", t.alias, ";");
  for (const JoinEquality& e : on) absl::StrAppend(&out, EqualityText(e), ";");
  return out;
}

std::string JoinSource::CanonicalText() const {
  std::string out;
  for (const JoinedTable& t : tables) {
    absl::StrAppend(&out, t.dataset_id, "@", t.version, " ", t.alias, ";");
  }
  for (const JoinEquality& e : on) absl::StrAppend(&out, EqualityText(e), ";");
  return out;
}

std::string JoinedColumnName(const std::string& alias, const std::string& column) {
  return absl::StrCat(alias, "__", column);
}

absl::StatusOr<DatasetSchema> ResolveJoin(const JoinRequest& request,
                                          const std::vector<DatasetSchema>& schemas,
                                          JoinRefusal* refusal) {
  if (schemas.size() != request.tables.size() || request.on.size() + 1 != request.tables.size()) {
    return absl::InternalError("join: one schema per table and one condition per joined table");
  }
  const int anchor = AnchorOf(schemas);
  if (anchor < 0) {
    return Refuse(refusal, -1,
                  "a public table is only ever joined: FROM needs a private dataset to join it to");
  }
  RETURN_IF_ERROR(CheckPopulations(schemas, anchor, refusal));
  std::set<std::string> aliases;
  for (size_t i = 0; i < schemas.size(); ++i) {
    if (!aliases.insert(request.tables[i].alias).second) {
      return Refuse(refusal, static_cast<int>(i),
                    absl::StrCat("table name ", request.tables[i].alias,
                                 " is used twice: give each joined table its own alias"));
    }
    if (i > 0)
      RETURN_IF_ERROR(CheckEquality(request, schemas, anchor, static_cast<int>(i), refusal));
    if (!schemas[i].shards.empty()) {
      // A join would read the shards' raw rows into the coordinator: not before it runs on them.
      if (refusal != nullptr) refusal->table = static_cast<int>(i);
      return absl::UnimplementedError(absl::StrCat(
          "dataset ", schemas[i].name, " is sharded over ", absl::StrJoin(schemas[i].shards, ", "),
          ", and joins of a sharded dataset do not run yet: query it on its own"));
    }
  }
  DatasetSchema out = schemas[anchor];
  out.columns.clear();
  out.has_row_rank = false;
  auto source = std::make_shared<JoinSource>();
  source->on = request.on;
  std::set<std::string> names;
  for (size_t i = 0; i < schemas.size(); ++i) {
    const DatasetSchema& s = schemas[i];
    const std::string& alias = request.tables[i].alias;
    source->tables.push_back({s.id, s.version, s.name, alias, s.is_public});
    for (const ColumnSchema& c : s.columns) {
      // Another private table's unit equals the anchor's on every joined row: one column.
      if (!s.is_public && static_cast<int>(i) != anchor && c.name == s.privacy_unit) continue;
      ColumnSchema joined = c;
      joined.name = JoinedColumnName(alias, c.name);
      if (!names.insert(joined.name).second) {
        return Refuse(refusal, static_cast<int>(i),
                      absl::StrCat("joined column name ", joined.name,
                                   " is ambiguous: choose other table aliases"));
      }
      source->columns.push_back({joined.name, static_cast<int>(i), c.name});
      out.columns.push_back(std::move(joined));
    }
  }
  out.privacy_unit = JoinedColumnName(request.tables[anchor].alias, schemas[anchor].privacy_unit);
  out.join = std::move(source);
  return out;
}

std::string JoinSource::WrittenNames(absl::string_view text) const {
  std::map<std::string, std::string, std::less<>> written;
  for (const JoinedColumn& c : columns) {
    written[c.name] = absl::StrCat(tables[c.table].alias, ".", c.column);
  }
  // Identifiers are replaced whole: `p__age2` is not `p__age` followed by "2".
  const auto in_identifier = [](char c) { return absl::ascii_isalnum(c) || c == '_'; };
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (!in_identifier(text[i])) {
      out.push_back(text[i++]);
      continue;
    }
    size_t end = i;
    while (end < text.size() && in_identifier(text[end])) ++end;
    const absl::string_view word = text.substr(i, end - i);
    const auto found = written.find(word);
    absl::StrAppend(&out, found != written.end() ? absl::string_view(found->second) : word);
    i = end;
  }
  return out;
}

absl::Status JoinSource::WithWrittenNames(const absl::Status& status) const {
  if (status.ok()) return status;
  absl::Status out(status.code(), WrittenNames(status.message()));
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

}  // namespace dpq::query
