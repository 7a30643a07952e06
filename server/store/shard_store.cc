#include "server/store/shard_store.h"

#include <pqxx/pqxx>

#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/store/admin_log.h"
#include "server/store/array_literal.h"
#include "server/store/postgres/pqxx_status.h"
#include "server/store/shard_url.h"

namespace dpq::store {
namespace {

// Columns read by ShardFromRow.
constexpr char kShardColumns[] =
    "id, name, host, port, dbname, username, server_version_num, "
    "to_char(added_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')";

Shard ShardFromRow(const pqxx::row& r) {
  Shard s;
  s.id = r[0].as<int64_t>();
  s.name = r[1].as<std::string>();
  s.host = r[2].as<std::string>();
  s.port = r[3].as<int>();
  s.dbname = r[4].as<std::string>();
  s.user = r[5].as<std::string>();
  s.server_version_num = r[6].as<int>();
  s.added_at = r[7].as<std::string>();
  return s;
}

absl::Status ShardNotFound(const std::string& name) {
  return absl::NotFoundError(
      absl::StrCat("shard ", name, " not found (`dpqctl shard list` lists them)"));
}

std::string HealthTable(const pqxx::transaction_base& tx, const std::string& shard) {
  return "dpq_shards." + tx.quote_name("health_" + shard);
}

// The shard's side of placing a dataset's partition there (dpq_shard.partitions): a row inserted
// creates the table dpq_shard.<table_name> with the listed columns, a row deleted drops it. The
// coordinator writes these rows through postgres_fdw (ShardPartitionsTable), so the table is
// created in the same remote transaction as the rows loaded into it, and vanishes with it when
// the coordinator's transaction aborts. Names are checked and quoted (%I) and types come from a
// fixed list, so nothing written through the foreign table can inject SQL.
constexpr char kShardPartitionsSql[] = R"sql(
CREATE TABLE IF NOT EXISTS dpq_shard.partitions (
  table_name   text PRIMARY KEY CHECK (table_name ~ '^ds_[0-9]{1,19}$'),
  column_names text[] NOT NULL,
  column_types text[] NOT NULL CHECK (column_types <@ ARRAY['bigint', 'double precision', 'text',
                                        'date', 'timestamp', 'integer']::text[]),
  CHECK (cardinality(column_names) = cardinality(column_types) AND cardinality(column_names) > 0)
);
CREATE OR REPLACE FUNCTION dpq_shard.place_partition() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  IF TG_OP = 'INSERT' THEN
    EXECUTE format('CREATE TABLE dpq_shard.%I (%s)', NEW.table_name,
                   (SELECT string_agg(format('%I %s', n, t), ', ' ORDER BY i)
                      FROM unnest(NEW.column_names, NEW.column_types) WITH ORDINALITY AS c(n, t, i)));
    RETURN NEW;
  END IF;
  EXECUTE format('DROP TABLE IF EXISTS dpq_shard.%I', OLD.table_name);
  RETURN OLD;
END
$f$;
DROP TRIGGER IF EXISTS place_partition ON dpq_shard.partitions;
CREATE TRIGGER place_partition AFTER INSERT OR DELETE ON dpq_shard.partitions
  FOR EACH ROW EXECUTE FUNCTION dpq_shard.place_partition();
)sql";

// The first line of a server or libpq message, without its severity prefix (DETAIL lines, where
// PostgreSQL puts values, are dropped).
std::string FirstLine(const char* what) {
  absl::string_view text(what == nullptr ? "" : what);
  text = text.substr(0, text.find('\n'));
  for (absl::string_view prefix : {"ERROR:  ", "FATAL:  "}) {
    if (absl::ConsumePrefix(&text, prefix)) break;
  }
  return std::string(absl::StripAsciiWhitespace(text));
}

// `status` with `secret` taken out of its message; code and payloads kept.
absl::Status Scrubbed(const absl::Status& status, const std::string& secret) {
  if (status.ok() || secret.empty()) return status;
  absl::Status out(status.code(), WithoutSecret(std::string(status.message()), secret));
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

// Connects to the shard directly, checks its version and creates the view dpq_shard.health.
// Returns its server_version_num.
absl::StatusOr<int> PrepareShard(const ShardUrl& u) {
  const std::string where = absl::StrCat("the shard at ", ShardAddress(u.host, u.port),
                                         " (database ", u.dbname, ", user ", u.user, ")");
  try {
    pqxx::connection conn(ShardConninfo(u, 5, "dpqd shard add"));
    pqxx::work tx(conn);
    const int version = tx.exec1("SELECT current_setting('server_version_num')::int")[0].as<int>();
    if (version < 150000) {
      return absl::FailedPreconditionError(absl::StrCat(where,
                                                        " runs PostgreSQL with server_version_num ",
                                                        version, ": shards need 15 or later"));
    }
    tx.exec0("CREATE SCHEMA IF NOT EXISTS dpq_shard");
    tx.exec0(
        "CREATE OR REPLACE VIEW dpq_shard.health AS "
        "SELECT current_setting('server_version_num')::int AS version_num");
    tx.exec0(kShardPartitionsSql);
    tx.commit();
    return version;
  } catch (const pqxx::broken_connection& e) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot connect to ", where, ": ", WithoutSecret(FirstLine(e.what()), u.password),
        " (check that the server runs and listens there, that its pg_hba.conf admits dpqd's host "
        "and user, and the user and password in the URL)"));
  } catch (const pqxx::insufficient_privilege&) {
    return absl::FailedPreconditionError(
        absl::StrCat("user ", u.user, " may not create the schema dpq_shard on ", where,
                     ": GRANT CREATE ON DATABASE ", u.dbname, " TO ", u.user, " on the shard"));
  } catch (const std::exception& e) {
    return Scrubbed(StatusFromPqxx(e, absl::StrCat("preparing ", where)), u.password);
  }
}

