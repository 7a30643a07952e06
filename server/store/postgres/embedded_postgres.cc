#include "server/store/postgres/embedded_postgres.h"

#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pqxx/pqxx>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "server/base/logging.h"
#include "server/base/status_macros.h"
#include "server/store/postgres/pqxx_status.h"

namespace dpq::store {
namespace {

namespace fs = std::filesystem;

// The port only names the socket file (.s.PGSQL.<port>); every cluster has its own socket directory,
// so all of them can use the default.
constexpr int kPort = 5432;
constexpr char kSuperuser[] = "postgres";
// sun_path is 108 bytes including the terminating NUL.
constexpr size_t kMaxSocketPath = 107;
// How long Start() keeps retrying while the remains of a crashed postmaster (orphaned backends
// still attached to the old shared memory segment) block a new one.
constexpr auto kStaleRetryWindow = std::chrono::seconds(15);

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uintmax_t FileSizeOrZero(const std::string& path) {
  std::error_code ec;
  uintmax_t size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

// A postgresql.conf string literal.
std::string QuoteConfValue(const std::string& value) {
  return absl::StrCat("'", absl::StrReplaceAll(value, {{"\\", "\\\\"}, {"'", "''"}}), "'");
}

bool IsValidSettingName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(absl::ascii_isalnum(c) || c == '_' || c == '.')) return false;
  }
  return true;
}

enum class LockOwner { kNone, kStale, kLiveOurs };

// Decides whether the pid recorded in a Postgres lock file (postmaster.pid or the socket's
// .s.PGSQL.N.lock) belongs to a live postmaster of the cluster in `pg_dir`. Postgres itself only
// asks kill(pid, 0), which is fooled by zombies (our PID 1 may not reap a killed postmaster) and by
// pids reused after a container restart; both would block a restart forever.
LockOwner InspectLockFile(const std::string& lock_path, const std::string& pg_dir_real) {
  std::string content = ReadFileOrEmpty(lock_path);
  std::error_code ec;
  if (content.empty() && !fs::exists(lock_path, ec)) return LockOwner::kNone;
  int64_t pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(content.substr(0, content.find('\n'))), &pid) ||
      pid <= 0) {
    return LockOwner::kStale;
  }
  // postgres writes -pid for a standalone backend; treat the same.
  const std::string proc = absl::StrCat("/proc/", pid);
  std::string stat = ReadFileOrEmpty(proc + "/stat");
  if (stat.empty()) return LockOwner::kStale;  // no such process
  size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) return LockOwner::kStale;
  char state = stat[close_paren + 2];
  if (state == 'Z' || state == 'X') return LockOwner::kStale;
  std::string comm = std::string(absl::StripAsciiWhitespace(ReadFileOrEmpty(proc + "/comm")));
  if (comm != "postgres" && comm != "postmaster") return LockOwner::kStale;
  char cwd[4096];
  ssize_t n = readlink((proc + "/cwd").c_str(), cwd, sizeof(cwd) - 1);
  if (n > 0) {
    cwd[n] = '\0';
    if (pg_dir_real != cwd) return LockOwner::kStale;  // a postgres of another cluster
  }
  // cwd unreadable (another user's process and we are not root): assume it is ours and let
  // pg_ctl / postgres decide.
  return LockOwner::kLiveOurs;
}

// The first directory on the way to `path` (inclusive) that `user` cannot search according to the
// mode bits, or "" if none. Only used to make an error message precise.
std::string FirstUnsearchableAncestor(const std::string& path, const RunAsUser& user) {
  fs::path p(path);
  std::vector<fs::path> chain;
  for (fs::path cur = p; !cur.empty(); cur = cur.parent_path()) {
    chain.push_back(cur);
    if (cur == cur.parent_path()) break;
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    struct stat st;
    if (stat(it->c_str(), &st) != 0) continue;
    bool ok = false;
    if (st.st_uid == user.uid) {
      ok = (st.st_mode & S_IXUSR) != 0;
    } else if (std::find(user.groups.begin(), user.groups.end(), st.st_gid) != user.groups.end() ||
               st.st_gid == user.gid) {
      ok = (st.st_mode & S_IXGRP) != 0;
    } else {
      ok = (st.st_mode & S_IXOTH) != 0;
    }
    if (!ok) return it->string();
  }
  return "";
}

absl::StatusOr<RunAsUser> LookUpUid(uid_t uid) {
  std::vector<char> buf(16384);
  struct passwd pwd;
  struct passwd* found = nullptr;
  if (getpwuid_r(uid, &pwd, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return absl::NotFoundError(absl::StrCat("no system user with uid ", uid));
  }
  return LookUpUser(pwd.pw_name);
}

absl::Status MakeDir(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create directory ", path, ": ", strerror(errno)));
  }
  if (chmod(path.c_str(), mode) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot chmod ", path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

std::string PercentEncodeUriComponent(const std::string& value) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

absl::StatusOr<std::unique_ptr<EmbeddedPostgres>> EmbeddedPostgres::Start(
    EmbeddedPostgresOptions options) {
  std::unique_ptr<EmbeddedPostgres> pg(new EmbeddedPostgres(std::move(options)));
  RETURN_IF_ERROR(pg->Prepare());
  RETURN_IF_ERROR(pg->InitDbIfNeeded());
  RETURN_IF_ERROR(pg->WriteConfig());
  RETURN_IF_ERROR(pg->StartServer());
  absl::Status created = pg->CreateDatabaseIfMissing();
  if (!created.ok()) {
    absl::Status stopped = pg->Stop();
    if (!stopped.ok()) LogWarning(stopped.ToString());
    return created;
  }
  LogInfo(absl::StrCat("embedded PostgreSQL running in ", pg->pg_dir_, ", socket in ",
                       pg->socket_dir_));
  return pg;
}

EmbeddedPostgres::~EmbeddedPostgres() {
  if (!running_) return;
  absl::Status s = Stop();
  if (!s.ok()) LogError(absl::StrCat("stopping embedded PostgreSQL: ", s.ToString()));
}

std::string EmbeddedPostgres::ConnectionUrlFor(const std::string& database) const {
  return absl::StrCat("postgresql:///", PercentEncodeUriComponent(database),
                      "?host=", PercentEncodeUriComponent(socket_dir_), "&port=", kPort,
                      "&user=", kSuperuser);
}

absl::StatusOr<pid_t> EmbeddedPostgres::postmaster_pid() const {
  std::string content = ReadFileOrEmpty(pg_dir_ + "/postmaster.pid");
  int64_t pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(content.substr(0, content.find('\n'))), &pid) ||
      pid <= 0) {
    return absl::NotFoundError(absl::StrCat("no postmaster.pid in ", pg_dir_));
  }
  return static_cast<pid_t>(pid);
}

absl::StatusOr<ProcessResult> EmbeddedPostgres::Run(const std::vector<std::string>& argv) const {
  return RunProcess(argv, run_as_);
}

absl::Status EmbeddedPostgres::ChownToRunAs(const std::string& path) const {
  if (!run_as_.has_value()) return absl::OkStatus();
  if (lchown(path.c_str(), run_as_->uid, run_as_->gid) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot chown ", path, " to ", run_as_->name, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status EmbeddedPostgres::Prepare() {
  RETURN_IF_ERROR(ValidateOptions());
  RETURN_IF_ERROR(ResolveDataDir());
  if (geteuid() == 0) {
    RETURN_IF_ERROR(ChooseRunAsUser());
    RETURN_IF_ERROR(MakeDataDirReachable());
  }

  // Socket and log directories belong to the server user; 0700 because authentication is `trust`:
  // only that user and root may connect.
  RETURN_IF_ERROR(MakeDir(socket_dir_, 0700));
  RETURN_IF_ERROR(ChownToRunAs(socket_dir_));
  RETURN_IF_ERROR(MakeDir(log_dir_, 0700));
  RETURN_IF_ERROR(ChownToRunAs(log_dir_));
  return absl::OkStatus();
}

absl::Status EmbeddedPostgres::ValidateOptions() const {
  if (options_.data_dir.empty()) return absl::InvalidArgumentError("data_dir must not be empty");
  if (options_.database.empty()) return absl::InvalidArgumentError("database must not be empty");
  if (options_.timeout_seconds <= 0) {
    return absl::InvalidArgumentError("timeout_seconds must be positive");
  }
  for (const auto& [name, value] : options_.settings) {
    if (!IsValidSettingName(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("settings: invalid setting name \"", name, "\""));
    }
  }
  for (const char* tool : {"initdb", "pg_ctl"}) {
    std::string path = absl::StrCat(options_.bin_dir, "/", tool);
    if (access(path.c_str(), X_OK) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("bin_dir: ", path, " is not executable (is postgresql-15 installed?)"));
    }
  }
  return absl::OkStatus();
}