// CREATE SERVER, the two user mappings and the health table; the caller's transaction.
void CreateCoordinatorObjects(pqxx::work& tx, const std::string& name, const ShardUrl& u) {
  const std::string server = tx.quote_name(ShardServerName(name));
  tx.exec0("CREATE EXTENSION IF NOT EXISTS postgres_fdw");
  // connect_timeout: postgres_fdw connects inside the statement, where statement_timeout cannot
  // interrupt it (PostgreSQL 15); 2 s is the least libpq honours.
  std::string options = absl::StrCat(
      "host ", tx.quote(u.host), ", port ", tx.quote(std::to_string(u.port)), ", dbname ",
      tx.quote(u.dbname), ", async_capable 'true', fetch_size '10000', connect_timeout '2'");
  if (!u.sslmode.empty()) absl::StrAppend(&options, ", sslmode ", tx.quote(u.sslmode));
  tx.exec0(absl::StrCat("CREATE SERVER ", server, " FOREIGN DATA WRAPPER postgres_fdw OPTIONS (",
                        options, ")"));
  // The password lives here only (pg_user_mapping: readable by superusers and the mapped user).
  std::string mapping = absl::StrCat("OPTIONS (user ", tx.quote(u.user));
  if (!u.password.empty()) absl::StrAppend(&mapping, ", password ", tx.quote(u.password));
  mapping += ")";
  tx.exec0(absl::StrCat("CREATE USER MAPPING FOR CURRENT_USER SERVER ", server, " ", mapping));
  // Scans run as dpq_scan (SET LOCAL ROLE): postgres_fdw then connects with dpq_scan's mapping.
  tx.exec0(absl::StrCat("CREATE USER MAPPING FOR dpq_scan SERVER ", server, " ", mapping));
  const std::string table = HealthTable(tx, name);
  tx.exec0(absl::StrCat("CREATE FOREIGN TABLE ", table, " (version_num integer) SERVER ", server,
                        " OPTIONS (schema_name 'dpq_shard', table_name 'health')"));
  tx.exec0(absl::StrCat("GRANT SELECT ON ", table, " TO dpq_scan"));
  tx.exec0(absl::StrCat("CREATE FOREIGN TABLE ", ShardPartitionsTable(name),
                        " (table_name text, column_names text[], column_types text[]) SERVER ",
                        server, " OPTIONS (schema_name 'dpq_shard', table_name 'partitions')"));
}