absl::Status EmbeddedPostgres::ResolveDataDir() {
  std::error_code ec;
  fs::create_directories(options_.data_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("data_dir: cannot create ", options_.data_dir, ": ", ec.message()));
  }
  fs::path canonical = fs::canonical(options_.data_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("data_dir: cannot resolve ", options_.data_dir, ": ", ec.message()));
  }
  data_dir_ = canonical.string();
  for (char c : data_dir_) {
    // The path goes into postgresql.conf (unix_socket_directories is a comma/quote-delimited list).
    if (c == '\'' || c == '"' || c == ',' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      return absl::InvalidArgumentError(
          absl::StrCat("data_dir: \"", data_dir_,
                       "\" must not contain quotes, commas, backslashes or control characters"));
    }
  }
  pg_dir_ = data_dir_ + "/pg";
  socket_dir_ = data_dir_ + "/run";
  log_dir_ = data_dir_ + "/log";
  log_file_ = log_dir_ + "/postgres.log";
  const std::string socket_path = absl::StrCat(socket_dir_, "/.s.PGSQL.", kPort, ".lock");
  if (socket_path.size() > kMaxSocketPath) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data_dir: \"", data_dir_, "\" is too long for a unix socket path (", socket_path.size(),
        " > ", kMaxSocketPath, " bytes); choose a shorter --data-dir"));
  }
  return absl::OkStatus();
}

absl::Status EmbeddedPostgres::ChooseRunAsUser() {
  // initdb and postgres refuse to run as root. Run them as the owner of an existing cluster if
  // that is an ordinary user, else as the configured system user.
  struct stat st;
  if (stat(pg_dir_.c_str(), &st) == 0 && st.st_uid != 0) {
    ASSIGN_OR_RETURN(RunAsUser owner, LookUpUid(st.st_uid));
    run_as_ = std::move(owner);
    return absl::OkStatus();
  }
  absl::StatusOr<RunAsUser> user = LookUpUser(options_.system_user);
  if (!user.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("running as root, PostgreSQL must run as an unprivileged user, but ",
                     user.status().message(), " (install postgresql-15, which creates it)"));
  }
  run_as_ = *std::move(user);
  if (stat(pg_dir_.c_str(), &st) == 0) {
    // A root-owned cluster directory (e.g. copied in by root): hand it over.
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(pg_dir_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      RETURN_IF_ERROR(ChownToRunAs(it->path().string()));
    }
    RETURN_IF_ERROR(ChownToRunAs(pg_dir_));
  }
  return absl::OkStatus();
}

absl::Status EmbeddedPostgres::MakeDataDirReachable() {
  // <data_dir> stays root's; the server user only needs to search it. Grant that through the
  // group so the directory does not become world-searchable.
  struct stat st;
  if (stat(data_dir_.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("data_dir: cannot stat ", data_dir_));
  }
  if (st.st_uid != run_as_->uid && (st.st_mode & S_IXOTH) == 0 &&
      !(st.st_gid == run_as_->gid && (st.st_mode & S_IXGRP) != 0)) {
    if (chown(data_dir_.c_str(), static_cast<uid_t>(-1), run_as_->gid) != 0 ||
        chmod(data_dir_.c_str(), (st.st_mode & 07777) | S_IXGRP) != 0) {
      return absl::FailedPreconditionError(absl::StrCat("data_dir: cannot make ", data_dir_,
                                                        " searchable by ", run_as_->name, ": ",
                                                        strerror(errno)));
    }
  }
  // Every ancestor must be searchable too; we do not change directories outside data_dir.
  ASSIGN_OR_RETURN(ProcessResult probe, RunProcess({"/usr/bin/test", "-x", data_dir_}, run_as_));
  if (probe.exit_code != 0) {
    std::string blocker = FirstUnsearchableAncestor(data_dir_, *run_as_);
    return absl::FailedPreconditionError(absl::StrCat(
        "data_dir: ", data_dir_, " is not reachable by system user ", run_as_->name,
        blocker.empty() ? "" : absl::StrCat(" (", blocker, " is not searchable by it)"),
        "; PostgreSQL cannot run as root, so choose a --data-dir whose parent directories are "
        "searchable by ",
        run_as_->name,
        " (e.g. under /var/lib or /tmp) or grant it search "
        "permission (chmod o+x on the blocking directory)"));
  }
  return absl::OkStatus();
}

absl::Status EmbeddedPostgres::InitDbIfNeeded() {
  std::error_code ec;
  if (fs::exists(pg_dir_ + "/PG_VERSION", ec)) return absl::OkStatus();
  if (fs::exists(pg_dir_, ec)) {
    if (!fs::is_empty(pg_dir_, ec)) {
      return absl::FailedPreconditionError(absl::StrCat(
          pg_dir_, " exists but is not a PostgreSQL cluster (no PG_VERSION); move it away"));
    }
    fs::remove(pg_dir_, ec);
  }
  // initdb into a scratch directory and rename it into place, so a crash during initdb never leaves
  // a half-initialised cluster at <data_dir>/pg.
  const std::string scratch = data_dir_ + "/pg.initdb";
  fs::remove_all(scratch, ec);
  RETURN_IF_ERROR(MakeDir(scratch, 0700));
  RETURN_IF_ERROR(ChownToRunAs(scratch));
  std::vector<std::string> argv = {options_.bin_dir + "/initdb",
                                   "-D",
                                   scratch,
                                   "-U",
                                   kSuperuser,
                                   "-A",
                                   "trust",
                                   "-E",
                                   "UTF8",
                                   "--locale=C.UTF-8",
                                   "--no-instructions"};
  if (!options_.durable) argv.push_back("--no-sync");
  LogInfo(absl::StrCat("initialising PostgreSQL cluster in ", pg_dir_));
  ASSIGN_OR_RETURN(ProcessResult initdb, Run(argv));
  if (initdb.exit_code != 0) {
    fs::remove_all(scratch, ec);
    return absl::FailedPreconditionError(absl::StrCat("initdb failed (exit ", initdb.exit_code,
                                                      "):\n", LastLines(initdb.output, 20)));
  }
  {
    std::ofstream conf(scratch + "/postgresql.conf", std::ios::app);
    conf << "\n# dpq: settings written by dpqd on every start\ninclude 'dpq.conf'\n";
    if (!conf)
      return absl::InternalError(absl::StrCat("cannot append to ", scratch, "/postgresql.conf"));
  }
  fs::rename(scratch, pg_dir_, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", scratch, " to ", pg_dir_, ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status EmbeddedPostgres::WriteConfig() {
  std::vector<std::pair<std::string, std::string>> settings = {
      {"listen_addresses", ""},
      {"unix_socket_directories", socket_dir_},
      {"port", absl::StrCat(kPort)},
      // 2-core target machines: parallel query slowed large scans, and JIT adds 80-190 ms to them
      // (measurements in TOOLCHAIN.md).
      {"max_parallel_workers_per_gather", "0"},
      {"jit", "off"},
      // The server log never holds a row value: ERROR lines (which may quote a value,
      // e.g. "invalid input syntax ... \"x\"") and the statements and contexts of errors are not
      // logged; start-up, shutdown, checkpoints and FATAL/PANIC still are. dpqd reports errors to
      // its callers itself.
      {"log_min_messages", "log"},
      {"log_min_error_statement", "panic"},
      {"log_error_verbosity", "terse"},
  };
  if (!options_.durable) {
    settings.push_back({"fsync", "off"});
    settings.push_back({"synchronous_commit", "off"});
    settings.push_back({"full_page_writes", "off"});
  }
  for (const auto& s : options_.settings) settings.push_back(s);
  std::string text = "# Written by dpqd on every start; edits are overwritten.\n";
  for (const auto& [name, value] : settings) {
    absl::StrAppend(&text, name, " = ", QuoteConfValue(value), "\n");
  }
  const std::string path = pg_dir_ + "/dpq.conf";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  chmod(tmp.c_str(), 0600);
  RETURN_IF_ERROR(ChownToRunAs(tmp));
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename ", tmp, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status EmbeddedPostgres::ClearStaleLock() {
  std::error_code ec;
  const std::string pg_real = fs::canonical(pg_dir_, ec).string();
  const std::string pid_file = pg_dir_ + "/postmaster.pid";
  const std::string socket_lock = absl::StrCat(socket_dir_, "/.s.PGSQL.", kPort, ".lock");
  switch (InspectLockFile(pid_file, pg_real)) {
    case LockOwner::kLiveOurs: {
      // dpqd died (or was killed) and left its postmaster running. Restart it so that this
      // process owns it and the current settings apply.
      LogWarning(absl::StrCat("a PostgreSQL server is still running in ", pg_dir_,
                              "; stopping it before starting again"));
      ASSIGN_OR_RETURN(ProcessResult stop,
                       Run({options_.bin_dir + "/pg_ctl", "stop", "-D", pg_dir_, "-m", "fast", "-w",
                            "-t", absl::StrCat(options_.timeout_seconds)}));
      if (stop.exit_code != 0) {
        return absl::FailedPreconditionError(
            absl::StrCat("a PostgreSQL server is already running in ", pg_dir_,
                         " and could not be stopped:\n", LastLines(stop.output, 10)));
      }
      break;
    }
    case LockOwner::kStale:
      LogWarning(absl::StrCat("removing stale ", pid_file, " (server not running)"));
      fs::remove(pid_file, ec);
      break;
    case LockOwner::kNone: break;
  }
  if (InspectLockFile(socket_lock, pg_real) == LockOwner::kStale) {
    fs::remove(socket_lock, ec);
    fs::remove(absl::StrCat(socket_dir_, "/.s.PGSQL.", kPort), ec);
  }
  return absl::OkStatus();
}

absl::Status EmbeddedPostgres::StartServer() {
  const auto deadline = std::chrono::steady_clock::now() + kStaleRetryWindow;
  for (int attempt = 1;; ++attempt) {
    RETURN_IF_ERROR(ClearStaleLock());
    const uintmax_t log_offset = FileSizeOrZero(log_file_);
    ASSIGN_OR_RETURN(ProcessResult start,
                     Run({options_.bin_dir + "/pg_ctl", "start", "-w", "-t",
                          absl::StrCat(options_.timeout_seconds), "-D", pg_dir_, "-l", log_file_}));
    if (start.exit_code == 0) {
      running_ = true;
      absl::StatusOr<pid_t> pid = postmaster_pid();
      postmaster_pid_ = pid.ok() ? *pid : 0;
      return absl::OkStatus();
    }
    std::string log = ReadFileOrEmpty(log_file_);
    log = log.size() > log_offset ? log.substr(log_offset) : "";
    // After a kill -9 of the postmaster its children notice the death and exit within moments;
    // until then they keep the old shared memory segment attached and postgres refuses to start.
    const bool transient =
        absl::StrContains(log, "pre-existing shared memory block") ||
        (absl::StrContains(log, "lock file") && absl::StrContains(log, "already exists"));
    if (transient && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200 * std::min(attempt, 5)));
      continue;
    }
    // pg_ctl -w gives up after the timeout but leaves a slow server starting; do not leak it.
    if (InspectLockFile(pg_dir_ + "/postmaster.pid", fs::canonical(pg_dir_).string()) ==
        LockOwner::kLiveOurs) {
      (void)Run({options_.bin_dir + "/pg_ctl", "stop", "-D", pg_dir_, "-m", "immediate", "-w"});
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "PostgreSQL failed to start in ", pg_dir_, " (pg_ctl exit ", start.exit_code, "): ",
        LastLines(start.output, 5), "\nserver log (", log_file_, "):\n", LastLines(log, 20)));
  }
}