// Reads the health table as dpqd's role, then as dpq_scan, inside the add's transaction.
absl::Status CheckThroughCoordinator(pqxx::connection& c, pqxx::work& tx, const std::string& name,
                                     const ShardUrl& u) {
  const std::string table = HealthTable(tx, name);
  const char* as = "dpqd's database role";
  try {
    tx.exec1(absl::StrCat("SELECT version_num FROM ", table));
    as = "dpq_scan";
    tx.exec0("SET LOCAL ROLE dpq_scan");
    tx.exec1(absl::StrCat("SELECT version_num FROM ", table));
    tx.exec0("RESET ROLE");
    return absl::OkStatus();
  } catch (const pqxx::sql_error& e) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the coordinator cannot read shard ", name, " at ", ShardAddress(u.host, u.port),
        " through postgres_fdw as ", as, " (SQLSTATE ", e.sqlstate(),
        "): ", WithoutSecret(FirstLine(e.what()), u.password),
        " (the shard must be reachable from the coordinator's host; for a role that is not a "
        "superuser, such as dpq_scan, it must ask for the password: md5 or scram-sha-256 in its "
        "pg_hba.conf)"));
  } catch (const pqxx::broken_connection& e) {
    if (!c.is_open()) throw;
    return absl::FailedPreconditionError(absl::StrCat(
        "the coordinator cannot reach shard ", name, " at ", ShardAddress(u.host, u.port),
        " through postgres_fdw as ", as, ": ", WithoutSecret(FirstLine(e.what()), u.password),
        " (the shard must be reachable from the coordinator's host, not only from dpqd's)"));
  }
}

}  // namespace

std::string ShardServerName(const std::string& shard) { return "dpq_shard_" + shard; }

std::string ShardPartitionsTable(const std::string& shard) {
  return "dpq_shards.partitions_" + shard;
}

absl::Status ValidateShardName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 40 && absl::ascii_islower(name[0]);
  for (char c : name) {
    ok = ok && (absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_');
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("name must match ^[a-z][a-z0-9_]{0,39}$, got ", QuoteForMessage(name)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Shard> ShardStore::Add(const std::string& name, const std::string& url,
                                      const AdminAction* log) {
  RETURN_IF_ERROR(ValidateShardName(name));
  ASSIGN_OR_RETURN(ShardUrl u, ParseShardUrl(url));
  const absl::Status taken = db_->Run("check shard name", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    if (!tx.exec_params("SELECT 1 FROM shards WHERE name = $1 AND removed_at IS NULL", name)
             .empty()) {
      return absl::AlreadyExistsError(
          absl::StrCat("shard ", name, " already exists (`dpqctl shard list` lists them)"));
    }
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(taken);
  ASSIGN_OR_RETURN(const int version, PrepareShard(u));
  Shard added;
  absl::Status status = db_->RunOnce("add shard", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    if (!tx.exec_params("SELECT 1 FROM pg_foreign_server WHERE srvname = $1", ShardServerName(name))
             .empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the coordinator already has a foreign server ", ShardServerName(name),
                       " that no live shard owns: drop it (DROP SERVER ", ShardServerName(name),
                       " CASCADE) or "
                       "choose another name"));
    }
    CreateCoordinatorObjects(tx, name, u);
    RETURN_IF_ERROR(CheckThroughCoordinator(c, tx, name, u));
    added = ShardFromRow(tx.exec_params1(
        absl::StrCat("INSERT INTO shards (name, host, port, dbname, username, server_version_num) "
                     "VALUES ($1, $2, $3, $4, $5, $6) RETURNING ",
                     kShardColumns),
        name, u.host, u.port, u.dbname, u.user, version));
    if (log != nullptr) AppendAdminAction(tx, *log);
    tx.commit();
    return absl::OkStatus();
  });
  if (status.code() == absl::StatusCode::kAlreadyExists) {
    return absl::AlreadyExistsError(
        absl::StrCat("shard ", name, " already exists (`dpqctl shard list` lists them)"));
  }
  if (status.code() == absl::StatusCode::kPermissionDenied ||
      (status.code() == absl::StatusCode::kInternal &&
       absl::StrContains(status.message(), "42501"))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "dpqd's database role may not create the shard's objects on the coordinator (",
        WithoutSecret(std::string(status.message()), u.password),
        "): run CREATE EXTENSION postgres_fdw as a superuser and GRANT USAGE ON FOREIGN DATA "
        "WRAPPER postgres_fdw to dpqd's role"));
  }
  RETURN_IF_ERROR(Scrubbed(status, u.password));
  return added;
}