absl::Status EmbeddedPostgres::CreateDatabaseIfMissing() {
  if (options_.database == "postgres") return absl::OkStatus();
  try {
    pqxx::connection conn(ConnectionUrlFor("postgres"));
    pqxx::nontransaction tx(conn);
    pqxx::result r =
        tx.exec_params("SELECT 1 FROM pg_database WHERE datname = $1", options_.database);
    if (!r.empty()) return absl::OkStatus();
    try {
      tx.exec(absl::StrCat("CREATE DATABASE ", tx.quote_name(options_.database)));
      LogInfo(absl::StrCat("created database ", options_.database));
    } catch (const pqxx::sql_error& e) {
      // 42P04 duplicate_database / 23505: another process created it between our check and here.
      if (e.sqlstate() != "42P04" && e.sqlstate() != "23505") throw;
    }
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return StatusFromPqxx(e, absl::StrCat("creating database \"", options_.database, "\""));
  }
}

absl::Status EmbeddedPostgres::Stop(PostgresStopMode mode) {
  if (!running_) return absl::OkStatus();
  std::error_code ec;
  const std::string pg_real = fs::canonical(pg_dir_, ec).string();
  absl::StatusOr<pid_t> pid = postmaster_pid();
  if (InspectLockFile(pg_dir_ + "/postmaster.pid", pg_real) != LockOwner::kLiveOurs || !pid.ok() ||
      (postmaster_pid_ != 0 && *pid != postmaster_pid_)) {
    // Killed behind our back (or a zombie), or replaced by a postmaster someone else started:
    // nothing of ours to stop; the next Start() cleans up.
    running_ = false;
    LogWarning(absl::StrCat("embedded PostgreSQL in ", pg_dir_, " was not running at shutdown"));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(ProcessResult stop,
                   Run({options_.bin_dir + "/pg_ctl", "stop", "-D", pg_dir_, "-m",
                        mode == PostgresStopMode::kFast ? "fast" : "immediate", "-w", "-t",
                        absl::StrCat(options_.timeout_seconds)}));
  if (stop.exit_code != 0) {
    return absl::FailedPreconditionError(absl::StrCat("pg_ctl stop failed in ", pg_dir_, " (exit ",
                                                      stop.exit_code,
                                                      "): ", LastLines(stop.output, 5)));
  }
  running_ = false;
  return absl::OkStatus();
}

}  // namespace dpq::store