absl::StatusOr<std::vector<Shard>> ShardStore::List() {
  std::vector<Shard> out;
  RETURN_IF_ERROR(db_->Run("list shards", [&](pqxx::connection& c) {
    out.clear();
    pqxx::read_transaction tx(c);
    for (const pqxx::row& r : tx.exec(absl::StrCat(
             "SELECT ", kShardColumns, " FROM shards WHERE removed_at IS NULL ORDER BY name"))) {
      out.push_back(ShardFromRow(r));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::Status ShardStore::Remove(const std::string& name, const AdminAction* log) {
  RETURN_IF_ERROR(ValidateShardName(name));
  return db_->Run("remove shard", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    const pqxx::result r = tx.exec_params(
        "SELECT id FROM shards WHERE name = $1 AND removed_at IS NULL FOR UPDATE", name);
    if (r.empty()) return ShardNotFound(name);
    // A shard holding a partition of a live dataset stays: its rows are part of the answers. The
    // DROP SERVER below has no CASCADE: it fails rather than drop a foreign table it does not know.
    const pqxx::result used = tx.exec_params(
        "SELECT coalesce(string_agg(d.name, ', ' ORDER BY d.name), '') FROM dataset_shards x "
        "JOIN datasets d ON d.id = x.dataset_id WHERE x.shard_id = $1 AND d.dropped_at IS NULL",
        r[0][0].as<int64_t>());
    if (!used[0][0].as<std::string>().empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("shard ", name, " holds rows of dataset(s) ", used[0][0].as<std::string>(),
                       ": drop them first (`dpqctl dataset drop NAME`)"));
    }
    const std::string server = tx.quote_name(ShardServerName(name));
    tx.exec0(absl::StrCat("DROP FOREIGN TABLE IF EXISTS ", HealthTable(tx, name)));
    tx.exec0(absl::StrCat("DROP FOREIGN TABLE IF EXISTS ", ShardPartitionsTable(name)));
    // Every mapping of the server, also one made for a login role dpqd no longer uses.
    for (const pqxx::row& m : tx.exec_params(
             "SELECT usename FROM pg_user_mappings WHERE srvname = $1", ShardServerName(name))) {
      const std::string user = m[0].as<std::string>();
      tx.exec0(absl::StrCat("DROP USER MAPPING FOR ",
                            user == "public" ? std::string("PUBLIC") : tx.quote_name(user),
                            " SERVER ", server));
    }
    tx.exec0(absl::StrCat("DROP SERVER IF EXISTS ", server));
    tx.exec_params0("UPDATE shards SET removed_at = now() WHERE id = $1", r[0][0].as<int64_t>());
    if (log != nullptr) AppendAdminAction(tx, *log);
    tx.commit();
    return absl::OkStatus();
  });
}

ShardProbe ShardStore::ProbeOne(const std::string& name) {
  ShardProbe probe;
  probe.name = name;
  absl::Time started = absl::Now();
  const absl::Status status = db_->Run("probe shard", [&](pqxx::connection& c) -> absl::Status {
    pqxx::read_transaction tx(c);
    tx.exec0(
        absl::StrCat("SET LOCAL statement_timeout = ", absl::ToInt64Milliseconds(kProbeTimeout)));
    started = absl::Now();
    try {
      const pqxx::row r = tx.exec_params1(
          "SELECT version_num, error_state, error_message FROM dpq_shards.probe($1)", name);
      if (r[1].is_null()) {
        probe.version_num = r[0].as<int>();
        probe.up = true;
      } else {
        probe.error = absl::UnavailableError(absl::StrCat("shard ", name, " is down (SQLSTATE ",
                                                          r[1].as<std::string>(),
                                                          "): ", FirstLine(r[2].c_str())));
      }
    } catch (const pqxx::sql_error& e) {  // the statement_timeout, or the function is missing
      probe.error = absl::UnavailableError(absl::StrCat("shard ", name, " is down (SQLSTATE ",
                                                        e.sqlstate(), "): ", FirstLine(e.what())));
    }
    probe.seconds = absl::ToDoubleSeconds(absl::Now() - started);
    return absl::OkStatus();
  });
  if (!status.ok()) {
    probe.up = false;
    probe.seconds = absl::ToDoubleSeconds(absl::Now() - started);
    probe.error =
        absl::UnavailableError(absl::StrCat("shard ", name, " not probed: ", status.message()));
  }
  return probe;
}

absl::StatusOr<ShardProbe> ShardStore::Probe(const std::string& name) {
  RETURN_IF_ERROR(ValidateShardName(name));
  bool live = false;
  RETURN_IF_ERROR(db_->Run("find shard", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    live = !tx.exec_params("SELECT 1 FROM shards WHERE name = $1 AND removed_at IS NULL", name)
                .empty();
    return absl::OkStatus();
  }));
  if (!live) return ShardNotFound(name);
  return ProbeOne(name);
}

absl::Status ShardStore::CheckUp(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    ShardProbe probe = ProbeOne(name);
    if (!probe.up) return probe.error;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ShardUrl>> ShardStore::ConnectionUrls(
    const std::vector<std::string>& names) {
  // Each shard's name with its foreign server's (ShardServerName, the one place that names it).
  ArrayLiteral wanted;
  ArrayLiteral servers;
  for (const std::string& name : names) {
    wanted.AddText(name);
    servers.AddText(ShardServerName(name));
  }
  std::map<std::string, ShardUrl> found;
  RETURN_IF_ERROR(db_->Run("reading the shards' connections", [&](pqxx::connection& c) {
    found.clear();
    pqxx::nontransaction tx(c);  // one statement: its own snapshot, no BEGIN and COMMIT
    const pqxx::result rows = tx.exec_params(
        "SELECT s.name, s.host, s.port, s.dbname, s.username, "
        "  (SELECT option_value FROM pg_options_to_table(m.umoptions) "
        "   WHERE option_name = 'password'), "
        "  (SELECT option_value FROM pg_options_to_table(f.srvoptions) "
        "   WHERE option_name = 'sslmode') "
        "FROM unnest($1::text[], $2::text[]) AS w(name, server) "
        "JOIN shards s ON s.name = w.name AND s.removed_at IS NULL "
        "JOIN pg_foreign_server f ON f.srvname = w.server "
        "JOIN pg_user_mappings m ON m.srvid = f.oid AND m.usename = current_user",
        wanted.str(), servers.str());
    for (const pqxx::row& r : rows) {
      ShardUrl& u = found[r[0].as<std::string>()];
      u.host = r[1].as<std::string>();
      u.port = r[2].as<int>();
      u.dbname = r[3].as<std::string>();
      u.user = r[4].as<std::string>();
      if (!r[5].is_null()) u.password = r[5].as<std::string>();
      if (!r[6].is_null()) u.sslmode = r[6].as<std::string>();
    }
    return absl::OkStatus();
  }));
  std::vector<ShardUrl> out;
  for (const std::string& name : names) {
    auto it = found.find(name);
    if (it == found.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("shard ", name,
                       " has no live registration with a user mapping for dpqd's role "
                       "(`dpqctl shard list`; remove the shard and add it again)"));
    }
    out.push_back(it->second);
  }
  return out;
}

absl::StatusOr<std::vector<ShardProbe>> ShardStore::ProbeAll() {
  ASSIGN_OR_RETURN(std::vector<Shard> shards, List());
  std::vector<ShardProbe> out;
  out.reserve(shards.size());
  for (const Shard& s : shards) out.push_back(ProbeOne(s.name));
  return out;
}

}  // namespace dpq::store
